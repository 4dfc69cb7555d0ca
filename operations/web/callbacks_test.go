package web

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/legacybridge/soapbridge/internal/testenv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/faultproxy"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
	"github.com/legacybridge/soapbridge/store"
)

var flCreds = restbackend.Credentials{ClientID: flClientID, ClientSecret: flSecret}

// The token of every created payment: 26 base32 characters (130 bits),
// one per payment, and only the right one opens the callbacks. A wrong or
// missing one is the unknown-payment page and costs no REST call.
func TestCallbackTokenChecked(t *testing.T) {
	env := newFlEnv(t)
	ctx := context.Background()
	a := env.create(t, "TOK-1", "https://shop.example/ok", "https://shop.example/ko")
	b := env.create(t, "TOK-2", "https://shop.example/ok", "https://shop.example/ko")
	require.NoError(t, env.sb.Act(ctx, a, sandbox.Action{Do: sandbox.ActPay, Instrument: "PAYMENT_CARD"}))
	flWaitNotification(t, env.shop, operations.FormatInt(a)) // the sandbox's own call brought the token
	ta, tb := env.token(t, a), env.token(t, b)
	assert.Regexp(t, regexp.MustCompile(`^[A-Z2-7]{26}$`), ta)
	assert.NotEqual(t, ta, tb)
	sa, err := env.st.Session(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, store.HashReturnToken(ta), sa.TokenHash, "the store keeps the token's hash, not the token")

	for _, path := range []string{PathReturn, PathNotify} {
		good := env.callbackURL(t, path, a)
		for name, u := range map[string]string{
			"missing":           strings.Replace(good, operations.CallbackTokenParam+"="+ta+"&", "", 1),
			"empty":             strings.Replace(good, ta, "", 1),
			"another payment's": strings.Replace(good, ta, tb, 1),
			"one character off": strings.Replace(good, ta, ta[:25]+flip(ta[25]), 1),
			"prefix":            strings.Replace(good, ta, ta[:13], 1),
			"its stored hash":   strings.Replace(good, ta, sa.TokenHash, 1),
		} {
			t.Run(path+" "+name, func(t *testing.T) {
				require.NotEqual(t, good, u)
				before := env.restCalls.Load()
				resp := env.get(t, u)
				assert.Equal(t, http.StatusNotFound, resp.StatusCode)
				text := body(t, resp)
				assert.NotContains(t, text, "shop.example", "nothing of the e-shop's URLs")
				assert.Equal(t, before, env.restCalls.Load(), "no REST call for a wrong token")
			})
		}
		resp := env.get(t, good)
		if path == PathReturn {
			assert.Equal(t, http.StatusFound, resp.StatusCode)
		} else {
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		}
	}
}

// getWithin is get with a client that gives up after d: a hang fails the
// test instead of blocking it.
func (env *flEnv) getWithin(t *testing.T, u string, d time.Duration) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := env.client.Do(req)
	require.NoError(t, err, "no answer within %v", d)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// A payment created before tokens existed (its session has none, and so
