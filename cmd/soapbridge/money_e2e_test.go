package main

// Money safety through the running binary: bridge → fault proxy → sandbox
// gateway (in process, so the test reads its state directly). Times are
// scaled down by configuration (REST timeout, call deadline) so the suite
// runs in seconds; the order of events is what is checked. A reply that
// must come after the bridge's timeout is held by the proxy until the
// bridge gives up (never a delay racing the timeout), and every margin the
// outcome depends on is a second or more, so a loaded machine cannot
// change it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/charmap"

	"github.com/legacybridge/soapbridge/internal/faultproxy"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
	"github.com/legacybridge/soapbridge/store"
)

// moneyEnv is a bridge whose gateway is the sandbox behind a fault proxy.
type moneyEnv struct {
	t     *testing.T
	b     *bridgeProc
	sb    *sandbox.Gateway
	proxy *faultproxy.Proxy
	gw    *restbackend.Client // straight to the sandbox, for setup and state
	cr    restbackend.Credentials

	mu    sync.Mutex
	posts []time.Time // when each payment POST reached the sandbox
}

func newMoneyEnv(t *testing.T, restTimeout, deadline string, opts ...bridgeOpt) *moneyEnv {
	t.Helper()
	e := &moneyEnv{t: t, cr: restbackend.Credentials{ClientID: demoClientID, ClientSecret: demoClientSecret}}
	e.sb = sandbox.New(sandbox.Options{Merchants: []sandbox.Merchant{{Account: restbackend.Account{GoID: 8123456789,
		ClientID: demoClientID, ClientSecret: demoClientSecret}}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/payments/") {
			e.mu.Lock()
			e.posts = append(e.posts, time.Now())
			e.mu.Unlock()
		}
		e.sb.ServeHTTP(w, r)
	}))
	e.proxy = faultproxy.New(srv.URL)
	t.Cleanup(func() { e.proxy.Close(); srv.Close(); e.sb.Close() })
	e.gw = restbackend.New(restbackend.Config{BaseURL: srv.URL})
	e.b = startBridge(t, append([]bridgeOpt{withEnv("SOAPBRIDGE_GATEWAY_URL="+e.proxy.URL()+"/api",
		"SOAPBRIDGE_REST_TIMEOUT="+restTimeout, "SOAPBRIDGE_CALL_DEADLINE="+deadline)}, opts...)...)
	return e
}

func (e *moneyEnv) postsAfter(t time.Time) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, p := range e.posts {
		if p.After(t) {
			n++
		}
	}
	return n
}

// payment creates a paid (or authorized) payment straight at the sandbox.
func (e *moneyEnv) payment(kind string) int64 {
	e.t.Helper()
	req := &restbackend.PaymentRequest{Target: restbackend.Target{Type: "ACCOUNT", GoID: 8123456789}, Amount: 10000, Currency: "CZK",
		OrderNumber: fmt.Sprintf("M-%d", time.Now().UnixNano()), Items: []restbackend.Item{{Type: "ITEM", Name: "Zboží", Amount: 10000, Count: 1}},
		// The bridge's callbacks, as a payment created before the bridge
		// has them: no return token.
		Callback: &restbackend.Callback{ReturnURL: e.b.URL + "/callback/return?goid=" + demoGoID,
			NotificationURL: e.b.URL + "/callback/notify?goid=" + demoGoID}}
	switch kind {
	case "preauth":
		req.Preauthorization = true
	case "recurrent":
		req.Recurrence = &restbackend.Recurrence{RecurrenceCycle: restbackend.CycleOnDemand, RecurrenceDateTo: "2099-12-31"}
	}
	p, err := e.gw.CreatePayment(context.Background(), e.cr, req)
	require.NoError(e.t, err)
	require.NoError(e.t, e.sb.Act(context.Background(), p.ID, sandbox.Action{Do: sandbox.ActPay, Instrument: restbackend.InstrumentPaymentCard}))
	return p.ID
}

func (e *moneyEnv) status(id int64) *restbackend.Payment {
	p, err := e.gw.PaymentStatus(context.Background(), e.cr, id)
	var ae *restbackend.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil
	}
	require.NoError(e.t, err)
	return p
}

func (e *moneyEnv) refunds(id int64) int {
	h, err := e.gw.RefundHistory(context.Background(), e.cr, id)
	require.NoError(e.t, err)
	return len(h)
}

