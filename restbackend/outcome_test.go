package restbackend_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/faultproxy"
	"github.com/legacybridge/soapbridge/restbackend"
)

// moneyCall is one call that moves money, set up on a fresh sandbox: call
// runs it with a client, moved reads the sandbox (directly) to tell
// whether the gateway acted.
type moneyCall struct {
	call  func(ctx context.Context, c *restbackend.Client) error
	moved func() bool
}

// moneyOps are the calls that act, each with the path its POST takes.
var moneyOps = []struct {
	name, path string
	setup      func(e *sandboxEnv) moneyCall
}{
	{"refund", "/api/payments/payment/*/refund", func(e *sandboxEnv) moneyCall {
		p := e.create(nil)
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		return moneyCall{
			call: func(ctx context.Context, c *restbackend.Client) error {
				r, err := c.Refund(ctx, e.cr, p.ID, 300)
				if err == nil && r.ID != p.ID {
					return errors.New("success about another payment")
				}
				return err
			},
			moved: func() bool { return e.state(p.ID).State == restbackend.StatePartiallyRefunded },
		}
	}},
	{"capture", "/api/payments/payment/*/capture", func(e *sandboxEnv) moneyCall {
		p := e.create(func(r *restbackend.PaymentRequest) { r.Preauthorization = true })
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		return moneyCall{
			call: func(ctx context.Context, c *restbackend.Client) error {
				_, err := c.Capture(ctx, e.cr, p.ID, nil)
				return err
			},
			moved: func() bool { return e.state(p.ID).State == restbackend.StatePaid },
		}
	}},
	{"partial capture", "/api/payments/payment/*/capture", func(e *sandboxEnv) moneyCall {
		p := e.create(func(r *restbackend.PaymentRequest) { r.Preauthorization = true })
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		return moneyCall{
			call: func(ctx context.Context, c *restbackend.Client) error {
				_, err := c.Capture(ctx, e.cr, p.ID, &restbackend.CaptureRequest{Amount: 700,
					Items: []restbackend.Item{{Type: "ITEM", Name: "Obuv", Amount: 700, Count: 1}}})
				return err
			},
			moved: func() bool { return e.state(p.ID).State == restbackend.StatePaid },
		}
	}},
	{"void authorization", "/api/payments/payment/*/void-authorization", func(e *sandboxEnv) moneyCall {
		p := e.create(func(r *restbackend.PaymentRequest) { r.Preauthorization = true })
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		return moneyCall{
			call: func(ctx context.Context, c *restbackend.Client) error {
				_, err := c.VoidAuthorization(ctx, e.cr, p.ID)
				return err
			},
			moved: func() bool { return e.state(p.ID).State == restbackend.StateCanceled },
		}
	}},
	{"void recurrence", "/api/payments/payment/*/void-recurrence", func(e *sandboxEnv) moneyCall {
		p := e.create(onDemand)
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		return moneyCall{
			call: func(ctx context.Context, c *restbackend.Client) error {
				_, err := c.VoidRecurrence(ctx, e.cr, p.ID)
				return err
			},
			moved: func() bool { return e.state(p.ID).Recurrence.RecurrenceState == "STOPPED" },
		}
	}},
	{"create recurrence", "/api/payments/payment/*/create-recurrence", func(e *sandboxEnv) moneyCall {
		p := e.create(onDemand)
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		return moneyCall{
			call: func(ctx context.Context, c *restbackend.Client) error {
				_, err := c.CreateRecurrence(ctx, e.cr, p.ID, &restbackend.RecurrenceRequest{Amount: 500, Currency: "CZK",
					OrderNumber: "REC-1", Items: []restbackend.Item{{Type: "ITEM", Name: "Předplatné", Amount: 500, Count: 1}}})
				return err
			},
			moved: func() bool { return e.exists(p.ID + 1) }, // the sandbox numbers payments in order
		}
	}},
	{"create payment", "/api/payments/payment", func(e *sandboxEnv) moneyCall {
		before := e.create(nil)
		return moneyCall{
			call: func(ctx context.Context, c *restbackend.Client) error {
				_, err := c.CreatePayment(ctx, e.cr, &restbackend.PaymentRequest{
					Target: restbackend.Target{Type: "ACCOUNT", GoID: e.goid}, Amount: 1000, Currency: "CZK",
					OrderNumber: "ORD-F", Items: []restbackend.Item{{Type: "ITEM", Name: "Obuv", Amount: 1000, Count: 1}},
					Callback: &restbackend.Callback{ReturnURL: "https://eshop.example/return", NotificationURL: e.notify},
				})
				return err
			},
			moved: func() bool { return e.exists(before.ID + 1) },
		}
	}},
}

