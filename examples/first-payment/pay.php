<?php
// Step 2: the customer's side. Follows the pay-full-v2 link to the sandbox
// payment page, pays there (the form "card, success" posts), then comes
// back the way the page sends the browser back: to the bridge's return URL,
// which redirects to the e-shop's success URL with signed parameters.
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

// Pay on the page as the customer does (card, success): the page posts its
// form and sends the browser back to the return_url the bridge gave the
// gateway ({public}/callback/return?goid=G&token=T, T the payment's random
// return token) with the payment id appended.
$page = $h['location'];
[$code, $h] = http('POST', $page, http_build_query([
    'sandbox_action' => 'pay', 'outcome' => 'success', 'instrument' => 'PAYMENT_CARD',
]), 'application/x-www-form-urlencoded');
if ($code !== 303 || empty($h['location'])) {
    fail("payment page: HTTP $code, expected a 303 back to the bridge");
}
echo "paid on the sandbox payment page (card, success): payment $id is now state PAID; the page sends the customer back to the bridge\n";

[$code, $h] = http('GET', $h['location']);
if ($code !== 302 || empty($h['location'])) {
    fail("return: HTTP $code, expected a 302 to the e-shop");
}
echo "the bridge's return redirects to the e-shop: {$h['location']}\n";

[$code, , $body] = http('GET', $h['location']);
if ($code !== 200) {
    fail("e-shop success page: HTTP $code (is the e-shop running? php -S 127.0.0.1:8000 examples/first-payment/shop.php)");
}
echo "e-shop says: " . trim($body) . "\n";
