<?php
// A PHP SoapClient e-shop configured years before the last published channel
// list: its paymentChannels hold codes of earlier years only.
// Usage: php old_shop.php <historic|gone>
//   historic: cz_ge,cz_vb,cz_sms; the customer pays by the Moneta (formerly
//             GE Money Bank) button;
//   gone:     eu_mb_w only (Moneybookers wallet, offered no more); the
//             customer pays by card.
// Prints one JSON object of string facts for the Go test.
require __DIR__ . '/legacy.php';

$GOID = (int) env_or_die('GOID');
$KEY = env_or_die('SECURE_KEY');
$facts = [];

function status_facts(string $p, $s): void
{
    global $KEY;
    fact("$p.result", $s->result ?? '');
    fact("$p.resultDescription", $s->resultDescription ?? '');
    fact("$p.state", $s->sessionState ?? '');
    fact("$p.id", $s->paymentSessionId ?? '');
    fact("$p.paymentChannel", $s->paymentChannel ?? '');
    fact("$p.sig", verify_payment_status($s, $KEY));
}

$scenarios = [
    'historic' => ['cz_ge,cz_vb,cz_sms', 'cz_ge', ['outcome' => 'success', 'instrument' => 'BANK_ACCOUNT', 'swift' => 'AGBACZPP']],
    'gone' => ['eu_mb_w', '', ['outcome' => 'success', 'instrument' => 'PAYMENT_CARD']],
];
$scenario = $argv[1] ?? '';
if (!isset($scenarios[$scenario])) {
    fwrite(STDERR, "usage: php old_shop.php <historic|gone>\n");
    exit(2);
}
[$channels, $default, $pay] = $scenarios[$scenario];

$c = new_client();
$cmd = [
    'targetGoId' => $GOID, 'productName' => 'Zimní bunda', 'totalPrice' => 249000, 'currency' => 'CZK',
    'orderNumber' => 'old-' . bin2hex(random_bytes(5)),
    'failedURL' => 'https://eshop.example/failed', 'successURL' => 'https://eshop.example/success',
    'preAuthorization' => false, 'recurrentPayment' => false,
    'paymentChannels' => $channels, 'defaultPaymentChannel' => $default, 'lang' => 'CS',
];
$cmd['encryptedSignature'] = sign_payment_command($cmd, $KEY);
$s = $c->createPayment($cmd);
status_facts('create', $s);
fact('pay.http', sandbox_post('/sandbox/payments/' . $s->paymentSessionId . '/pay', $pay));
$st = $c->paymentStatus([
    'targetGoId' => $GOID, 'paymentSessionId' => $s->paymentSessionId,
    'encryptedSignature' => sign_payment_session($GOID, $s->paymentSessionId, $KEY),
]);
status_facts('status', $st);
echo json_encode($facts, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES), "\n";
