package restbackend_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/legacybridge/soapbridge/restbackend"
)

var bg = context.Background()

func asAPIError(t *testing.T, err error) *restbackend.APIError {
	t.Helper()
	var ae *restbackend.APIError
	require.ErrorAs(t, err, &ae)
	return ae
}

func asTransportError(t *testing.T, err error) *restbackend.TransportError {
	t.Helper()
	var te *restbackend.TransportError
	require.ErrorAs(t, err, &te)
	return te
}

func asMalformedError(t *testing.T, err error) *restbackend.MalformedError {
	t.Helper()
	var me *restbackend.MalformedError
	require.ErrorAs(t, err, &me)
	return me
}

// A token the gateway no longer accepts is dropped, a fresh one fetched and
// the call repeated once, for a GET and for a POST alike.
func TestUnauthorizedRenewsTokenAndRepeatsOnce(t *testing.T) {
	calls := map[string]func(c *restbackend.Client) error{
		"GET status": func(c *restbackend.Client) error { _, err := c.PaymentStatus(bg, testCreds, pid); return err },
		"POST create": func(c *restbackend.Client) error {
			_, err := c.CreatePayment(bg, testCreds, fullPayment)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			g := newFakeGateway(t)
			c := g.client()
			_, err := c.Token(bg, testCreds)
			require.NoError(t, err)
			g.revokeAll()

			require.NoError(t, call(c))
			assert.Equal(t, 2, g.tokenCount())
			require.Equal(t, 2, g.callCount())
			assert.Equal(t, tokenPrefix+"1", g.calls[0].bearer())
			assert.Equal(t, tokenPrefix+"2", g.calls[1].bearer())
			assert.Equal(t, g.calls[0].Body, g.calls[1].Body, "the repeat sends the same request")

			// The fresh token is cached for the next call.
			require.NoError(t, call(c))
			assert.Equal(t, 2, g.tokenCount())
		})
	}
}

// A second 401 after the renewal is the caller's: no loop.
func TestUnauthorizedTwiceIsAPIError(t *testing.T) {
	g := newFakeGateway(t)
	g.setAPI(replyWith(http.StatusUnauthorized, `{"errors":[{"scope":"G","error_code":200,"error_name":"AUTH_WRONG_TOKEN"}]}`))
	_, err := g.client().Refund(bg, testCreds, 1, 100)
	ae := asAPIError(t, err)
	assert.Equal(t, http.StatusUnauthorized, ae.Status)
	assert.Equal(t, "refund", ae.Op)
	assert.Equal(t, 2, g.callCount())
	assert.Equal(t, 2, g.tokenCount())
}

// Wrong credentials fail at the token call, which is not repeated.
func TestWrongCredentials(t *testing.T) {
	g := newFakeGateway(t)
	_, err := g.client().CreatePayment(bg, restbackend.Credentials{ClientID: "test-client", ClientSecret: "wrong"}, fullPayment)
	ae := asAPIError(t, err)
	assert.Equal(t, http.StatusUnauthorized, ae.Status)
	assert.Equal(t, "token", ae.Op)
	assert.True(t, ae.Has(202))
	assert.Equal(t, 1, g.tokenCount())
	assert.Equal(t, 0, g.callCount())
}

func TestConflictIsAPIErrorWithItems(t *testing.T) {
	g := newFakeGateway(t)
	g.setAPI(replyWith(http.StatusConflict, `{"date_issued":"2026-01-02T10:11:12.345+0100","errors":[`+
		`{"scope":"F","field":"amount","error_code":111,"error_name":"WRONG_FORMAT","message":"Chybný formát","description":"amount must be positive"},`+
		`{"scope":"F","field":"payer.contact.email","error_code":110,"error_name":"MANDATORY","message":"Povinné"}]}`))
	_, err := g.client().CreatePayment(bg, testCreds, fullPayment)
	ae := asAPIError(t, err)
	assert.Equal(t, http.StatusConflict, ae.Status)
	assert.Equal(t, "2026-01-02T10:11:12.345+0100", ae.Body.DateIssued)
	assert.Equal(t, []restbackend.ErrorItem{
		{Scope: "F", Field: "amount", ErrorCode: 111, ErrorName: "WRONG_FORMAT", Message: "Chybný formát", Description: "amount must be positive"},
		{Scope: "F", Field: "payer.contact.email", ErrorCode: 110, ErrorName: "MANDATORY", Message: "Povinné"},
	}, ae.Body.Errors)
	assert.Equal(t, "gateway create payment: 409 Conflict: 111 WRONG_FORMAT (amount) Chybný formát and 1 more", ae.Error())
	assert.Equal(t, 1, g.callCount())
}

