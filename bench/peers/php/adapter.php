<?php
// The PHP peer of the load harness (cmd/soapload): the adapter a competent
// PHP developer would put in front of the REST gateway for touch and
// paymentStatus, under php-fpm + nginx. ext/soap's SoapServer with the
// bridge's own WSDL, the OAuth2 token cached in APCu until shortly before
// it expires, the legacy Triple DES signature checked on the request and
// set on the reply, the same REST-to-legacy mapping as the bridge.
//
// Configured by FastCGI parameters (the harness's nginx.conf sets them per
// location): GATEWAY_URL (…/api), GOID, CLIENT_ID, CLIENT_SECRET,
// SECURE_KEY, WSDL.
// Unlike the bridge it keeps no session store, so productName (which the
// REST reply lacks) is sent empty.

function cfg(string $k): string
{
    return (string)($_SERVER[$k] ?? '');
}

const CHANNELS = [
    'PAYMENT_CARD' => 'eu_gp_u', 'GOPAY' => 'eu_gp_w', 'PAYSAFECARD' => 'eu_psc',
    'PAYPAL' => 'eu_paypal', 'SUPERCASH' => 'SUPERCASH', 'PRSMS' => 'eu_pr_sms', 'MPAYMENT' => 'cz_mp',
];
const BANKS = [
    'KOMBCZPP' => 'cz_kb', 'RZBCCZPP' => 'cz_rb', 'BREXCZPP' => 'cz_mb', 'FIOBCZPP' => 'cz_fb',
    'GIBACZPX' => 'cz_csas', 'UNCRSKBX' => 'sk_uni', 'GIBASKBX' => 'sk_sp', 'SUBASKBX' => 'sk_vubbank',
    'TATRSKBX' => 'sk_tatrabank', 'POBNSKBA' => 'sk_pabank',
];

function legacy_hash(array $fields): string
{
    return sha1(implode('|', $fields) . '|' . cfg('SECURE_KEY'));
}

function legacy_sign(array $fields): string
{
    $plain = legacy_hash($fields);
    $plain .= str_repeat("\0", (8 - strlen($plain) % 8) % 8);
    $raw = openssl_encrypt($plain, 'des-ede3', substr(cfg('SECURE_KEY'), 0, 24),
        OPENSSL_RAW_DATA | OPENSSL_ZERO_PADDING);
    return bin2hex($raw);
}

function legacy_verify(string $signature, array $fields): bool
{
    $raw = @hex2bin(trim($signature));
    if ($raw === false || $raw === '' || strlen($raw) % 8 !== 0) {
        return false;
    }
    $plain = openssl_decrypt($raw, 'des-ede3', substr(cfg('SECURE_KEY'), 0, 24),
        OPENSSL_RAW_DATA | OPENSSL_ZERO_PADDING);
    // Like the original service's trim(): zero, space or PKCS#5 padding.
    return $plain !== false && hash_equals(legacy_hash($fields), rtrim($plain, "\x00..\x20"));
}

function gateway(string $method, string $path, array $headers, ?string $body = null): array
{
    $ch = curl_init(cfg('GATEWAY_URL') . $path);
    curl_setopt_array($ch, [
        CURLOPT_CUSTOMREQUEST => $method,
        CURLOPT_HTTPHEADER => array_merge(['Accept: application/json'], $headers),
        CURLOPT_RETURNTRANSFER => true,
        CURLOPT_TIMEOUT => 30,
    ]);
    if ($body !== null) {
        curl_setopt($ch, CURLOPT_POSTFIELDS, $body);
    }
    $out = curl_exec($ch);
    $status = curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
    curl_close($ch);
    if ($out === false) {
        throw new SoapFault('Server', 'gateway unreachable');
    }
    return [$status, json_decode($out, true)];
}