// existing counts the payments among ids after from (the sandbox numbers
// them in order).
func (e *moneyEnv) existing(from int64, n int) int {
	c := 0
	for i := int64(1); i <= int64(n); i++ {
		if e.status(from+i) != nil {
			c++
		}
	}
	return c
}

// answer is what a legacy client got: the result (or "fault: …").
type answer struct {
	result, desc, fault string
	id                  string
	elapsed             time.Duration
}

func (a answer) String() string {
	if a.fault != "" {
		return "fault: " + a.fault
	}
	return a.result
}

func (a answer) success() bool {
	return a.result == "FINISHED" || a.result == "ACCEPTED" || a.result == "CALL_COMPLETED"
}

// soap posts one operation as PHP SoapClient words it.
func (e *moneyEnv) soap(op, body string) answer {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.b.SOAPURL, strings.NewReader(soapEnvelope(op, body)))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	start := time.Now()
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	a := answer{elapsed: time.Since(start)}
	doc := etree.NewDocument()
	require.NoError(e.t, doc.ReadFromBytes(raw), "%s", raw)
	if f := doc.FindElement("//faultstring"); f != nil {
		a.fault = f.Text()
		return a
	}
	text := func(n string) string {
		if el := doc.FindElement("//" + n); el != nil {
			return el.Text()
		}
		return ""
	}
	a.result, a.desc, a.id = text("result"), text("resultDescription"), text("paymentSessionId")
	return a
}

// soapEnvelope is one operation's request as PHP SoapClient words it.
func soapEnvelope(op, body string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>` +
		`<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" ` +
		`xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` +
		`xmlns:ns2="http://gate.gopay.cz/ws" xmlns:xsd="http://www.w3.org/2001/XMLSchema" SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">` +
		`<SOAP-ENV:Body><ns1:` + op + `>` + body + `</ns1:` + op + `></SOAP-ENV:Body></SOAP-ENV:Envelope>`
}

func str(n, v string) string { return `<` + n + ` xsi:type="SOAP-ENC:string">` + v + `</` + n + `>` }
func long(n, v string) string {
	return `<` + n + ` xsi:type="SOAP-ENC:long">` + v + `</` + n + `>`
}

func sign(t *testing.T, fields ...string) string {
	sig, err := operations.Sign(demoSecureKey, fields...)
	require.NoError(t, err)
	return sig
}

func sessionInfoBody(t *testing.T, id int64) string {
	ids := operations.FormatInt(id)
	return `<sessionInfo xsi:type="ns2:EPaymentSessionInfo">` + str("encryptedSignature", sign(t, operations.PaymentSessionFields(demoGoID, ids)...)) +
		long("paymentSessionId", ids) + long("targetGoId", demoGoID) + `</sessionInfo>`
}

func refundRequestBody(t *testing.T, id, amount int64, desc string) string {
	ids, am := operations.FormatInt(id), operations.FormatInt(amount)
	return `<refundRequest xsi:type="ns2:ERefundRequest">` + long("amount", am) + str("currency", "CZK") + str("description", desc) +
		str("encryptedSignature", sign(t, operations.RefundRequestFields(demoGoID, ids, am, "CZK", desc)...)) +
		long("paymentSessionId", ids) + long("targetGoId", demoGoID) + `</refundRequest>`
}

