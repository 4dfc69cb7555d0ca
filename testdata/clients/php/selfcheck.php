<?php
// Checks this client's signing code against the vectors the legacy client
// library produced (php selfcheck.php signature-vectors.json), so that a
// failing scenario points at the bridge, not at the test client.
require __DIR__ . '/legacy.php';

$vectors = json_decode(file_get_contents($argv[1]), true, 512, JSON_THROW_ON_ERROR);
$fail = 0;
foreach ($vectors as $i => $v) {
    $f = $v['fields'];
    $k = $v['secureKey'];
    switch ($v['kind']) {
        case 'paymentCommand':
            $got = sign_payment_command($f, $k);
            break;
        case 'paymentSession':
            $got = sign_payment_session($f['targetGoId'], $f['paymentSessionId'], $k);
            break;
        case 'recurrenceRequest':
            $got = sign_recurrence_request($f, $k);
            break;
        case 'refundRequest':
            $got = sign_refund_request($f, $k);
            break;
        case 'paymentStatus':
            $got = verify_payment_status((object) ($f + ['encryptedSignature' => $v['encryptedSignature']]), $k) === 'ok'
                ? $v['encryptedSignature'] : 'verify failed';
            break;
        case 'paymentResult':
            $got = verify_payment_result((object) ($f + ['encryptedSignature' => $v['encryptedSignature']]), $k) === 'ok'
                ? $v['encryptedSignature'] : 'verify failed';
            break;
        default:
            $got = legacy_sign(explode('|', substr($v['concatenated'], 0, -strlen($k) - 1)), $k);
    }
    if ($got !== $v['encryptedSignature']) {
        $fail++;
        fwrite(STDERR, "vector $i ({$v['kind']}): got $got, want {$v['encryptedSignature']}\n");
    }
}
echo json_encode(['vectors' => (string) count($vectors), 'failed' => (string) $fail]), "\n";
exit($fail ? 1 : 0);
