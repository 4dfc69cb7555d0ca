<?php
// Shared by the first-payment scripts: where the bridge, the sandbox and the
// e-shop are, and the legacy encryptedSignature scheme as an e-shop computes
// it (see docs/signatures.md). Every setting has a default that matches
// `make run`; the environment overrides it.

declare(strict_types=1);
error_reporting(E_ALL);

function setting(string $name, string $default): string
{
    $v = getenv($name);
    return ($v === false || $v === '') ? $default : $v;
}

define('BRIDGE_URL', rtrim(setting('BRIDGE_URL', 'http://localhost:8080'), '/'));
define('SANDBOX_URL', rtrim(setting('SANDBOX_URL', 'http://127.0.0.1:8090'), '/'));
define('SHOP_URL', rtrim(setting('SHOP_URL', 'http://127.0.0.1:8000'), '/'));
// The embedded sandbox's demo merchant (public demo values).
define('GOID', setting('GOID', '8123456789'));
define('SECURE_KEY', setting('SECURE_KEY', 'DemoSecureKey-0123456789'));
// Where the steps leave the payment id for the next step and the e-shop
// keeps the notifications it received.
define('STATE_FILE', sys_get_temp_dir() . '/soapbridge-first-payment.json');
define('NOTIFICATIONS_FILE', sys_get_temp_dir() . '/soapbridge-first-payment-notifications.jsonl');

function fail(string $msg): void
{
    fwrite(STDERR, $msg . "\n");
    exit(1);
}

// One signed field as the legacy library wrote it: booleans 1/0, absent empty.
function field($v, bool $trim = false): string
{
    if ($v === null) {
        return '';
    }
    if (is_bool($v)) {
        return $v ? '1' : '0';
    }
    return $trim ? trim((string) $v) : (string) $v;
}

// encryptedSignature: hex of 3DES-EDE-ECB (key: first 24 bytes of the secure
// key) of the SHA-1 hex of the fields and the key joined with '|'. The digest
// is 40 bytes, a whole number of 8-byte blocks, so no padding is involved.
function sign(array $fields): string
{
    $fields[] = SECURE_KEY;
    $digest = sha1(implode('|', $fields));
    $c = openssl_encrypt($digest, 'des-ede3', substr(SECURE_KEY, 0, 24), OPENSSL_RAW_DATA | OPENSSL_ZERO_PADDING);
    if ($c === false) {
        fail('openssl_encrypt: ' . openssl_error_string());
    }
    return bin2hex($c);
}

// ECB without padding is deterministic: signing the same fields again and
// comparing is the check.
function signature_ok(array $fields, $signature): bool
{
    return is_string($signature) && hash_equals(sign($fields), strtolower($signature));
}

// Field order of an EPaymentStatus reply's signature.
function status_signature_ok($s): bool
{
    return signature_ok([
        field($s->targetGoId ?? null),
        field($s->productName ?? null, true),
        field($s->totalPrice ?? null),
        field($s->currency ?? null),
        field($s->orderNumber ?? null, true),
        field($s->recurrentPayment ?? null),
        field($s->parentPaymentSessionId ?? null),
        field($s->preAuthorization ?? null),
        field($s->result ?? null),
        field($s->sessionState ?? null),
        field($s->sessionSubState ?? null),
        field($s->paymentChannel ?? null),
    ], $s->encryptedSignature ?? null);
}

// Field order of the parameters of a return redirect or a notification.
function identity_signature_ok(array $q): bool
{
    return signature_ok([
        field($q['targetGoId'] ?? null),
        field($q['paymentSessionId'] ?? null),
        field($q['parentPaymentSessionId'] ?? null),
        field($q['orderNumber'] ?? null, true),
    ], $q['encryptedSignature'] ?? null);
}

function soap_client(): SoapClient
{
    return new SoapClient(BRIDGE_URL . '/axis/EPaymentServiceV2?wsdl', [
        'cache_wsdl' => WSDL_CACHE_NONE,
        'exceptions' => true,
        'connection_timeout' => 10,
    ]);
}

// The payment the last create.php made.
function last_payment(): array
{
    $raw = @file_get_contents(STATE_FILE);
    if ($raw === false) {
        fail('no payment yet: run create.php first');
    }
    return json_decode($raw, true, 512, JSON_THROW_ON_ERROR);
}

// One HTTP request without following redirects: [status, headers, body].
function http(string $method, string $url, ?string $json = null, string $type = 'application/json'): array
{
    $opts = ['method' => $method, 'follow_location' => 0, 'ignore_errors' => true, 'timeout' => 15];
    if ($json !== null) {
        $opts['header'] = "Content-Type: $type\r\n";
        $opts['content'] = $json;
    }
    $body = @file_get_contents($url, false, stream_context_create(['http' => $opts]));
    if ($body === false) {
        fail("$method $url: no answer (is it running?)");
    }
    $status = 0;
    $headers = [];
    foreach ($http_response_header as $h) {
        if (preg_match('#^HTTP/\S+ (\d{3})#', $h, $m)) {
            $status = (int) $m[1];
            $headers = [];
        } elseif (str_contains($h, ':')) {
            [$k, $v] = explode(':', $h, 2);
            $headers[strtolower(trim($k))] = trim($v);
        }
    }
    return [$status, $headers, $body];
}
