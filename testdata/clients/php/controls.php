<?php
// Outcomes forced by the sandbox gateway's scenario controls (magic amounts,
// DECLINE_5xxx order numbers; docs/sandbox-controls.md), seen by a legacy
// e-shop through PHP SoapClient. Usage: php controls.php <scenario> [id]
// Prints one JSON object of string facts; a SOAP fault is the fact "fault"
// ("faultcode: message"), so the Go test asserts on it like on any reply.
require __DIR__ . '/legacy.php';

$GOID = (int) env_or_die('GOID');
$KEY = env_or_die('SECURE_KEY');
$facts = [];

function command(array $over = []): array
{
    global $GOID, $KEY;
    $c = array_merge([
        'targetGoId' => $GOID, 'productName' => 'Zkouška řízeného výsledku', 'totalPrice' => 100000,
        'currency' => 'CZK', 'orderNumber' => 'ctl-' . bin2hex(random_bytes(6)),
        'failedURL' => 'https://eshop.example/failed', 'successURL' => 'https://eshop.example/success',
        'preAuthorization' => false, 'recurrentPayment' => false,
        'paymentChannels' => 'eu_gp_u', 'defaultPaymentChannel' => 'eu_gp_u', 'lang' => 'CS',
    ], $over);
    $c['encryptedSignature'] = sign_payment_command($c, $KEY);
    return $c;
}

function info($id): array
{
    global $GOID, $KEY;
    return ['targetGoId' => $GOID, 'paymentSessionId' => $id, 'encryptedSignature' => sign_payment_session($GOID, $id, $KEY)];
}

function status_facts(string $p, $s): void
{
    global $KEY;
    fact("$p.result", $s->result ?? '');
    fact("$p.state", $s->sessionState ?? '');
    fact("$p.subState", $s->sessionSubState ?? '');
    fact("$p.id", $s->paymentSessionId ?? '');
    fact("$p.parent", $s->parentPaymentSessionId ?? '');
    fact("$p.sig", verify_payment_status($s, $KEY));
}

function result_facts(string $p, $r): void
{
    global $KEY;
    fact("$p.result", $r->result ?? '');
    fact("$p.resultDescription", $r->resultDescription ?? '');
    fact("$p.id", $r->paymentSessionId ?? '');
    fact("$p.sig", verify_payment_result($r, $KEY));
}

function status(SoapClient $c, $id, string $p)
{
    $s = $c->paymentStatus(info($id));
    status_facts($p, $s);
    return $s;
}

// create_paid: createPayment, then the customer pays by card at the sandbox.
function create_paid(SoapClient $c, array $cmd)
{
    $s = $c->createPayment($cmd);
    status_facts('create', $s);
    fact('pay.http', sandbox_post("/sandbox/payments/{$s->paymentSessionId}/pay", ['outcome' => 'success', 'instrument' => 'PAYMENT_CARD']));
    return $s->paymentSessionId;
}

function partial_refund(SoapClient $c, $id, int $amount, string $p): void
{
    global $GOID, $KEY;
    $rr = ['targetGoId' => $GOID, 'paymentSessionId' => $id, 'amount' => $amount, 'currency' => 'CZK', 'description' => "vrácení $amount"];
    $rr['encryptedSignature'] = sign_refund_request($rr, $KEY);
    result_facts($p, $c->partiallyRefundPayment($rr));
}

// The sandbox's "later" (ACCEPTED becoming final) without waiting for it.
function advance(int $seconds): void
{
    fact('advance.http', sandbox_post('/sandbox/clock/advance', ['seconds' => $seconds]));
}

$scenario = $argv[1] ?? '';
$c = new_client();
try {
    switch ($scenario) {
        case 'capture_accepted': // captured amount 66611: ACCEPTED, PAID 5 s later
            $id = create_paid($c, command(['preAuthorization' => true, 'totalPrice' => 66611]));
            status($c, $id, 'authorized');
            result_facts('op', $c->capturePayment(info($id)));
            status($c, $id, 'held');
            advance(5);
            status($c, $id, 'status');
            break;

        case 'refund_failed': // refund amount 66622: FAILED, no money moved
            $id = create_paid($c, command());
            partial_refund($c, $id, 66622, 'op');
            status($c, $id, 'status');
            break;

        case 'refund_accepted': // refund amount 66621: ACCEPTED, done 5 s later
            $id = create_paid($c, command());
            partial_refund($c, $id, 66621, 'op');
            status($c, $id, 'held');
            advance(5);
            status($c, $id, 'status');
            break;

        case 'declined_amount': // amount 66601: the card is declined, _5006
            $id = create_paid($c, command(['totalPrice' => 66601]));
            status($c, $id, 'status');
            break;

        case 'declined_order': // order number DECLINE_5015-…: declined with _5015
            $id = create_paid($c, command(['orderNumber' => 'DECLINE_5015-' . bin2hex(random_bytes(4))]));
            status($c, $id, 'status');
            break;

        case 'recurrence_declined': // follow-up of 66631: CREATED, then its charge declined
            $cmd = command(['recurrentPayment' => true, 'recurrenceCycle' => 'ON_DEMAND',
                'recurrenceDateTo' => '2099-12-31', 'recurrencePeriod' => null, 'totalPrice' => 19900]);
            $parent = create_paid($c, $cmd);
            fact('parent.id', $parent);
            $rq = ['parentPaymentSessionId' => $parent, 'targetGoId' => $GOID,
                'orderNumber' => $cmd['orderNumber'] . '-1', 'totalPrice' => 66631];
            $rq['encryptedSignature'] = sign_recurrence_request($rq, $KEY);
            $child = $c->createRecurrentPayment($rq);
            status_facts('child', $child);
            for ($i = 0; $i < 100; $i++) { // as an e-shop polls until the charge is done
                $s = $c->paymentStatus(info($child->paymentSessionId));
                if (($s->sessionState ?? '') !== 'CREATED') {
                    break;
                }
                usleep(50000);
            }
            status_facts('charged', $s);
            status($c, $parent, 'parent');
            break;

        case 'paid': // a paid payment for a test that then arms a fault
            fact('id', create_paid($c, command(['totalPrice' => 5000])));
            break;

        case 'status_of': // status_of <id>
            status($c, (int) $argv[2], 'status');
            break;

        default:
            fwrite(STDERR, "unknown scenario '$scenario'\n");
            exit(2);
    }
} catch (SoapFault $f) {
    fact('fault', $f->faultcode . ': ' . $f->getMessage());
}
echo json_encode($facts, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES), "\n";
