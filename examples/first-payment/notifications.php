<?php
// Step 3: waits (up to 30 s) until the e-shop has received the bridge's
// legacy notification of the last payment, and prints it. The bridge sends
// it from its outbox shortly after the gateway notified the bridge.
require __DIR__ . '/lib.php';

$id = last_payment()['id'];
$deadline = microtime(true) + 30;
do {
    [$code, , $body] = http('GET', SHOP_URL . '/notifications');
    if ($code !== 200) {
        fail("e-shop /notifications: HTTP $code");
    }
    foreach (json_decode($body, true) ?? [] as $n) {
        if (($n['query']['paymentSessionId'] ?? '') === $id) {
            $sig = $n['signature_ok'] ? 'signature ok' : 'SIGNATURE DOES NOT VERIFY';
            echo "notification of payment $id received by the e-shop, $sig: {$n['url']}\n";
            exit($n['signature_ok'] ? 0 : 1);
        }
    }
    usleep(250000);
} while (microtime(true) < $deadline);
fail("no notification of payment $id reached the e-shop within 30 s (was the bridge started with SOAPBRIDGE_NOTIFICATION_URL?)");