// One published example carries date_issued as epoch milliseconds: still a
// refusal with its error list, not a malformed reply.
func TestConflictWithEpochDateIssued(t *testing.T) {
	g := newFakeGateway(t)
	g.setAPI(replyWith(http.StatusConflict, `{"date_issued":1767345072345,"errors":[`+
		`{"scope":"G","error_code":303,"error_name":"PAYMENT_WRONG_STATE","message":"Wrong state"}]}`))
	_, err := g.client().Refund(bg, testCreds, 42, 100)
	ae := asAPIError(t, err)
	assert.Equal(t, http.StatusConflict, ae.Status)
	assert.Equal(t, "1767345072345", ae.Body.DateIssued)
	assert.True(t, ae.Has(303))
}

// 4xx is final: a GET is not retried either.
func TestNotFoundIsNotRetried(t *testing.T) {
	g := newFakeGateway(t)
	g.setAPI(replyWith(http.StatusNotFound, `{"errors":[{"scope":"G","error_code":304,"error_name":"PAYMENT_NOT_FOUND"}]}`))
	_, err := g.client().PaymentStatus(bg, testCreds, 42)
	ae := asAPIError(t, err)
	assert.Equal(t, http.StatusNotFound, ae.Status)
	assert.True(t, ae.Has(304))
	assert.Equal(t, 1, g.callCount())
}

// failFirst answers the first n calls with status 503, then with ok.
func failFirst(n int32, ok string) func(http.ResponseWriter, *http.Request, *recorded) {
	var seen atomic.Int32
	return func(w http.ResponseWriter, _ *http.Request, _ *recorded) {
		if seen.Add(1) <= n {
			writeJSON(w, http.StatusServiceUnavailable, `{"errors":[{"scope":"G","error_code":100,"error_name":"SYSTEM_ERROR"}]}`)
			return
		}
		writeJSON(w, http.StatusOK, ok)
	}
}

func TestGetRetriedOnServerError(t *testing.T) {
	t.Run("status", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(failFirst(2, paymentReply))
		p, err := g.client().PaymentStatus(bg, testCreds, 3000000001)
		require.NoError(t, err)
		assert.Equal(t, int64(3000000001), p.ID)
		assert.Equal(t, 3, g.callCount())
	})
	t.Run("instruments", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(failFirst(1, instrumentsReply))
		_, err := g.client().PaymentInstruments(bg, testCreds, 8123456789, "EUR")
		require.NoError(t, err)
		assert.Equal(t, 2, g.callCount())
	})
	t.Run("gives up after 3 attempts", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(failFirst(100, paymentReply))
		_, err := g.client().PaymentStatus(bg, testCreds, 3000000001)
		assert.Equal(t, http.StatusServiceUnavailable, asAPIError(t, err).Status)
		assert.Equal(t, 3, g.callCount())
	})
}

