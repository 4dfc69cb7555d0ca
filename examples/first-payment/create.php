<?php
// Step 1: the e-shop creates a payment over SOAP (createPayment) with PHP's
// SoapClient, exactly as it did against the retired service, and prints the
// pay-full-v2 link it sends its customer to.
require __DIR__ . '/lib.php';

$command = [
    'targetGoId' => (int) GOID,
    'productName' => 'First payment through soapbridge',
    'totalPrice' => 12900, // in hundredths: 129.00 CZK
    'currency' => 'CZK',
    'orderNumber' => 'first-' . date('YmdHis'),
    'successURL' => SHOP_URL . '/success',
    'failedURL' => SHOP_URL . '/failed',
    'preAuthorization' => false,
    'recurrentPayment' => false,
    'paymentChannels' => 'eu_gp_u,cz_kb',
    'defaultPaymentChannel' => 'eu_gp_u',
    'lang' => 'EN',
];
$command['encryptedSignature'] = sign([
    field($command['targetGoId']),
    field($command['productName'], true),
    field($command['totalPrice']),
    field($command['currency'], true),
    field($command['orderNumber'], true),
    field($command['failedURL'], true),
    field($command['successURL'], true),
    field($command['preAuthorization']),
    field($command['recurrentPayment']),
    '', '', '', // recurrenceDateTo, recurrenceCycle, recurrencePeriod: not a recurring payment
    field($command['paymentChannels'], true),
]);

try {
    $status = soap_client()->createPayment($command);
} catch (SoapFault $f) {
    fail("createPayment: SOAP fault {$f->faultcode}: {$f->getMessage()}");
}
if ($status->result !== 'CALL_COMPLETED') {
    fail("createPayment: {$status->result}: " . ($status->resultDescription ?? ''));
}
if (!status_signature_ok($status)) {
    fail('createPayment: the reply signature does not verify');
}
$id = (string) $status->paymentSessionId;
file_put_contents(STATE_FILE, json_encode(['id' => $id, 'orderNumber' => $command['orderNumber']]));

$link = BRIDGE_URL . '/gw/pay-full-v2?' . http_build_query([
    'sessionInfo.targetGoId' => GOID,
    'sessionInfo.paymentSessionId' => $id,
    'sessionInfo.encryptedSignature' => sign([GOID, $id]),
]);
echo "created payment $id: {$status->sessionState}, reply signature ok\n";
echo "customer's payment link (open it in a browser, or run pay.php):\n$link\n";
