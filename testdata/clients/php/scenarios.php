<?php
// Legacy e-shop scenarios run through PHP SoapClient against the bridge.
// Usage: php scenarios.php <scenario> [args...]
// Prints one JSON object of string facts ("create.result": "CALL_COMPLETED",
// "create.sig": "ok", ...) that the Go test asserts on. A SOAP fault ends the
// script with exit code 1 and the fault on stderr.
require __DIR__ . '/legacy.php';

$GOID = (int) env_or_die('GOID');
$KEY = env_or_die('SECURE_KEY');
$facts = [];

function new_command(array $over = []): array
{
    global $GOID;
    $c = array_merge([
        'targetGoId' => $GOID,
        'productName' => 'Objednávka č. 42 – žluťoučký kůň',
        'totalPrice' => 12900,
        'currency' => 'CZK',
        'orderNumber' => 'php-' . bin2hex(random_bytes(6)),
        'failedURL' => 'https://eshop.example/failed',
        'successURL' => 'https://eshop.example/success',
        'preAuthorization' => false,
        'recurrentPayment' => false,
        'paymentChannels' => 'eu_gp_u,cz_kb',
        'defaultPaymentChannel' => 'eu_gp_u',
        'lang' => 'CS',
        'customerData' => [
            'firstName' => 'Jan', 'lastName' => 'Novák', 'email' => 'jan@example.cz',
            'city' => 'Praha', 'street' => 'Dlouhá 1', 'postalCode' => '11000',
            'countryCode' => 'CZE', 'phoneNumber' => '+420777123456',
        ],
    ], $over);
    return $c;
}

// What the legacy library checked on an EPaymentStatus besides the signature.
function status_facts(string $p, $s, ?array $cmd = null): void
{
    global $KEY;
    fact("$p.result", $s->result ?? '');
    fact("$p.resultDescription", $s->resultDescription ?? '');
    fact("$p.state", $s->sessionState ?? '');
    fact("$p.subState", $s->sessionSubState ?? '');
    fact("$p.id", $s->paymentSessionId ?? '');
    fact("$p.parent", $s->parentPaymentSessionId ?? '');
    fact("$p.productName", $s->productName ?? '');
    fact("$p.paymentChannel", $s->paymentChannel ?? '');
    fact("$p.sig", verify_payment_status($s, $KEY));
    if ($cmd !== null) {
        $diff = [];
        foreach (['orderNumber', 'productName', 'targetGoId', 'totalPrice', 'currency'] as $f) {
            if ((string) ($s->$f ?? '') !== (string) $cmd[$f]) {
                $diff[] = $f;
            }
        }
        fact("$p.matches", $diff ? 'differs: ' . implode(',', $diff) : 'ok');
    }
}

function result_facts(string $p, $r): void
{
    global $KEY;
    fact("$p.result", $r->result ?? '');
    fact("$p.resultDescription", $r->resultDescription ?? '');
    fact("$p.id", $r->paymentSessionId ?? '');
    fact("$p.sig", verify_payment_result($r, $KEY));
}

function session_info($id, ?int $goid = null, ?string $sig = null): array
{
    global $GOID, $KEY;
    $goid = $goid ?? $GOID;
    return [
        'targetGoId' => $goid,
        'paymentSessionId' => $id,
        'encryptedSignature' => $sig ?? sign_payment_session($goid, $id, $KEY),
    ];
}

function create(SoapClient $c, array $cmd, string $p = 'create')
{
    global $KEY;
    $cmd['encryptedSignature'] = sign_payment_command($cmd, $KEY);
    $s = $c->createPayment($cmd);
    status_facts($p, $s, $cmd);
    return $s;
}

function pay($id, string $instrument = 'PAYMENT_CARD', string $p = 'pay'): void
{
    fact("$p.http", sandbox_post("/sandbox/payments/$id/pay", ['outcome' => 'success', 'instrument' => $instrument]));
}

function status(SoapClient $c, $id, string $p = 'status', ?array $cmd = null)
{
    $s = $c->paymentStatus(session_info($id));
    status_facts($p, $s, $cmd);
    return $s;
}

function create_and_pay(SoapClient $c, array $cmd)
{
    $s = create($c, $cmd);
    pay($s->paymentSessionId);
    return $s;
}