// Money paths never act twice: a 5xx on a POST goes to the caller.
func TestPostNotRetriedOnServerError(t *testing.T) {
	posts := map[string]func(c *restbackend.Client) error{
		"create payment": func(c *restbackend.Client) error { _, err := c.CreatePayment(bg, testCreds, fullPayment); return err },
		"refund":         func(c *restbackend.Client) error { _, err := c.Refund(bg, testCreds, 1, 100); return err },
		"capture":        func(c *restbackend.Client) error { _, err := c.Capture(bg, testCreds, 1, nil); return err },
		"partial capture": func(c *restbackend.Client) error {
			_, err := c.Capture(bg, testCreds, 1, &restbackend.CaptureRequest{Amount: 1})
			return err
		},
		"create recurrence": func(c *restbackend.Client) error {
			_, err := c.CreateRecurrence(bg, testCreds, 1, &restbackend.RecurrenceRequest{Amount: 1, Currency: "CZK", OrderNumber: "R"})
			return err
		},
		"void authorization": func(c *restbackend.Client) error { _, err := c.VoidAuthorization(bg, testCreds, 1); return err },
		"void recurrence":    func(c *restbackend.Client) error { _, err := c.VoidRecurrence(bg, testCreds, 1); return err },
		"account statement": func(c *restbackend.Client) error {
			_, err := c.AccountStatement(bg, testCreds, &restbackend.StatementRequest{GoID: 1})
			return err
		},
	}
	for name, call := range posts {
		t.Run(name, func(t *testing.T) {
			g := newFakeGateway(t)
			g.setAPI(failFirst(100, resultReply))
			err := call(g.client())
			assert.Equal(t, http.StatusServiceUnavailable, asAPIError(t, err).Status)
			assert.Equal(t, 1, g.callCount(), "the gateway must see exactly one request")
		})
	}
}

// hang holds a call until the client gives up on it.
func hang(_ http.ResponseWriter, r *http.Request, _ *recorded) {
	<-r.Context().Done()
}

// The gateway holds every call until the client gives up, so each timeout
// below fires whatever the machine's load; the timeouts are only long
// enough (a second and more) for the request to be sent first.
func TestTimeout(t *testing.T) {
	t.Run("context deadline, POST", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(hang)
		ctx, cancel := context.WithTimeout(bg, 3*time.Second)
		defer cancel()
		c := g.client(func(c *restbackend.Config) { c.Timeout = time.Second })
		_, err := c.Refund(ctx, testCreds, pid, 100)
		te := asTransportError(t, err)
		assert.True(t, te.Timeout)
		assert.True(t, te.Sent)
		assert.Equal(t, "refund", te.Op)
		assert.Equal(t, restbackend.OutcomeUnknown, restbackend.OutcomeOf(err), "sent, no reply")
		assert.Equal(t, 1, g.callCount())
	})
	t.Run("context deadline, GET", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(hang)
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		_, err := g.client().PaymentStatus(ctx, testCreds, pid)
		te := asTransportError(t, err)
		assert.True(t, te.Timeout)
		assert.Equal(t, "payment status", te.Op)
		assert.Equal(t, 1, g.callCount(), "no retry once the deadline passed")
	})
	t.Run("Config.Timeout when the context has none", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(hang)
		c := g.client(func(c *restbackend.Config) { c.Timeout = time.Second })
		_, err := c.CreatePayment(bg, testCreds, fullPayment)
		te := asTransportError(t, err)
		assert.True(t, te.Timeout)
		assert.Equal(t, "create payment", te.Op)
	})
	t.Run("waiting for a shared token", func(t *testing.T) {
		g := newFakeGateway(t)
		defer g.holdToken()() // the token never comes while the call waits
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		defer cancel()
		_, err := g.client().PaymentStatus(ctx, testCreds, pid)
		te := asTransportError(t, err)
		assert.True(t, te.Timeout)
		assert.Equal(t, "token", te.Op)
	})
}

// reset answers by resetting the TCP connection.
func reset(w http.ResponseWriter, _ *http.Request, _ *recorded) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	conn.(*net.TCPConn).SetLinger(0) // RST instead of FIN
	conn.Close()
}