// moneyOps: every money-moving operation, the kind of payment it needs,
// its SOAP call, and how many times the money moved (read at the sandbox).
var moneyOps = []struct {
	name, path, kind string
	call             func(e *moneyEnv, id int64) answer
	moves            func(e *moneyEnv, id int64) int
}{
	{"capturePayment", "/api/payments/payment/*/capture", "preauth",
		func(e *moneyEnv, id int64) answer { return e.soap("capturePayment", sessionInfoBody(e.t, id)) },
		func(e *moneyEnv, id int64) int { return b2i(e.status(id).State == restbackend.StatePaid) }},
	{"voidAuthorization", "/api/payments/payment/*/void-authorization", "preauth",
		func(e *moneyEnv, id int64) answer { return e.soap("voidAuthorization", sessionInfoBody(e.t, id)) },
		func(e *moneyEnv, id int64) int { return b2i(e.status(id).State == restbackend.StateCanceled) }},
	{"voidRecurrentPayment", "/api/payments/payment/*/void-recurrence", "recurrent",
		func(e *moneyEnv, id int64) answer { return e.soap("voidRecurrentPayment", sessionInfoBody(e.t, id)) },
		func(e *moneyEnv, id int64) int { return b2i(e.status(id).Recurrence.RecurrenceState == "STOPPED") }},
	{"refundPayment(sessionInfo)", "/api/payments/payment/*/refund", "plain",
		func(e *moneyEnv, id int64) answer { return e.soap("refundPayment", sessionInfoBody(e.t, id)) },
		func(e *moneyEnv, id int64) int { return e.refunds(id) }},
	{"refundPayment(refundRequest)", "/api/payments/payment/*/refund", "plain",
		func(e *moneyEnv, id int64) answer {
			return e.soap("refundPayment", refundRequestBody(e.t, id, 3000, "vrácení"))
		},
		func(e *moneyEnv, id int64) int { return e.refunds(id) }},
	{"partiallyRefundPayment", "/api/payments/payment/*/refund", "plain",
		func(e *moneyEnv, id int64) answer {
			return e.soap("partiallyRefundPayment", refundRequestBody(e.t, id, 3000, "část"))
		},
		func(e *moneyEnv, id int64) int { return e.refunds(id) }},
	{"createRecurrentPayment", "/api/payments/payment/*/create-recurrence", "recurrent",
		func(e *moneyEnv, id int64) answer {
			ids, order := operations.FormatInt(id), "R-"+operations.FormatInt(id)
			return e.soap("createRecurrentPayment", `<recurrenceRequest xsi:type="ns2:ERecurrenceRequest">`+
				str("encryptedSignature", sign(e.t, operations.RecurrenceRequestFields(ids, demoGoID, order, "500")...))+
				str("orderNumber", order)+long("parentPaymentSessionId", ids)+long("targetGoId", demoGoID)+long("totalPrice", "500")+
				`</recurrenceRequest>`)
		},
		func(e *moneyEnv, id int64) int { return e.existing(id, 2) }},
	{"createPayment", "/api/payments/payment", "",
		func(e *moneyEnv, id int64) answer {
			order := "C-" + operations.FormatInt(id)
			f := func() *bool { b := false; return &b }
			sig := sign(e.t, operations.PaymentCommandFields{TargetGoID: demoGoID, ProductName: "Kniha", TotalPrice: "12900", Currency: "CZK",
				OrderNumber: order, FailedURL: "https://shop.example/ko", SuccessURL: "https://shop.example/ok",
				PreAuthorization: operations.FormatBool(f()), RecurrentPayment: operations.FormatBool(f()), PaymentChannels: ""}.Fields()...)
			return e.soap("createPayment", `<paymentCommand xsi:type="ns2:EPaymentCommand">`+str("currency", "CZK")+
				str("encryptedSignature", sig)+str("failedURL", "https://shop.example/ko")+str("orderNumber", order)+
				`<preAuthorization xsi:type="xsd:boolean">false</preAuthorization>`+str("productName", "Kniha")+
				`<recurrentPayment xsi:type="xsd:boolean">false</recurrentPayment>`+str("successURL", "https://shop.example/ok")+
				long("targetGoId", demoGoID)+long("totalPrice", "12900")+`</paymentCommand>`)
		},
		// id is the last payment before the call: the new ones follow it.
		func(e *moneyEnv, id int64) int { return e.existing(id, 2) }},
}

