<?php
// One money-moving call through PHP SoapClient, as a legacy e-shop makes it
// (and repeats it after a fault). Usage:
//   php money_call.php capturePayment|voidAuthorization|refundPayment <id>
//   php money_call.php partiallyRefundPayment <id> <amount> <description>
// Prints one JSON object: result, resultDescription, sig (the reply's
// signature checked with the e-shop's key) or fault (a SOAP fault's text).
require __DIR__ . '/legacy.php';

$GOID = (int) env_or_die('GOID');
$KEY = env_or_die('SECURE_KEY');
[$op, $id] = [$argv[1], $argv[2]];
$facts = [];
try {
    $c = new_client();
    if ($op === 'partiallyRefundPayment') {
        $rr = ['targetGoId' => $GOID, 'paymentSessionId' => $id, 'amount' => (int) $argv[3],
            'currency' => 'CZK', 'description' => $argv[4]];
        $rr['encryptedSignature'] = sign_refund_request($rr, $KEY);
        $r = $c->partiallyRefundPayment($rr);
    } else {
        $info = ['targetGoId' => $GOID, 'paymentSessionId' => $id,
            'encryptedSignature' => sign_payment_session($GOID, $id, $KEY)];
        $r = $c->$op($info);
    }
    $facts['result'] = (string) ($r->result ?? '');
    $facts['resultDescription'] = (string) ($r->resultDescription ?? '');
    $facts['sig'] = verify_payment_result($r, $KEY);
} catch (SoapFault $f) {
    $facts['fault'] = $f->faultcode . ': ' . $f->getMessage();
}
echo json_encode($facts, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES), "\n";