function token(): string
{
    $key = 'gw-token-' . cfg('CLIENT_ID') . '@' . cfg('GATEWAY_URL');
    $t = apcu_fetch($key);
    if ($t !== false) {
        return $t;
    }
    [$status, $j] = gateway('POST', '/oauth2/token', [
        'Content-Type: application/x-www-form-urlencoded',
        'Authorization: Basic ' . base64_encode(cfg('CLIENT_ID') . ':' . cfg('CLIENT_SECRET')),
    ], http_build_query(['grant_type' => 'client_credentials', 'scope' => 'payment-all']));
    if ($status !== 200 || empty($j['access_token'])) {
        throw new SoapFault('Server', 'gateway refused the credentials');
    }
    $ttl = (int)($j['expires_in'] ?? 1800);
    apcu_store($key, $j['access_token'], max(1, $ttl - min(60, intdiv($ttl, 10))));
    return $j['access_token'];
}

class EPaymentServiceV2
{
    public function touch()
    {
        return 'OK';
    }

    public function paymentStatus($info)
    {
        $goid = (string)($info->targetGoId ?? '');
        $id = (string)($info->paymentSessionId ?? '');
        if ($goid !== cfg('GOID')) {
            return self::failed($goid, $id, 'unknown targetGoId');
        }
        if (!legacy_verify((string)($info->encryptedSignature ?? ''), [$goid, $id])) {
            return self::failed($goid, $id, 'invalid encryptedSignature of paymentSessionInfo');
        }
        [$status, $p] = gateway('GET', '/payments/payment/' . rawurlencode($id), ['Authorization: Bearer ' . token()]);
        if ($status !== 200 || !is_array($p)) {
            return self::failed($goid, $id, 'gateway refused: ' . ($p['errors'][0]['message'] ?? "HTTP $status"));
        }
        $s = (object)[
            'currency' => $p['currency'] ?? null,
            'orderNumber' => $p['order_number'] ?? null,
            'parentPaymentSessionId' => $p['parent_id'] ?? null,
            'paymentChannel' => null,
            'paymentSessionId' => $p['id'],
            'preAuthorization' => !empty($p['preauthorization']['requested']),
            'productName' => null,
            'recurrentPayment' => isset($p['recurrence']),
            'result' => 'CALL_COMPLETED',
            'resultDescription' => null,
            'sessionState' => $p['state'] ?? null,
            'sessionSubState' => isset($p['sub_state']) ? ltrim($p['sub_state'], '_') : null,
            'sessionSubStateDesc' => null,
            'targetGoId' => $p['target']['goid'] ?? $goid,
        ];
        foreach ($p['additional_params'] ?? [] as $ap) {
            if (preg_match('/^p[1-4]$/', $ap['name'])) {
                $s->{$ap['name']} = $ap['value'];
            }
        }
        $s->totalPrice = $p['amount'] ?? null;
        $instrument = $p['payment_instrument'] ?? '';
        if ($instrument === 'BANK_ACCOUNT') {
            $s->paymentChannel = BANKS[strtoupper($p['payer']['bank_account']['bic'] ?? '')] ?? 'eu_bank';
        } elseif ($instrument !== '') {
            $s->paymentChannel = CHANNELS[$instrument] ?? null;
        }
        $s->encryptedSignature = legacy_sign([
            $s->targetGoId, (string)$s->productName, (string)$s->totalPrice, (string)$s->currency,
            trim((string)$s->orderNumber), $s->recurrentPayment ? '1' : '0', (string)$s->parentPaymentSessionId,
            $s->preAuthorization ? '1' : '0', $s->result, (string)$s->sessionState,
            (string)$s->sessionSubState, (string)$s->paymentChannel,
        ]);
        return $s;
    }

    private static function failed(string $goid, string $id, string $why)
    {
        $s = (object)['result' => 'CALL_FAILED', 'resultDescription' => $why,
            'targetGoId' => $goid, 'paymentSessionId' => $id];
        if ($goid === cfg('GOID')) {
            $s->encryptedSignature = legacy_sign([$goid, '', '', '', '', '', '', '', 'CALL_FAILED', '', '', '']);
        }
        return $s;
    }
}

ini_set('soap.wsdl_cache_enabled', '1');
$server = new SoapServer(cfg('WSDL'), ['cache_wsdl' => WSDL_CACHE_DISK]);
$server->setClass('EPaymentServiceV2');
$server->handle();