func onDemand(r *restbackend.PaymentRequest) {
	r.Recurrence = &restbackend.Recurrence{RecurrenceCycle: restbackend.CycleOnDemand, RecurrenceDateTo: "2099-12-31"}
}

// exists tells whether the sandbox knows payment id.
func (e *sandboxEnv) exists(id int64) bool {
	e.t.Helper()
	_, err := e.c.PaymentStatus(e.ctx(), e.cr, id)
	var ae *restbackend.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return false
	}
	require.NoError(e.t, err)
	return true
}

// proxyTimeout is the REST timeout of the client behind the fault proxy:
// long enough for a call to pass the proxy on a loaded machine. The delay
// and hang faults hold their request until the client gives up, so they
// time out whatever the machine's speed.
const proxyTimeout = 2 * time.Second

// TestOutcomeUnderFaults runs every call that moves money through the
// fault proxy under every fault: a success only when the gateway acted and
// answered, otherwise an error whose outcome is unknown (the request left,
// no usable reply), never a POST forwarded twice, and the gateway's state
// moved exactly when the proxy forwarded.
func TestOutcomeUnderFaults(t *testing.T) {
	faults := []faultproxy.Fault{faultproxy.Pass, faultproxy.ResetBefore, faultproxy.ResetAfter,
		faultproxy.ServerErrorBefore, faultproxy.BadGatewayAfter, faultproxy.Delay, faultproxy.Truncate,
		faultproxy.Malformed, faultproxy.WrongID, faultproxy.Hang}
	for _, op := range moneyOps {
		t.Run(op.name, func(t *testing.T) {
			for _, f := range faults {
				t.Run(f.String(), func(t *testing.T) {
					t.Parallel() // each case has its own sandbox and proxy; the held ones wait out proxyTimeout
					e := newSandboxEnv(t)
					mc := op.setup(e)
					p := faultproxy.New(e.url)
					t.Cleanup(p.Close)
					p.Add(faultproxy.Rule{Method: http.MethodPost, Path: op.path, Fault: f, Times: 1, Delay: time.Hour})
					c := restbackend.New(restbackend.Config{BaseURL: p.URL(), Timeout: proxyTimeout})

					err := mc.call(context.Background(), c)
					if f == faultproxy.Delay || f == faultproxy.Hang {
						// The client gave up; once the proxy saw it go, what
						// the proxy forwarded has reached the gateway.
						require.Eventually(t, func() bool { return p.GaveUp(http.MethodPost, op.path) == 1 }, time.Minute, time.Millisecond)
					}
					forwarded := p.Forwarded(http.MethodPost, op.path)
					// A created payment's id comes from the reply alone: a
					// wrong one cannot be told from it (see docs/money-safety.md).
					if f == faultproxy.Pass || (f == faultproxy.WrongID && op.name == "create payment") {
						require.NoError(t, err)
					} else {
						require.Error(t, err)
						assert.Equal(t, restbackend.OutcomeUnknown, restbackend.OutcomeOf(err), "%v", err)
					}
					want := 0
					if f.Forwards() {
						want = 1
					}
					assert.Equal(t, want, forwarded, "POSTs the gateway saw")
					assert.Equal(t, f.Forwards(), mc.moved(), "the gateway acted")
					if f == faultproxy.WrongID && op.name != "create payment" {
						var mm *restbackend.MismatchError
						assert.ErrorAs(t, err, &mm)
					}
				})
			}
		})
	}
}