// had the callback URLs the gateway got) keeps working without one.
func TestCallbackWithoutTokenForOldSession(t *testing.T) {
	env := newFlEnv(t)
	ctx := context.Background()
	// A payment as an old bridge created it: the gateway's callbacks carry
	// no token and the session has none.
	p, err := env.gw.CreatePayment(ctx, flCreds, &restbackend.PaymentRequest{
		Target: restbackend.Target{Type: "ACCOUNT", GoID: flGoID}, Amount: 100, Currency: "CZK", OrderNumber: "OLD-1",
		Items: []restbackend.Item{{Type: "ITEM", Name: "x", Amount: 100, Count: 1}},
		Callback: &restbackend.Callback{ReturnURL: env.bridge.URL + PathReturn + "?goid=8123456789",
			NotificationURL: env.bridge.URL + PathNotify + "?goid=8123456789"},
	})
	require.NoError(t, err)
	require.NoError(t, env.st.SaveSession(ctx, store.Session{PaymentID: p.ID, GoID: flGoID, ProductName: "x", OrderNumber: "OLD-1",
		Amount: 100, Currency: "CZK", SuccessURL: "https://shop.example/ok", FailedURL: "https://shop.example/ko", CreatedAt: time.Now()}))
	require.NoError(t, env.sb.Act(ctx, p.ID, sandbox.Action{Do: sandbox.ActPay, Instrument: "PAYMENT_CARD"}))
	q := flWaitNotification(t, env.shop, operations.FormatInt(p.ID))
	checkIdentity(t, q, p.ID, "OLD-1")
	resp := env.get(t, env.bridge.URL+PathReturn+"?goid=8123456789&id="+operations.FormatInt(p.ID))
	require.Equal(t, http.StatusFound, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Location"), "https://shop.example/ok?"))
}

// Every partial refund is a change the e-shop hears about, although the
// state stays PARTIALLY_REFUNDED; the gateway's repeats of one change are
// still one notification.
func TestEveryPartialRefundNotifies(t *testing.T) {
	env := newFlEnv(t)
	ctx := context.Background()
	id := env.create(t, "REF-1", "https://shop.example/ok", "https://shop.example/ko")
	require.NoError(t, env.sb.Act(ctx, id, sandbox.Action{Do: sandbox.ActPay, Instrument: "PAYMENT_CARD"}))
	flWaitNotification(t, env.shop, operations.FormatInt(id))
	for i := 1; i <= 3; i++ {
		_, err := env.gw.Refund(ctx, flCreds, id, 1000)
		require.NoError(t, err)
		flWaitNotification(t, env.shop, operations.FormatInt(id))
		// The gateway repeating the same notification changes nothing.
		resp := env.get(t, env.callbackURL(t, PathNotify, id))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Eventually(t, func() bool {
			c, err := env.st.Counts(ctx)
			return err == nil && c.Delivered == 1+i && c.Pending == 0
		}, 10*time.Second, 20*time.Millisecond, "refund %d", i)
	}
	p, err := env.gw.PaymentStatus(ctx, flCreds, id)
	require.NoError(t, err)
	assert.Equal(t, restbackend.StatePartiallyRefunded, p.State)
	// The rest of the amount: REFUNDED, one more.
	_, err = env.gw.Refund(ctx, flCreds, id, 12900-3000)
	require.NoError(t, err)
	flWaitNotification(t, env.shop, operations.FormatInt(id))
	select {
	case q := <-env.shop.C:
		t.Errorf("one notification too many: %v", q)
	case <-time.After(300 * time.Millisecond):
	}
	assert.Len(t, env.shop.Received(), 5, "paid, three partial refunds, refunded")
}

// A gateway that numbers payments from the start again (the embedded
// sandbox restarted without its state) while the bridge keeps its database:
// the new payment with an old id is a new payment, and its notifications
// reach the e-shop.
func TestReusedPaymentIDNotifies(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bridge.db")
	shop := testenv.NewShop(t)
	ctx := context.Background()
	for run := 1; run <= 3; run++ {
		env := newFlEnvWith(t, flOptions{db: db, shop: shop})
		id := env.create(t, "RUN-"+operations.FormatInt(int64(run)), "https://shop.example/ok", "https://shop.example/ko")
		if id != 3000000001 {
			// A sandbox that no longer repeats ids: the collision itself
			// is then covered by operations' TestNotificationKeyIdentity.
			t.Logf("run %d: the sandbox gave id %d, not a repeated one", run, id)
		}
		require.NoError(t, env.sb.Act(ctx, id, sandbox.Action{Do: sandbox.ActPay, Instrument: "PAYMENT_CARD"}))
		q := flWaitNotification(t, shop, operations.FormatInt(id))
		assert.Equal(t, "RUN-"+operations.FormatInt(int64(run)), q.Get("orderNumber"))
		require.Eventually(t, func() bool {
			c, err := env.st.Counts(ctx)
			return err == nil && c.Delivered == run && c.Pending == 0
		}, 10*time.Second, 20*time.Millisecond)
	}
}

// The gateway does not answer when the customer comes back: the page says
// the payment may have gone through and not to pay again, within the short
// status timeout; its reload link finishes the return once the gateway
// answers.
func TestReturnPendingPageWhenGatewayDown(t *testing.T) {
	// A REST timeout far beyond the client's patience below: only the
	// return's own status timeout can answer in time. Two seconds of it, so
	// that the reload's status read at the end (the gateway answering)
	// fits in it on a loaded machine.
	env := newFlEnvWith(t, flOptions{proxy: true, returnTimeout: 2 * time.Second, restTimeout: 10 * time.Minute})
	ctx := context.Background()
	id := env.create(t, "DOWN-1", "https://shop.example/ok", "https://shop.example/ko")
	require.NoError(t, env.sb.Act(ctx, id, sandbox.Action{Do: sandbox.ActPay, Instrument: "PAYMENT_CARD"}))
	u := env.callbackURL(t, PathReturn, id)

	for _, fault := range []faultproxy.Fault{faultproxy.Hang, faultproxy.ResetBefore, faultproxy.ServerErrorBefore} {
		t.Run(fault.String(), func(t *testing.T) {
			env.proxy.Clear()
			env.proxy.Add(faultproxy.Rule{Method: http.MethodGet, Path: "/api/payments/payment/*", Fault: fault})
			start := time.Now()
			resp := env.getWithin(t, u, time.Minute)
			t.Logf("pending page after %v", time.Since(start))
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
			assert.NotEmpty(t, resp.Header.Get("Retry-After"))
			page := body(t, resp)
			assert.Contains(t, page, `<html lang="cs">`)
			assert.Contains(t, page, `<section lang="en">`)
			assert.Contains(t, page, "Neplaťte prosím znovu.")
			assert.Contains(t, page, "Please do not pay again.")
			assert.Contains(t, page, "may already have gone through")
			assert.NotContains(t, page, "try again", "never an invitation to pay again")
			assert.NotContains(t, page, "zkuste to znovu")
			m := regexp.MustCompile(`id="reload" href="([^"]+)"`).FindStringSubmatch(page)
			require.NotNil(t, m, page)
			reload, err := url.Parse(env.bridge.URL + strings.ReplaceAll(m[1], "&amp;", "&"))
			require.NoError(t, err)
			assert.Equal(t, u, reload.String(), "the reload link is the return itself")

			env.proxy.Clear()
			back := env.get(t, reload.String())
			require.Equal(t, http.StatusFound, back.StatusCode)
			assert.True(t, strings.HasPrefix(back.Header.Get("Location"), "https://shop.example/ok?"), back.Header.Get("Location"))
		})
	}
}
