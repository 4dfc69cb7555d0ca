<?php
// A PHP SoapClient shop configured years ago, for the usage record's
// end-to-end test: its channel list still names Volksbank's button (cz_vb,
// a bank that no longer exists) beside the card, and it passes its own
// order reference in p1. No customer data, no lang.
// Usage: php usage.php. Prints one JSON object of string facts.
require __DIR__ . '/legacy.php';

$GOID = (int) env_or_die('GOID');
$KEY = env_or_die('SECURE_KEY');

$cmd = [
    'targetGoId' => $GOID,
    'productName' => 'Předplatné 2009',
    'totalPrice' => 4900,
    'currency' => 'CZK',
    'orderNumber' => 'old-' . bin2hex(random_bytes(6)),
    'failedURL' => 'https://eshop.example/failed',
    'successURL' => 'https://eshop.example/success',
    'preAuthorization' => false,
    'recurrentPayment' => false,
    'paymentChannels' => 'cz_vb,eu_gp_u',
    'defaultPaymentChannel' => 'eu_gp_u',
    'p1' => 'ref-2009',
];
$cmd['encryptedSignature'] = sign_payment_command($cmd, $KEY);
$c = new_client();
try {
    $s = $c->createPayment($cmd);
} catch (SoapFault $f) {
    fwrite(STDERR, "SoapFault {$f->faultcode}: {$f->getMessage()}\n");
    exit(1);
}
echo json_encode([
    'create.result' => (string) ($s->result ?? ''),
    'create.resultDescription' => (string) ($s->resultDescription ?? ''),
    'create.sig' => verify_payment_status($s, $KEY),
], JSON_UNESCAPED_UNICODE), "\n";