// retryUntil repeats call until done says its answer is final, or 30 s
// pass (the wait for a notification the sandbox sends at once: the margin
// is generous, the test never depends on it being short).
func (e *moneyEnv) retryUntil(call func() answer, done func(answer) bool) answer {
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := call()
		if done(a) || time.Now().After(deadline) {
			return a
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var moneyFaults = []faultproxy.Fault{faultproxy.ResetBefore, faultproxy.ResetAfter, faultproxy.ServerErrorBefore,
	faultproxy.BadGatewayAfter, faultproxy.Delay, faultproxy.Truncate, faultproxy.Malformed, faultproxy.WrongID, faultproxy.Hang}

// TestMoneyFaultMatrix: every money-moving operation × every gateway fault,
// then the same signed call again with the fault removed. Never a success
// the gateway did not perform, never a POST forwarded twice, money moved at
// most once, and (where the outcome can be read back) exactly once.
func TestMoneyFaultMatrix(t *testing.T) {
	e := newMoneyEnv(t, "2s", "6s")
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-30s %-13s %-58s %-58s %5s %5s\n", "operation", "fault", "first answer", "retry answer", "POSTs", "moves")
	doubles := 0
	for _, op := range moneyOps {
		for _, fault := range moneyFaults {
			t.Run(op.name+"/"+fault.String(), func(t *testing.T) {
				e.t = t
				var id int64
				if op.kind == "" {
					id = e.payment("plain") // the last id before the create
				} else {
					id = e.payment(op.kind)
				}
				before := e.proxy.Forwarded(http.MethodPost, op.path)
				// Delay holds the reply until the bridge gives up (its REST
				// timeout), whatever the machine's speed.
				e.proxy.Add(faultproxy.Rule{Method: http.MethodPost, Path: op.path, Fault: fault, Times: 1, Delay: time.Hour})
				first := op.call(e, id)
				e.proxy.Clear()
				movedFirst := op.moves(e, id)
				retry := op.call(e, id)
				if op.name == "createRecurrentPayment" && movedFirst == 1 && !retry.success() {
					// The gateway charged but its reply was lost: once its
					// notification of the child reaches the bridge, the same
					// call is answered with the child.
					retry = e.retryUntil(func() answer { return op.call(e, id) }, answer.success)
					assert.True(t, retry.success(), "the child is learnt from the gateway's notification: %v", retry)
					if child := e.status(id + 1); assert.NotNil(t, child) {
						assert.Equal(t, id, child.ParentID)
						assert.Equal(t, operations.FormatInt(child.ID), retry.id, "answered with the child the gateway charged")
					}
				}
				posts := e.proxy.Forwarded(http.MethodPost, op.path) - before
				moves := op.moves(e, id)
				fmt.Fprintf(&table, "%-30s %-13s %-58.58s %-58.58s %5d %5d\n", op.name, fault, first, retry, posts, moves)
				if moves > 1 {
					doubles++
				}
				// A third call: this replica has now found the key held, so
				// it reads the ledger entry first (store.heldEntry) instead
				// of claiming: the same answer, no POST, no move.
				again := op.call(e, id)
				assert.Equal(t, posts, e.proxy.Forwarded(http.MethodPost, op.path)-before, "the third call forwarded a POST")
				assert.Equal(t, moves, op.moves(e, id), "the third call moved money")
				if retry.success() {
					assert.True(t, again.success(), "the third call after a success: %v", again)
					assert.Equal(t, retry.id, again.id, "the third call answered another payment")
				}

				assert.LessOrEqual(t, posts, 1, "a POST forwarded twice")
				assert.LessOrEqual(t, moves, 1, "money moved twice")
				if first.success() {
					assert.Equal(t, 1, movedFirst, "success answered for a move the gateway did not make: %v", first)
				}
				if retry.success() {
					assert.Equal(t, 1, moves, "retry answered success for a move the gateway did not make: %v", retry)
				}
				if !strings.HasPrefix(op.name, "create") {
					// Outcomes that can be read back end in one move after
					// the retry; the creates may stay in doubt instead
					// (the gateway cannot be asked for them).
					assert.Equal(t, 1, moves, "first %v, retry %v", first, retry)
				}
				if !strings.HasPrefix(op.name, "create") {
					// The sandbox finishes every one of these at once:
					// a reconciled answer says what the gateway did.
					for _, a := range []answer{first, retry} {
						if a.success() {
							assert.Equal(t, "FINISHED", a.result, "reconciled to the gateway's state")
						}
					}
				}
				if !first.success() && first.fault == "" {
					t.Errorf("a fault must not become a FAILED result: %v %s", first, first.desc)
				}
			})
		}
	}
	t.Log(table.String())
	t.Logf("double moves on retry: %d", doubles)
}

// TestMoneyReplayRefundsOnce replays one signed partiallyRefundPayment three
// times through PHP SoapClient: the first refunds, the repeats get the same
// signed answer from the ledger and never reach the gateway. A different
// description is another refund.
func TestMoneyReplayRefundsOnce(t *testing.T) {
	php := requirePHP(t)
	e := newMoneyEnv(t, "1s", "4s")
	id := e.payment("plain")
	ids := operations.FormatInt(id)
	for i := range 3 {
		f, err := runPHP(t, php, e.b, "money_call.php", "partiallyRefundPayment", ids, "3000", "vrácení části")
		require.NoError(t, err)
		f.eq(t, "result", "FINISHED")
		f.eq(t, "sig", "ok")
		assert.Equal(t, 1, e.refunds(id), "after call %d", i+1)
	}
	assert.Equal(t, 1, e.proxy.Forwarded(http.MethodPost, "/api/payments/payment/*/refund"))
	f, err := runPHP(t, php, e.b, "money_call.php", "partiallyRefundPayment", ids, "3000", "druhá část")
	require.NoError(t, err)
	f.eq(t, "result", "FINISHED")
	assert.Equal(t, 2, e.refunds(id), "a different description is a new refund")

	// A capture whose reply is lost, then retried by the same PHP client.
	auth := e.payment("preauth")
	e.proxy.Add(faultproxy.Rule{Method: http.MethodPost, Path: "/api/payments/payment/*/capture", Fault: faultproxy.ResetAfter, Times: 1})
	f, err = runPHP(t, php, e.b, "money_call.php", "capturePayment", operations.FormatInt(auth))
	require.NoError(t, err)
	f.eq(t, "result", "FINISHED") // reconciled: the gateway captured
	f.eq(t, "sig", "ok")
	f, err = runPHP(t, php, e.b, "money_call.php", "capturePayment", operations.FormatInt(auth))
	require.NoError(t, err)
	f.eq(t, "result", "FINISHED")
	assert.Equal(t, 1, e.proxy.Forwarded(http.MethodPost, "/api/payments/payment/*/capture"))
	assert.Equal(t, restbackend.StatePaid, e.status(auth).State)
}

// TestMoneyRefundSettlesAnEarlierOne: refund A of a payment reaches the
// gateway, but its reply is lost and the history cannot be read, so A
// stays in doubt. The shop, through PHP SoapClient, refunds another item
// of the same price (B): before B acts, the bridge settles A by A's
// baseline (the gateway did refund it), so neither takes the other's
// refund for its own. A's repeat is answered from the ledger: two
// refunds, two POSTs, each call answered for itself.
func TestMoneyRefundSettlesAnEarlierOne(t *testing.T) {
	php := requirePHP(t)
	const history, refund = "/api/payments/payment/*/refunds", "/api/payments/payment/*/refund"
	e := newMoneyEnv(t, "1s", "4s")
	id := e.payment("plain")
	ids := operations.FormatInt(id)
	e.proxy.Add(faultproxy.Rule{Method: http.MethodGet, Path: history, Fault: faultproxy.Pass, Times: 1}) // A's baseline
	e.proxy.Add(faultproxy.Rule{Method: http.MethodPost, Path: refund, Fault: faultproxy.ResetAfter, Times: 1})
	e.proxy.Add(faultproxy.Rule{Method: http.MethodGet, Path: history, Fault: faultproxy.ResetBefore}) // A's reconciliation
	first := e.soap("partiallyRefundPayment", refundRequestBody(t, id, 3000, "položka 1"))
	assert.True(t, strings.HasPrefix(first.String(), "fault: outcome unknown"), "%v", first)
	require.Equal(t, 1, e.refunds(id), "the gateway refunded A")
	require.Equal(t, store.CallInDoubt, e.ledgerEntry(id, "položka 1").State)
	e.proxy.Clear()

	f, err := runPHP(t, php, e.b, "money_call.php", "partiallyRefundPayment", ids, "3000", "položka 2")
	require.NoError(t, err)
	f.eq(t, "result", "FINISHED")
	f.eq(t, "sig", "ok")
	assert.Equal(t, 2, e.refunds(id), "B refunded")
	assert.Equal(t, store.CallDone, e.ledgerEntry(id, "položka 1").State, "A settled before B acted")
	assert.Contains(t, e.b.log.String(), "an earlier refund of the payment settled")

	f, err = runPHP(t, php, e.b, "money_call.php", "partiallyRefundPayment", ids, "3000", "položka 1")
	require.NoError(t, err)
	f.eq(t, "result", "FINISHED")
	f.eq(t, "sig", "ok")
	assert.Equal(t, 2, e.refunds(id), "no second refund of A")
	assert.Equal(t, 2, e.proxy.Forwarded(http.MethodPost, refund))
}

// TestMoneyDeadline: a gateway slow on every call. Every SOAP call answers
// by its deadline, no POST reaches the gateway after it, and a refund whose
// reads leave less than the REST timeout is not attempted. Each exchange
// takes 1.5 s: a second under the 2.5 s REST timeout. One read leaves at
// most 3.5 s of the 5 s deadline (a second more than the REST timeout: the
// capture's POST starts), two leave at most 2 s (less: the refund's POST
// does not), and a slower machine only leaves less.
func TestMoneyDeadline(t *testing.T) {
	const deadline = 5 * time.Second
	e := newMoneyEnv(t, "2500ms", "5s")
	partly := e.payment("plain")
	require.True(t, e.soap("partiallyRefundPayment", refundRequestBody(t, partly, 1000, "první")).success())
	auth := e.payment("preauth")

	e.proxy.Add(faultproxy.Rule{Fault: faultproxy.Delay, Delay: 1500 * time.Millisecond}) // every request
	refundsBefore := e.proxy.Forwarded(http.MethodPost, "/api/payments/payment/*/refund")
	for _, c := range []struct {
		name string
		call func() answer
		want string
	}{
		// status 1.5 s + history 1.5 s: less than the REST timeout left.
		{"refundPayment", func() answer { return e.soap("refundPayment", sessionInfoBody(t, partly)) }, "fault: not attempted"},
		{"capturePayment", func() answer { return e.soap("capturePayment", sessionInfoBody(t, auth)) }, "FINISHED"},
		{"paymentStatus", func() answer {
			return e.soap("paymentStatus", strings.ReplaceAll(sessionInfoBody(t, auth), "sessionInfo", "paymentSessionInfo"))
		}, "CALL_COMPLETED"},
	} {
		start := time.Now()
		a := c.call()
		t.Logf("%-15s answered in %v (deadline %v): %v", c.name, a.elapsed.Round(time.Millisecond), deadline, a)
		assert.True(t, strings.HasPrefix(a.String(), c.want), "%s: %v", c.name, a)
		// Ordering, not wall-clock time: nothing of this call reached the
		// gateway after its deadline (the answer time is only logged).
		assert.Zero(t, e.postsAfter(start.Add(deadline)), "a POST reached the gateway after the deadline of %s", c.name)
	}
	assert.Equal(t, refundsBefore, e.proxy.Forwarded(http.MethodPost, "/api/payments/payment/*/refund"), "the refund was not sent")
	assert.Equal(t, 1, e.refunds(partly))
}

// TestMoneySIGTERMDuringCapture: SIGTERM while the gateway holds a
// capture's reply; once the bridge is shutting down the reply is let go,
// reaches the client, and the bridge exits 0. (The REST timeout is long:
// the order of events, not its length, is what the test sets.)
func TestMoneySIGTERMDuringCapture(t *testing.T) {
	e := newMoneyEnv(t, "10s", "20s")
	auth := e.payment("preauth")
	const capture = "/api/payments/payment/*/capture"
	e.proxy.Add(faultproxy.Rule{Method: http.MethodPost, Path: capture, Fault: faultproxy.Hold, Times: 1})
	got := make(chan answer, 1)
	go func() { got <- e.soap("capturePayment", sessionInfoBody(t, auth)) }()
	require.Eventually(t, func() bool { return e.proxy.Holding(http.MethodPost, capture) == 1 },
		time.Minute, 10*time.Millisecond, "the capture reached the gateway and its reply is held")
	require.NoError(t, e.b.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return strings.Contains(e.b.log.String(), `"msg":"shutting down"`) },
		time.Minute, 10*time.Millisecond, "the bridge took the SIGTERM")
	e.proxy.Release()
	a := <-got
	assert.Equal(t, "FINISHED", a.String(), "the capture's reply reached the client")
	select {
	case <-e.b.done:
		assert.NoError(t, e.b.waitErr, "exit status after SIGTERM")
	case <-time.After(15 * time.Second):
		t.Fatal("bridge still running after SIGTERM")
	}
	e.b.stopped = true
	assert.Contains(t, e.b.log.String(), `"msg":"stopped"`)
	assert.Equal(t, restbackend.StatePaid, e.status(auth).State)
}

// TestMoneyMojibakeReplayRefundsOnce: a signed refund replayed with its
// description turned to mojibake (its UTF-8 bytes read as windows-1250)
// still verifies through the windows-1250 fallback; it is the same signed
// request, so it is answered from the ledger and refunds nothing.
func TestMoneyMojibakeReplayRefundsOnce(t *testing.T) {
	e := newMoneyEnv(t, "1s", "4s")
	id := e.payment("plain")
	ids := operations.FormatInt(id)
	const desc = "vrácení části"
	moji, err := charmap.Windows1250.NewDecoder().String(desc)
	require.NoError(t, err)
	sig := sign(t, operations.RefundRequestFields(demoGoID, ids, "3000", "CZK", desc)...)
	body := func(d string) string {
		return `<refundRequest xsi:type="ns2:ERefundRequest">` + long("amount", "3000") + str("currency", "CZK") + str("description", d) +
			str("encryptedSignature", sig) + long("paymentSessionId", ids) + long("targetGoId", demoGoID) + `</refundRequest>`
	}
	first := e.soap("partiallyRefundPayment", body(desc))
	require.Equal(t, "FINISHED", first.String())
	replay := e.soap("partiallyRefundPayment", body(moji))
	assert.Equal(t, "FINISHED", replay.String(), "the mojibake verifies and gets the first answer")
	assert.Equal(t, 1, e.refunds(id), "no second refund")
	assert.Equal(t, 1, e.proxy.Forwarded(http.MethodPost, "/api/payments/payment/*/refund"))
	assert.Contains(t, e.b.log.String(), "repeated call answered from the ledger")
}

// TestMoneyCreateReplayOnlyWhileCreated: a repeated createPayment gets the
// same payment while it is still CREATED; once the customer canceled it at
// the gateway, the same signed command (a static base-integration form)
// creates a new payment instead of sending the customer to a dead one.
func TestMoneyCreateReplayOnlyWhileCreated(t *testing.T) {
	e := newMoneyEnv(t, "1s", "4s")
	before := e.payment("plain")
	create := moneyOps[len(moneyOps)-1]
	require.Equal(t, "createPayment", create.name)
	first := create.call(e, before)
	require.Equal(t, "CALL_COMPLETED", first.String())
	again := create.call(e, before)
	assert.Equal(t, first.id, again.id, "a repeat while CREATED is the same payment")

	id, err := strconv.ParseInt(first.id, 10, 64)
	require.NoError(t, err)
	require.NoError(t, e.sb.Act(context.Background(), id, sandbox.Action{Do: sandbox.ActCancel}))
	third := create.call(e, before)
	require.Equal(t, "CALL_COMPLETED", third.String())
	assert.NotEqual(t, first.id, third.id, "a canceled payment is not replayed: a new one is created")
	nid, err := strconv.ParseInt(third.id, 10, 64)
	require.NoError(t, err)
	assert.Equal(t, restbackend.StateCreated, e.status(nid).State)
	fourth := create.call(e, before)
	assert.Equal(t, third.id, fourth.id, "the new payment is replayed while CREATED")
	assert.Equal(t, 2, e.proxy.Forwarded(http.MethodPost, "/api/payments/payment"))
}

// TestMoneyLateReplyAtDeadline is review finding 2's reproduction: the
// refund's POST reply never comes (the proxy holds it until the bridge
// gives up), so the outcome is unknown with less than the REST timeout of
// the call deadline left; the reconciliation then runs on a context of its
// own and ends after the call's deadline has passed. The ledger entry is
// still written, with the baseline persisted before the POST, and a retry
// settles from it: one refund, one POST. Both ends of the reconciliation
// are run: its read held until it gives up too (the entry stays in doubt
// and the retry reconciles) and its read released after the call deadline
// (the entry is done and the first answer already FINISHED).
//
// Times: REST timeout T, deadline D; the history read before the POST is
// delayed 1 s (a second under T) so the POST starts with at most D-1 s
// left (at least T+1 s: it is attempted); it fails T later with less than
// T left, so the reconciliation's own context outlives the deadline.
func TestMoneyLateReplyAtDeadline(t *testing.T) {
	const history, refund = "/api/payments/payment/*/refunds", "/api/payments/payment/*/refund"
	setup := func(t *testing.T, restTimeout, deadline string) (*moneyEnv, int64, time.Time, <-chan answer) {
		e := newMoneyEnv(t, restTimeout, deadline)
		id := e.payment("plain")
		e.proxy.Add(faultproxy.Rule{Method: http.MethodGet, Path: history, Fault: faultproxy.Delay, Delay: time.Second, Times: 1})
		e.proxy.Add(faultproxy.Rule{Method: http.MethodPost, Path: refund, Fault: faultproxy.Hold, Times: 1})
		e.proxy.Add(faultproxy.Rule{Method: http.MethodGet, Path: history, Fault: faultproxy.Hold}) // the reconciliation's read
		start := time.Now()
		got := make(chan answer, 1)
		go func() { got <- e.soap("partiallyRefundPayment", refundRequestBody(t, id, 3000, "pozdě")) }()
		require.Eventually(t, func() bool { return e.proxy.GaveUp(http.MethodPost, refund) == 1 }, time.Minute, 10*time.Millisecond,
			"the bridge gave up on the refund POST")
		assert.Equal(t, 1, e.refunds(id), "the gateway refunded")
		require.Eventually(t, func() bool { return e.proxy.Holding(http.MethodGet, history) == 1 }, time.Minute, 10*time.Millisecond,
			"the bridge reconciles")
		return e, id, start, got
	}

	t.Run("reconciliation gives up: in doubt, the retry settles", func(t *testing.T) {
		e, id, _, got := setup(t, "2s", "4s")
		first := <-got // the reconciliation's read held until it gave up
		assert.True(t, strings.HasPrefix(first.String(), "fault: outcome unknown"), "%v", first)
		entry := e.ledgerEntry(id, "pozdě")
		assert.Equal(t, store.CallInDoubt, entry.State)
		if assert.NotNil(t, entry.Baseline, "the baseline was persisted") {
			assert.Equal(t, store.RefundBaseline{PaymentID: id, Amount: 3000, RefundIDs: []int64{}}, *entry.Baseline, "no refund of 3000 before this one")
		}
		assert.NotContains(t, e.b.log.String(), "ledger update failed")

		e.proxy.Clear()
		retry := e.soap("partiallyRefundPayment", refundRequestBody(t, id, 3000, "pozdě"))
		assert.Equal(t, "FINISHED", retry.String(), "the retry reconciles from the baseline")
		assert.Equal(t, 1, e.refunds(id), "no second refund")
		assert.Equal(t, 1, e.proxy.Forwarded(http.MethodPost, refund))
	})

	t.Run("reconciled after the deadline: done", func(t *testing.T) {
		// T = 3 s, D = 5 s: the reconciliation's read is held until a
		// second past the deadline (counted from before the call was
		// sent), and its own timeout ends at least a second after that.
		const deadline = 5 * time.Second
		e, id, start, got := setup(t, "3s", "5s")
		time.Sleep(time.Until(start.Add(deadline + time.Second)))
		e.proxy.Release()
		first := <-got
		assert.Equal(t, "FINISHED", first.String(), "reconciled on its own context after the call deadline")
		assert.Equal(t, store.CallDone, e.ledgerEntry(id, "pozdě").State)
		assert.NotContains(t, e.b.log.String(), "ledger update failed")

		e.proxy.Clear()
		retry := e.soap("partiallyRefundPayment", refundRequestBody(t, id, 3000, "pozdě"))
		assert.Equal(t, "FINISHED", retry.String(), "the retry is answered from the ledger")
		assert.Equal(t, 1, e.refunds(id), "no second refund")
		assert.Equal(t, 1, e.proxy.Forwarded(http.MethodPost, refund))
	})
}

// ledgerEntry reads, from the bridge's own SQLite file, the ledger entry of
// the demo merchant's partiallyRefundPayment of 30 CZK with desc.
func (e *moneyEnv) ledgerEntry(id int64, desc string) store.Call {
	t := e.t
	t.Helper()
	st, err := store.Open(context.Background(), e.b.DB)
	require.NoError(t, err)
	defer st.Close()
	ids := operations.FormatInt(id)
	// The ledger names a call by its signed fields, without the key.
	signed := strings.Join(operations.RefundRequestFields(demoGoID, ids, "3000", "CZK", desc), "|")
	goid, _ := strconv.ParseInt(demoGoID, 10, 64)
	key := store.CallKey{GoID: goid, Operation: "partiallyRefundPayment", Hash: store.RequestHash("partiallyRefundPayment", signed)}
	entry, claimed, err := st.ClaimCall(context.Background(), key, time.Now(), 24*time.Hour)
	require.NoError(t, err)
	require.False(t, claimed, "the entry was written")
	return entry
}
