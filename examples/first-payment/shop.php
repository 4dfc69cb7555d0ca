<?php
// A tiny e-shop for the first payment, run with PHP's built-in server:
//   php -S 127.0.0.1:8000 examples/first-payment/shop.php
// /success and /failed are where customers come back to; /notify receives
// the bridge's legacy notifications (a GET with signed parameters) and
// /notifications lists what it received, for notifications.php.
require __DIR__ . '/lib.php';

$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
header('Content-Type: text/plain; charset=utf-8');

switch ($path) {
    case '/success':
    case '/failed':
        $ok = identity_signature_ok($_GET) ? 'signature ok' : 'signature DOES NOT VERIFY';
        $id = $_GET['paymentSessionId'] ?? '?';
        $how = $path === '/success' ? 'back from paying' : 'back without paying';
        echo "customer $how payment $id (order {$_GET['orderNumber']}), $ok\n";
        break;
    case '/notify':
        $entry = [
            'url' => $_SERVER['REQUEST_URI'],
            'query' => $_GET,
            'signature_ok' => identity_signature_ok($_GET),
        ];
        file_put_contents(NOTIFICATIONS_FILE, json_encode($entry) . "\n", FILE_APPEND | LOCK_EX);
        error_log('notification: ' . $_SERVER['REQUEST_URI']);
        echo "OK\n"; // any 2xx tells the bridge the notification arrived
        break;
    case '/notifications':
        header('Content-Type: application/json');
        $lines = @file(NOTIFICATIONS_FILE, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [];
        echo '[' . implode(',', $lines) . ']';
        break;
    default:
        http_response_code(404);
        echo "not found\n";
}