func TestConnectionReset(t *testing.T) {
	t.Run("POST once", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(reset)
		_, err := g.client().Capture(bg, testCreds, 1, nil)
		te := asTransportError(t, err)
		assert.False(t, te.Timeout)
		assert.Equal(t, 1, g.callCount())
	})
	t.Run("GET retried", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(reset)
		core, logs := observer.New(zapcore.DebugLevel)
		_, err := g.client(func(c *restbackend.Config) { c.Logger = zap.New(core) }).PaymentStatus(bg, testCreds, pid)
		asTransportError(t, err)
		assert.Equal(t, 3, logs.FilterMessage("gateway call failed").Len(), "3 attempts")
		// net/http may itself replay a GET once on a reused connection.
		assert.GreaterOrEqual(t, g.callCount(), 3)
		assert.LessOrEqual(t, g.callCount(), 6)
	})
	t.Run("GET retried then succeeds", func(t *testing.T) {
		g := newFakeGateway(t)
		var n atomic.Int32
		g.setAPI(func(w http.ResponseWriter, r *http.Request, rec *recorded) {
			if n.Add(1) == 1 {
				reset(w, r, rec)
				return
			}
			writeJSON(w, http.StatusOK, paymentReply)
		})
		_, err := g.client().PaymentStatus(bg, testCreds, pid)
		require.NoError(t, err)
		assert.Equal(t, 2, g.callCount())
	})
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := restbackend.New(restbackend.Config{BaseURL: url}).PaymentStatus(bg, testCreds, pid)
	te := asTransportError(t, err)
	assert.Equal(t, "token", te.Op)
	assert.False(t, te.Timeout)
}

func TestMalformedReplies(t *testing.T) {
	cases := []struct {
		name   string
		api    func(http.ResponseWriter, *http.Request, *recorded)
		status int
	}{
		{"bad JSON", replyWith(http.StatusOK, `{"id":3000000001,"state":`), 200},
		{"not JSON", func(w http.ResponseWriter, _ *http.Request, _ *recorded) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>maintenance</html>"))
		}, 200},
		{"no id", replyWith(http.StatusOK, `{"state":"CREATED","amount":1}`), 200},
		{"no state", replyWith(http.StatusOK, `{"id":5,"amount":1}`), 200},
		{"failure without error list", replyWith(http.StatusConflict, `{"message":"nope"}`), 409},
		{"failure with empty error list", replyWith(http.StatusForbidden, `{"errors":[]}`), 403},
		{"proxy page", func(w http.ResponseWriter, _ *http.Request, _ *recorded) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("<html>bad gateway</html>"))
		}, 502},
		{"redirect", func(w http.ResponseWriter, r *http.Request, _ *recorded) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}, 302},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newFakeGateway(t)
			g.setAPI(tc.api)
			_, err := g.client().CreatePayment(bg, testCreds, fullPayment)
			me := asMalformedError(t, err)
			assert.Equal(t, tc.status, me.Status)
			assert.Equal(t, "create payment", me.Op)
			assert.Equal(t, 1, g.callCount())
		})
	}
	t.Run("result without result", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(replyWith(http.StatusOK, `{"id":1}`))
		_, err := g.client().Refund(bg, testCreds, 1, 1)
		asMalformedError(t, err)
	})
	t.Run("instruments without list", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(replyWith(http.StatusOK, `{"groups":{}}`))
		_, err := g.client().PaymentInstruments(bg, testCreds, 1, "CZK")
		asMalformedError(t, err)
	})
	for name, reply := range map[string]string{"refund history null": `null`, "refund history object": `{"id":1}`,
		"refund without state": `[{"id":1,"amount":5}]`} {
		t.Run(name, func(t *testing.T) {
			g := newFakeGateway(t)
			g.setAPI(replyWith(http.StatusOK, reply))
			_, err := g.client().RefundHistory(bg, testCreds, 1)
			assert.Equal(t, "refund history", asMalformedError(t, err).Op)
		})
	}
	t.Run("token without access_token", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, `{"token_type":"bearer","expires_in":1800}`)
		}))
		defer srv.Close()
		_, err := restbackend.New(restbackend.Config{BaseURL: srv.URL}).Token(bg, testCreds)
		assert.Equal(t, "token", asMalformedError(t, err).Op)
	})
}

