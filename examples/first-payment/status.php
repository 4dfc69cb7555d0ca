<?php
// Step 4: the e-shop reads the payment's state over SOAP (paymentStatus), as
// it does on a notification, and checks the reply's signature.
require __DIR__ . '/lib.php';

$id = last_payment()['id'];
try {
    $s = soap_client()->paymentStatus([
        'targetGoId' => (int) GOID,
        'paymentSessionId' => (int) $id,
        'encryptedSignature' => sign([GOID, $id]),
    ]);
} catch (SoapFault $f) {
    fail("paymentStatus: SOAP fault {$f->faultcode}: {$f->getMessage()}");
}
if ($s->result !== 'CALL_COMPLETED') {
    fail("paymentStatus: {$s->result}: " . ($s->resultDescription ?? ''));
}
$sig = status_signature_ok($s) ? 'signature ok' : 'SIGNATURE DOES NOT VERIFY';
printf("payment %s: sessionState %s, paymentChannel %s, totalPrice %s %s, %s\n",
    $s->paymentSessionId, $s->sessionState, $s->paymentChannel ?? '-', $s->totalPrice, $s->currency, $sig);
exit(status_signature_ok($s) ? 0 : 1);