$scenario = $argv[1] ?? '';
$c = new_client();
try {
    switch ($scenario) {
        case 'card_paid':
            $cmd = new_command();
            $s = create_and_pay($c, $cmd);
            status($c, $s->paymentSessionId, 'status', $cmd);
            break;

        case 'preauth_capture':
        case 'preauth_void':
            $cmd = new_command(['preAuthorization' => true, 'totalPrice' => 5000, 'productName' => 'Hold']);
            $s = create_and_pay($c, $cmd);
            status($c, $s->paymentSessionId, 'authorized', $cmd);
            $info = session_info($s->paymentSessionId);
            $r = $scenario === 'preauth_capture' ? $c->capturePayment($info) : $c->voidAuthorization($info);
            result_facts('op', $r);
            status($c, $s->paymentSessionId, 'status', $cmd);
            break;

        case 'refund_whole':
            $cmd = new_command();
            $s = create_and_pay($c, $cmd);
            result_facts('op', $c->refundPayment(session_info($s->paymentSessionId)));
            status($c, $s->paymentSessionId, 'status', $cmd);
            break;

        case 'refund_partial':
            $cmd = new_command();
            $s = create_and_pay($c, $cmd);
            $rr = [
                'targetGoId' => $GOID, 'paymentSessionId' => $s->paymentSessionId,
                'amount' => 5000, 'currency' => 'CZK', 'description' => 'vrácení části',
            ];
            $rr['encryptedSignature'] = sign_refund_request($rr, $KEY);
            result_facts('op', $c->partiallyRefundPayment($rr));
            status($c, $s->paymentSessionId, 'status', $cmd);
            break;

        case 'recurrence_on_demand':
            $cmd = new_command([
                'productName' => 'Monthly plan', 'totalPrice' => 19900, 'currency' => 'EUR',
                'recurrentPayment' => true, 'recurrenceCycle' => 'ON_DEMAND',
                'recurrenceDateTo' => '2099-12-31', 'recurrencePeriod' => null,
                'paymentChannels' => 'eu_gp_u', 'defaultPaymentChannel' => 'eu_gp_u',
            ]);
            $s = create_and_pay($c, $cmd);
            status($c, $s->paymentSessionId, 'status', $cmd);
            fact('parent.id', $s->paymentSessionId);
            $rq = [
                'parentPaymentSessionId' => $s->paymentSessionId, 'targetGoId' => $GOID,
                'orderNumber' => $cmd['orderNumber'] . '-1', 'totalPrice' => 9900,
            ];
            $rq['encryptedSignature'] = sign_recurrence_request($rq, $KEY);
            $child = $c->createRecurrentPayment($rq);
            status_facts('child', $child); // CREATED: the card is charged afterwards
            fact('child.totalPrice', $child->totalPrice ?? '');
            fact('child.orderNumber', $child->orderNumber ?? '');
            // As an e-shop does (or on the notification): poll until charged.
            for ($i = 0; $i < 100; $i++) {
                $paid = $c->paymentStatus(session_info($child->paymentSessionId));
                if (($paid->sessionState ?? '') !== 'CREATED') {
                    break;
                }
                usleep(50000);
            }
            status_facts('childPaid', $paid);
            result_facts('void', $c->voidRecurrentPayment(session_info($s->paymentSessionId)));
            break;

        case 'payment_methods':
            $list = $c->paymentMethodList();
            $codes = [];
            foreach ((array) $list as $m) {
                $codes[] = $m->code;
            }
            fact('methods.count', count($codes));
            fact('methods.codes', implode(',', $codes));
            break;

        case 'create_buyer':
            // Signed as a shop signs it: the bridge answers FAILED all the
            // same (the REST interface has no buyer accounts).
            $sig = legacy_sign([legacy_field($GOID), '', legacy_field('b@example.cz')], $KEY);
            $r = $c->createBuyer(['buyerEmail' => 'b@example.cz', 'eshopGoId' => $GOID, 'encryptedSignature' => $sig]);
            fact('buyer.result', $r->result ?? '');
            fact('buyer.resultDescription', $r->resultDescription ?? '');
            break;

        case 'bad_signature':
            $cmd = new_command();
            $cmd['encryptedSignature'] = sign_payment_command(array_merge($cmd, ['totalPrice' => 1]), $KEY);
            status_facts('create', $c->createPayment($cmd));
            status_facts('status', $c->paymentStatus(session_info(3000000001, null, str_repeat('ab', 40))));
            result_facts('capture', $c->capturePayment(session_info(3000000001, null, 'zz')));
            break;

        case 'unknown_goid':
            $cmd = new_command(['targetGoId' => 1000000001]);
            $cmd['encryptedSignature'] = sign_payment_command($cmd, $KEY);
            status_facts('create', $c->createPayment($cmd));
            status_facts('status', $c->paymentStatus(session_info(3000000001, 1000000001)));
            break;

        case 'rest_validation':
            create($c, new_command(['orderNumber' => str_repeat('9', 129)]), 'long');
            create($c, new_command(['currency' => 'XYZ']), 'currency');
            break;

        case 'status_wcust':
            $cmd = new_command();
            $s = create_and_pay($c, $cmd);
            $w = $c->paymentStatusWCust(session_info($s->paymentSessionId));
            status_facts('status', $w, $cmd);
            foreach (['firstName', 'lastName', 'email', 'city', 'countryCode'] as $f) {
                fact("customer.$f", $w->customerData->$f ?? '');
            }
            foreach (['cardNumber', 'cardExpiration', 'cardBrand', 'cardIssuerCountry', 'cardIssuerBank'] as $f) {
                fact("card.$f", $w->customerCardData->$f ?? '');
            }
            break;

        case 'create_only': // restart test, first half
            create($c, new_command());
            break;

        case 'status_of': // restart test, second half: status_of <id>
            status($c, (int) $argv[2]);
            break;

        default:
            fwrite(STDERR, "unknown scenario '$scenario'\n");
            exit(2);
    }
} catch (SoapFault $f) {
    fwrite(STDERR, "SoapFault {$f->faultcode}: {$f->getMessage()}\n");
    fwrite(STDERR, "request:\n" . $c->__getLastRequest() . "\nresponse:\n" . $c->__getLastResponse() . "\n");
    echo json_encode($facts, JSON_UNESCAPED_UNICODE), "\n";
    exit(1);
}
echo json_encode($facts, JSON_UNESCAPED_UNICODE), "\n";