// 100 concurrent calls with a cold cache make exactly one token request.
func TestTokenSingleflight(t *testing.T) {
	g := newFakeGateway(t)
	release := g.holdToken() // the calls pile up behind the first token request
	c := g.client()
	var wg, started sync.WaitGroup
	errs := make(chan error, 100)
	started.Add(100)
	for range 100 {
		wg.Go(func() {
			started.Done()
			_, err := c.PaymentStatus(bg, testCreds, pid)
			errs <- err
		})
	}
	started.Wait()
	require.Eventually(t, func() bool { return g.tokenCount() > 0 }, time.Minute, time.Millisecond, "the first token request")
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 1, g.tokenCount())
	assert.Equal(t, 100, g.callCount())
}

// Tokens are kept per credentials.
func TestTokenPerCredentials(t *testing.T) {
	g := newFakeGateway(t)
	c := g.client()
	a, err := c.Token(bg, testCreds)
	require.NoError(t, err)
	b, err := c.Token(bg, otherCreds)
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	a2, err := c.Token(bg, testCreds)
	require.NoError(t, err)
	assert.Equal(t, a, a2)
	assert.Equal(t, 2, g.tokenCount())
}

// KeepTokens (a reload) forgets the tokens of every credentials not
// kept: the next call with them asks for a new token; the kept ones stay.
func TestKeepTokensEvictsRemovedCredentials(t *testing.T) {
	g := newFakeGateway(t)
	c := g.client()
	a, err := c.Token(bg, testCreds)
	require.NoError(t, err)
	b, err := c.Token(bg, otherCreds)
	require.NoError(t, err)
	c.KeepTokens([]restbackend.Credentials{testCreds})
	a2, err := c.Token(bg, testCreds)
	require.NoError(t, err)
	assert.Equal(t, a, a2, "kept")
	assert.Equal(t, 2, g.tokenCount())
	b2, err := c.Token(bg, otherCreds)
	require.NoError(t, err)
	assert.NotEqual(t, b, b2, "evicted: fetched again")
	assert.Equal(t, 3, g.tokenCount())
	c.KeepTokens(nil)
	_, err = c.Token(bg, testCreds)
	require.NoError(t, err)
	assert.Equal(t, 4, g.tokenCount())
}

// The cache honours expires_in, replacing a token shortly before it
// expires (a tenth of its lifetime, at most 60 s, early).
func TestTokenExpiry(t *testing.T) {
	g := newFakeGateway(t)
	g.ttl = 120 // replaced 12 s early
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	c := g.client(func(c *restbackend.Config) { c.Now = clock })

	tok := func() string {
		t.Helper()
		_, err := c.PaymentStatus(bg, testCreds, pid)
		require.NoError(t, err)
		return g.lastCall().bearer()
	}
	assert.Equal(t, tokenPrefix+"1", tok())
	advance(107 * time.Second)
	assert.Equal(t, tokenPrefix+"1", tok(), "still fresh at 107 s")
	advance(time.Second)
	assert.Equal(t, tokenPrefix+"2", tok(), "replaced at 108 s")
	assert.Equal(t, 2, g.tokenCount())
	assert.Equal(t, tokenPrefix+"2", tok())
	assert.Equal(t, 2, g.tokenCount())

	// The default lifetime of 1800 s is used until 60 s before its end.
	g.ttl = 1800
	advance(200 * time.Second)
	assert.Equal(t, tokenPrefix+"3", tok())
	advance(1739 * time.Second)
	assert.Equal(t, tokenPrefix+"3", tok())
	advance(time.Second)
	assert.Equal(t, tokenPrefix+"4", tok())
}

// A token dropped after a 401 is not dropped again by a late caller that
// was refused with it too: the fresh token stays.
func TestLate401KeepsFreshToken(t *testing.T) {
	g := newFakeGateway(t)
	c := g.client()
	_, err := c.Token(bg, testCreds)
	require.NoError(t, err)
	g.revokeAll()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, err := c.PaymentStatus(bg, testCreds, pid)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.Equal(t, 2, g.tokenCount(), "one renewal shared by all callers")
}

func TestCanceledContext(t *testing.T) {
	g := newFakeGateway(t)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := g.client().PaymentStatus(ctx, testCreds, pid)
	te := asTransportError(t, err)
	assert.False(t, te.Timeout)
	assert.True(t, errors.Is(err, context.Canceled))
}