// The cases of a known "not done": refused by the gateway, never sent
// (connection refused after the token was fetched), and not started for
// lack of time. None moves anything.
func TestOutcomeNotDone(t *testing.T) {
	for _, op := range moneyOps {
		t.Run(op.name, func(t *testing.T) {
			t.Run("connection refused", func(t *testing.T) {
				e := newSandboxEnv(t)
				mc := op.setup(e)
				p := faultproxy.New(e.url)
				// No keep-alive: the POST must dial (a request written on a
				// pooled connection the server just closed is rightly unknown).
				c := restbackend.New(restbackend.Config{BaseURL: p.URL(), Timeout: proxyTimeout,
					HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
				_, err := c.Token(context.Background(), e.cr)
				require.NoError(t, err)
				p.Close() // the token is cached; the POST itself cannot connect
				err = mc.call(context.Background(), c)
				te := asTransportError(t, err)
				assert.False(t, te.Sent)
				assert.Equal(t, restbackend.OutcomeNotDone, restbackend.OutcomeOf(err), "%v", err)
				assert.False(t, mc.moved())
			})
			t.Run("deadline too close", func(t *testing.T) {
				e := newSandboxEnv(t)
				mc := op.setup(e)
				p := faultproxy.New(e.url)
				t.Cleanup(p.Close)
				c := restbackend.New(restbackend.Config{BaseURL: p.URL(), Timeout: 10 * time.Second})
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				err := mc.call(ctx, c)
				var ns *restbackend.NotStartedError
				require.ErrorAs(t, err, &ns)
				assert.Equal(t, 10*time.Second, ns.Need)
				assert.Contains(t, err.Error(), "not sent")
				assert.True(t, asTransportError(t, err).Timeout)
				assert.Equal(t, restbackend.OutcomeNotDone, restbackend.OutcomeOf(err))
				assert.Zero(t, p.Forwarded(http.MethodPost, "/api/*"), "not even the token call")
				assert.Zero(t, p.Forwarded(http.MethodPost, "/api/*/*"))
				assert.False(t, mc.moved())

				// With the REST timeout left, it starts.
				ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel2()
				require.NoError(t, mc.call(ctx2, c))
				assert.True(t, mc.moved())
			})
		})
	}
	t.Run("refused by the gateway", func(t *testing.T) {
		e := newSandboxEnv(t)
		p := e.create(nil)
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		_, err := e.c.Refund(e.ctx(), e.cr, p.ID, 5000) // more than paid
		assert.Equal(t, http.StatusConflict, asAPIError(t, err).Status)
		assert.Equal(t, restbackend.OutcomeNotDone, restbackend.OutcomeOf(err))
		assert.Equal(t, restbackend.StatePaid, e.state(p.ID).State)
	})
}

// Failures of calls that move no money are not done whatever happened;
// GETs keep their retries through the proxy.
func TestOutcomeOfReadsAndRetries(t *testing.T) {
	e := newSandboxEnv(t)
	pay := e.create(nil)
	p := faultproxy.New(e.url)
	t.Cleanup(p.Close)
	c := restbackend.New(restbackend.Config{BaseURL: p.URL(), Timeout: proxyTimeout})
	status := "/api/payments/payment/*"

	p.Add(faultproxy.Rule{Method: http.MethodGet, Path: status, Fault: faultproxy.ResetAfter, Times: 2})
	got, err := c.PaymentStatus(context.Background(), e.cr, pay.ID)
	require.NoError(t, err, "the third attempt passes")
	assert.Equal(t, pay.ID, got.ID)
	assert.Equal(t, 3, p.Forwarded(http.MethodGet, status))

	p.Clear()
	p.Add(faultproxy.Rule{Method: http.MethodGet, Path: status, Fault: faultproxy.WrongID})
	_, err = c.PaymentStatus(context.Background(), e.cr, pay.ID)
	var mm *restbackend.MismatchError
	require.ErrorAs(t, err, &mm, "a status of another payment is never believed")
	assert.Equal(t, pay.ID, mm.Want)
	assert.Equal(t, pay.ID+1000, mm.Got)
	assert.Equal(t, restbackend.OutcomeNotDone, restbackend.OutcomeOf(err), "a read moves nothing")
	assert.Equal(t, 4, p.Forwarded(http.MethodGet, status), "a wrong reply is not retried")

	assert.Equal(t, restbackend.OutcomeDone, restbackend.OutcomeOf(nil))
	assert.Equal(t, restbackend.OutcomeUnknown, restbackend.OutcomeOf(errors.New("foreign")), "an error we cannot place is the worst case")
	assert.Equal(t, "unknown", restbackend.OutcomeUnknown.String())
}

// Replies about another payment, checked against a canned gateway: never a
// success, outcome unknown for the calls that act.
func TestReplyAboutAnotherPayment(t *testing.T) {
	other := `{"id":1234,"result":"FINISHED"}`
	calls := map[string]func(c *restbackend.Client) error{
		"refund":  func(c *restbackend.Client) error { _, err := c.Refund(bg, testCreds, pid, 100); return err },
		"capture": func(c *restbackend.Client) error { _, err := c.Capture(bg, testCreds, pid, nil); return err },
		"partial capture": func(c *restbackend.Client) error {
			_, err := c.Capture(bg, testCreds, pid, &restbackend.CaptureRequest{Amount: 1})
			return err
		},
		"void authorization": func(c *restbackend.Client) error { _, err := c.VoidAuthorization(bg, testCreds, pid); return err },
		"void recurrence":    func(c *restbackend.Client) error { _, err := c.VoidRecurrence(bg, testCreds, pid); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			g := newFakeGateway(t)
			g.setAPI(replyWith(http.StatusOK, other))
			err := call(g.client())
			me := asMalformedError(t, err)
			assert.Equal(t, http.StatusOK, me.Status)
			var mm *restbackend.MismatchError
			require.ErrorAs(t, err, &mm)
			assert.Equal(t, restbackend.MismatchError{Field: "id", Want: pid, Got: 1234}, *mm)
			assert.Equal(t, restbackend.OutcomeUnknown, restbackend.OutcomeOf(err))
			assert.Equal(t, 1, g.callCount())
		})
	}
	rec := &restbackend.RecurrenceRequest{Amount: 1, Currency: "CZK", OrderNumber: "R"}
	for name, reply := range map[string]string{
		"child of another parent": `{"id":3000000002,"parent_id":77,"state":"CREATED","amount":1,"currency":"CZK"}`,
		"no parent_id":            `{"id":3000000002,"state":"CREATED","amount":1,"currency":"CZK"}`,
		"the parent itself":       `{"id":3000000001,"parent_id":3000000001,"state":"PAID","amount":1,"currency":"CZK"}`,
	} {
		t.Run("create recurrence: "+name, func(t *testing.T) {
			g := newFakeGateway(t)
			g.setAPI(replyWith(http.StatusOK, reply))
			_, err := g.client().CreateRecurrence(bg, testCreds, pid, rec)
			var mm *restbackend.MismatchError
			require.ErrorAs(t, err, &mm)
			assert.Equal(t, restbackend.OutcomeUnknown, restbackend.OutcomeOf(err))
		})
	}
	t.Run("create recurrence: a proper child", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(replyWith(http.StatusOK, `{"id":3000000002,"parent_id":3000000001,"state":"CREATED","amount":1,"currency":"CZK"}`))
		ch, err := g.client().CreateRecurrence(bg, testCreds, pid, rec)
		require.NoError(t, err)
		assert.Equal(t, int64(3000000002), ch.ID)
	})
}

