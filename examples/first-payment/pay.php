<?php
// Step 2: the customer's side. Follows the pay-full-v2 link to the sandbox
// payment page, pays with the sandbox's test helper (what clicking "card,
// success" on the page does), then comes back the way the page sends the
// browser back: to the bridge's return URL, which redirects to the e-shop's
// success URL with signed parameters.
require __DIR__ . '/lib.php';

$p = last_payment();
$id = $p['id'];
$link = BRIDGE_URL . '/gw/pay-full-v2?' . http_build_query([
    'sessionInfo.targetGoId' => GOID,
    'sessionInfo.paymentSessionId' => $id,
    'sessionInfo.encryptedSignature' => sign([GOID, $id]),
]);

[$code, $h] = http('GET', $link);
if ($code !== 302 || empty($h['location'])) {
    fail("pay-full-v2: HTTP $code, expected a 302 to the payment page");
}
echo "pay-full-v2 redirects to the sandbox payment page: {$h['location']}\n";

[$code, , $body] = http('POST', SANDBOX_URL . "/sandbox/payments/$id/pay",
    json_encode(['outcome' => 'success', 'instrument' => 'PAYMENT_CARD']));
$paid = json_decode($body, true);
if ($code !== 200 || ($paid['state'] ?? '') !== 'PAID') {
    fail("sandbox pay helper: HTTP $code: $body");
}
echo "paid with the sandbox helper: payment $id is now state {$paid['state']}\n";

// The sandbox page appends the payment id to the return_url the bridge gave
// the gateway ({public}/callback/return?goid=G).
[$code, $h] = http('GET', BRIDGE_URL . '/callback/return?' . http_build_query(['goid' => GOID, 'id' => $id]));
if ($code !== 302 || empty($h['location'])) {
    fail("return: HTTP $code, expected a 302 to the e-shop");
}
echo "the bridge's return redirects to the e-shop: {$h['location']}\n";

[$code, , $body] = http('GET', $h['location']);
if ($code !== 200) {
    fail("e-shop success page: HTTP $code (is the e-shop running? php -S 127.0.0.1:8000 examples/first-payment/shop.php)");
}
echo "e-shop says: " . trim($body) . "\n";
