<?php
// What a legacy PHP e-shop did around ext/soap: sign requests and verify
// signed replies with the EPaymentServiceV2 scheme (SHA-1 hex of the joined
// fields, 3DES-EDE in ECB mode, key = first 24 bytes of the secure key).
// Written independently of the Go code on purpose: it is the client's view.
//
// Environment: BRIDGE_WSDL_URL (URL or file), BRIDGE_LOCATION (optional
// endpoint overriding the WSDL's address), SANDBOX_URL, GOID, SECURE_KEY.

error_reporting(E_ALL);

// fact records one string fact for the Go test in the script's $facts
// (booleans as "true"/"false"); the script prints them as one JSON object.
function fact(string $k, $v): void
{
    global $facts;
    $facts[$k] = is_bool($v) ? ($v ? 'true' : 'false') : (string) $v;
}

function env_or_die(string $name): string
{
    $v = getenv($name);
    if ($v === false || $v === '') {
        fwrite(STDERR, "missing environment variable $name\n");
        exit(2);
    }
    return $v;
}

// A field as the legacy library joined it: booleans 1/0, absent empty.
function legacy_field($v, bool $trim = false): string
{
    if ($v === null) {
        return '';
    }
    if ($v === true) {
        return '1';
    }
    if ($v === false) {
        return '0';
    }
    $s = (string) $v;
    return $trim ? trim($s, " \t\r\n\0\x0B") : $s;
}

function legacy_hash(array $fields, string $key): string
{
    $fields[] = $key;
    return sha1(implode('|', $fields));
}

function legacy_cipher_key(string $key): string
{
    return substr($key, 0, 24);
}

function legacy_sign(array $fields, string $key): string
{
    $plain = legacy_hash($fields, $key); // 40 chars: a multiple of 8, no padding needed
    $c = openssl_encrypt($plain, 'des-ede3', legacy_cipher_key($key), OPENSSL_RAW_DATA | OPENSSL_ZERO_PADDING);
    if ($c === false) {
        throw new RuntimeException('openssl_encrypt: ' . openssl_error_string());
    }
    return bin2hex($c);
}

// 'ok', 'missing' or 'bad': the check a legacy client made on a reply.
function legacy_verify(array $fields, string $key, $signature): string
{
    if ($signature === null || $signature === '') {
        return 'missing';
    }
    $raw = @hex2bin((string) $signature);
    if ($raw === false || strlen($raw) % 8 !== 0) {
        return 'bad';
    }
    $plain = openssl_decrypt($raw, 'des-ede3', legacy_cipher_key($key), OPENSSL_RAW_DATA | OPENSSL_ZERO_PADDING);
    if ($plain === false) {
        return 'bad';
    }
    $plain = rtrim($plain, "\0");
    $plain = trim($plain);
    return hash_equals(legacy_hash($fields, $key), $plain) ? 'ok' : 'bad';
}

// Field orders of the scheme (legacy-protocol.md).

function sign_payment_command(array $c, string $key): string
{
    return legacy_sign([
        legacy_field($c['targetGoId']),
        legacy_field($c['productName'] ?? null, true),
        legacy_field($c['totalPrice']),
        legacy_field($c['currency'] ?? null, true),
        legacy_field($c['orderNumber'] ?? null, true),
        legacy_field($c['failedURL'] ?? null, true),
        legacy_field($c['successURL'] ?? null, true),
        legacy_field($c['preAuthorization'] ?? null),
        legacy_field($c['recurrentPayment'] ?? null),
        legacy_field($c['recurrenceDateTo'] ?? null, true),
        legacy_field($c['recurrenceCycle'] ?? null, true),
        legacy_field($c['recurrencePeriod'] ?? null, true),
        legacy_field($c['paymentChannels'] ?? null, true),
    ], $key);
}

function sign_payment_session($goid, $id, string $key): string
{
    return legacy_sign([legacy_field($goid), legacy_field($id)], $key);
}

function sign_recurrence_request(array $r, string $key): string
{
    return legacy_sign([
        legacy_field($r['parentPaymentSessionId']),
        legacy_field($r['targetGoId']),
        legacy_field($r['orderNumber']),
        legacy_field($r['totalPrice']),
    ], $key);
}

function sign_refund_request(array $r, string $key): string
{
    return legacy_sign([
        legacy_field($r['targetGoId']),
        legacy_field($r['paymentSessionId']),
        legacy_field($r['amount']),
        legacy_field($r['currency']),
        legacy_field($r['description']),
    ], $key);
}

function verify_payment_status($s, string $key): string
{
    return legacy_verify([
        legacy_field($s->targetGoId ?? null),
        legacy_field($s->productName ?? null, true),
        legacy_field($s->totalPrice ?? null),
        legacy_field($s->currency ?? null),
        legacy_field($s->orderNumber ?? null, true),
        legacy_field($s->recurrentPayment ?? null),
        legacy_field($s->parentPaymentSessionId ?? null),
        legacy_field($s->preAuthorization ?? null),
        legacy_field($s->result ?? null),
        legacy_field($s->sessionState ?? null),
        legacy_field($s->sessionSubState ?? null),
        legacy_field($s->paymentChannel ?? null),
    ], $key, $s->encryptedSignature ?? null);
}

function verify_payment_result($r, string $key): string
{
    return legacy_verify([
        legacy_field($r->paymentSessionId ?? null),
        legacy_field($r->result ?? null, true),
    ], $key, $r->encryptedSignature ?? null);
}

function new_client(): SoapClient
{
    $opts = [
        'trace' => 1,
        'exceptions' => true,
        'cache_wsdl' => WSDL_CACHE_NONE,
        'connection_timeout' => 10,
    ];
    $location = getenv('BRIDGE_LOCATION');
    if ($location !== false && $location !== '') {
        $opts['location'] = $location;
    }
    return new SoapClient(env_or_die('BRIDGE_WSDL_URL'), $opts);
}

// POST to a JSON test helper of the sandbox gateway; returns the HTTP status.
function sandbox_post(string $path, array $body): int
{
    $ctx = stream_context_create(['http' => [
        'method' => 'POST',
        'header' => "Content-Type: application/json\r\n",
        'content' => json_encode($body),
        'ignore_errors' => true,
        'timeout' => 10,
    ]]);
    $url = rtrim(env_or_die('SANDBOX_URL'), '/') . $path;
    $resp = file_get_contents($url, false, $ctx);
    $code = 0;
    foreach ($http_response_header ?? [] as $h) {
        if (preg_match('#^HTTP/\S+ (\d{3})#', $h, $m)) {
            $code = (int) $m[1];
        }
    }
    if ($code !== 200) {
        fwrite(STDERR, "sandbox POST $url: HTTP $code: $resp\n");
    }
    return $code;
}