// Outcome of each failure class on a POST that acts, against canned
// replies: 4xx refused, 5xx unknown.
func TestOutcomeByStatus(t *testing.T) {
	for status, want := range map[int]restbackend.Outcome{
		http.StatusConflict: restbackend.OutcomeNotDone, http.StatusForbidden: restbackend.OutcomeNotDone,
		http.StatusNotFound: restbackend.OutcomeNotDone, http.StatusInternalServerError: restbackend.OutcomeUnknown,
		http.StatusServiceUnavailable: restbackend.OutcomeUnknown,
	} {
		g := newFakeGateway(t)
		g.setAPI(replyWith(status, `{"errors":[{"scope":"G","error_code":100}]}`))
		_, err := g.client().Refund(bg, testCreds, pid, 100)
		assert.Equal(t, want, restbackend.OutcomeOf(err), "status %d", status)
		// The same failure of a read is not done: a read moves nothing.
		_, err = g.client().RefundHistory(bg, testCreds, pid)
		assert.Equal(t, restbackend.OutcomeNotDone, restbackend.OutcomeOf(err), "status %d", status)
	}
	g := newFakeGateway(t)
	g.setAPI(replyWith(http.StatusConflict, `<html>refused</html>`))
	_, err := g.client().Refund(bg, testCreds, pid, 100)
	asMalformedError(t, err)
	assert.Equal(t, restbackend.OutcomeNotDone, restbackend.OutcomeOf(err), "a 4xx without an error list is still a refusal")

	_, err = g.client().Refund(bg, restbackend.Credentials{ClientID: "test-client", ClientSecret: "wrong"}, pid, 100)
	assert.Equal(t, restbackend.OutcomeNotDone, restbackend.OutcomeOf(err), "the token call failed: the refund never left")
}
