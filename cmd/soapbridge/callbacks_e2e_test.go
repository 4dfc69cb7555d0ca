package main

// Callbacks against the real binary: notifications that must all reach the
// e-shop (partial refunds, new payments after restarts of the embedded
// sandbox), the return token in a real browser, and the return page shown
// while the gateway does not answer.

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/faultproxy"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/web"
)

// flowCreate has the e-shop create a payment over SOAP (its /buy/full
// page) and returns the payment id, without following the customer.
func flowCreate(t *testing.T, shop *flowShop, order string) string {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(shop.srv.URL + "/buy/full?order=" + url.QueryEscape(order))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	id := loc.Query().Get("sessionInfo.paymentSessionId")
	require.NotEmpty(t, id)
	return id
}

// flowPay pays payment id at the sandbox as a customer with a card would.
func flowPay(t *testing.T, sandboxURL, id string) {
	t.Helper()
	resp, err := http.Post(sandboxURL+"/sandbox/payments/"+id+"/pay", "application/json",
		strings.NewReader(`{"outcome":"success","instrument":"PAYMENT_CARD"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// flowPartialRefund calls partiallyRefundPayment as PHP SoapClient sends it.
func flowPartialRefund(t *testing.T, bridge, id string, amount int64, desc string) {
	t.Helper()
	a := operations.FormatInt(amount)
	sig, err := operations.Sign(demoSecureKey, operations.RefundRequestFields(demoGoID, id, a, "CZK", desc)...)
	require.NoError(t, err)
	doc, err := flowSOAP(bridge, "partiallyRefundPayment", `<refundRequest xsi:type="ns2:ERefundRequest">`+
		`<amount xsi:type="SOAP-ENC:long">`+a+`</amount><currency xsi:type="SOAP-ENC:string">CZK</currency>`+
		`<description xsi:type="SOAP-ENC:string">`+html.EscapeString(desc)+`</description>`+
		`<encryptedSignature xsi:type="SOAP-ENC:string">`+sig+`</encryptedSignature>`+
		`<paymentSessionId xsi:type="SOAP-ENC:long">`+id+`</paymentSessionId>`+
		`<targetGoId xsi:type="SOAP-ENC:long">`+demoGoID+`</targetGoId></refundRequest>`)
	require.NoError(t, err)
	require.Equal(t, "FINISHED", flowText(doc, "result"), flowText(doc, "resultDescription"))
}

// Three partial refunds leave the state PARTIALLY_REFUNDED each time; each
// is a change the e-shop hears about.
func TestNotifyEveryPartialRefund(t *testing.T) {
	shop := newFlowShop(t)
	b := startBridge(t, withEnv("SOAPBRIDGE_NOTIFICATION_URL="+shop.srv.URL+"/notify"))
	shop.setBridge(b.URL)
	id := flowCreate(t, shop, "REFUNDS-1")
	flowPay(t, b.SandboxURL, id)
	shop.waitNotification(t, id)
	for i := 1; i <= 3; i++ {
		flowPartialRefund(t, b.URL, id, 1000, fmt.Sprintf("vrácení %d. části", i))
		shop.waitNotification(t, id)
		assert.Equal(t, "PARTIALLY_REFUNDED", flowText(flowStatus(t, b.URL, id), "sessionState"))
	}
	require.Eventually(t, func() bool {
		c := outboxCounts(t, b)
		return c["delivered"] == 4 && c["pending"] == 0
	}, 10*time.Second, 50*time.Millisecond, "paid and three partial refunds delivered")
}

// `make run` restarted on the same database, the bridge keeping its
// sessions and outbox: every run's new payment reaches the e-shop. The
// embedded sandbox never hands out an id the database has seen (ids above
// its highest and the clock seed; with a state file the counter goes on), so no new
// payment's notification can collide with an old one's key — the key
// collision itself is the unit test's (operations). With the state file
// (what `make run` sets) the earlier runs' payments are still there.
func TestNotifyAfterRestartsOnKeptDatabase(t *testing.T) {
	for _, mode := range []string{"memory", "state file"} {
		t.Run(mode, func(t *testing.T) {
			shop := newFlowShop(t)
			dir := t.TempDir()
			db := filepath.Join(dir, "bridge.db")
			env := []string{"SOAPBRIDGE_NOTIFICATION_URL=" + shop.srv.URL + "/notify"}
			if mode == "state file" {
				env = append(env, "SOAPBRIDGE_SANDBOX_STATE="+filepath.Join(dir, "sandbox.json"))
			}
			seen := map[string]int{}
			var previous string
			for run := 1; run <= 3; run++ {
				// Each start follows the last at once: the sandbox's ids
				// start above the database's (TestQuickRestartsNeverReuseAnID).
				b := startBridge(t, withDB(db), withEnv(env...))
				shop.setBridge(b.URL)
				if previous != "" && mode == "state file" {
					assert.Equal(t, "PAID", flowText(flowStatus(t, b.URL, previous), "sessionState"),
						"run %d: the previous run's payment %s is still known to the sandbox", run, previous)
				}
				order := fmt.Sprintf("RUN-%d", run)
				id := flowCreate(t, shop, order)
				require.NotContains(t, seen, id, "run %d: id %s was handed out by run %d", run, id, seen[id])
				seen[id] = run
				flowPay(t, b.SandboxURL, id)
				n := shop.waitNotification(t, id)
				assert.Equal(t, order, n.Get("orderNumber"), "run %d", run)
				require.Eventually(t, func() bool {
					c := outboxCounts(t, b)
					return c["delivered"] == run && c["pending"] == 0
				}, 10*time.Second, 50*time.Millisecond, "run %d: every payment so far notified once", run)
				b.Stop()
				previous = id
			}
		})
	}
}

// Two starts in quick succession on one kept database: the second run's
// ids are above every id of the first, even when the first made payments
// faster than the sandbox's clock seed moves (ten a second). The first run
// creates payments until its last id is five seconds of clock ahead of
// the clock seed, so a sandbox seeded from the clock alone hands out one
// of them again (its session then replaced) unless the restart takes
// longer than that.
func TestQuickRestartsNeverReuseAnID(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bridge.db")
	seen := map[int64]bool{}
	create := func(b *bridgeProc, order string) int64 {
		id, err := strconv.ParseInt(createFor(t, b.URL, demoCfgMerchant, order), 10, 64)
		require.NoError(t, err)
		require.False(t, seen[id], "%s: id %d handed out again", order, id)
		seen[id] = true
		return id
	}
	started := time.Now()
	b := startBridge(t, withDB(db))
	first := create(b, "QUICK-1-0")
	for i := 1; ; i++ {
		require.Less(t, i, 2000, "payments are created faster than ten a second")
		last := create(b, fmt.Sprintf("QUICK-1-%d", i))
		// The clock seed now is at most first plus the tenths since the start.
		if last-first-int64(time.Since(started)/(100*time.Millisecond)) >= 50 {
			break
		}
	}
	b.Stop()
	b = startBridge(t, withDB(db))
	for i := range 3 {
		order := fmt.Sprintf("QUICK-2-%d", i)
		id := create(b, order)
		assert.Equal(t, order, flowText(flowStatus(t, b.URL, strconv.FormatInt(id, 10)), "orderNumber"), "its session is its own")
	}
}

// The return token through a real browser, and the page a customer sees
// when the gateway does not answer at the return. The bridge reaches the
// gateway (a standalone sandbox) through a fault proxy, which counts the
// status reads and can hold them.
func TestReturnTokenAndOutagePageInBrowser(t *testing.T) {
	node, chromium := flowBrowser(t)
	gw := startGatewaySandbox(t)
	proxy := faultproxy.New(gw.URL)
	statusRule := faultproxy.Rule{Method: http.MethodGet, Path: "/api/payments/payment/*", Fault: faultproxy.Hang}
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gateway-down":
			proxy.Add(statusRule)
		case "/gateway-up":
			proxy.Clear()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hooks.Close)
	shop := newFlowShop(t)
	b := startBridge(t, withEnv("SOAPBRIDGE_GATEWAY_URL="+proxy.URL()+"/api",
		"SOAPBRIDGE_NOTIFICATION_URL="+shop.srv.URL+"/notify", "SOAPBRIDGE_RETURN_STATUS_TIMEOUT=1s"))
	shop.setBridge(b.URL)
	// Released before the bridge stops: status reads of notifications held
	// by the proxy fail at once instead of delaying the shutdown.
	t.Cleanup(proxy.Close)

	t.Run("wrong or missing token", func(t *testing.T) {
		id := flowCreate(t, shop, "TOKEN-1")
		flowPay(t, gw.URL, id)
		shop.waitNotification(t, id) // its status reads are done
		statusReads := proxy.Forwarded(http.MethodGet, "/api/payments/payment/*")
		for name, q := range map[string]string{
			"wrong":   "?goid=" + demoGoID + "&" + operations.CallbackTokenParam + "=AAAAAAAAAAAAAAAAAAAAAAAAAA&id=" + id,
			"missing": "?goid=" + demoGoID + "&id=" + id,
		} {
			u := b.URL + web.PathReturn + q
			resp, err := http.Get(u)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, name)
			res := flowDrive(t, node, chromium, u, b.URL+web.PathReturn, []flowStep{{Wait: "#message-cs", Shot: "token-" + name}})
			assert.Contains(t, res.Text, "Platba "+id+" tohoto obchodu neexistuje.", name)
			assert.NotContains(t, res.Text, "TOKEN-1", name)
		}
		assert.Equal(t, statusReads, proxy.Forwarded(http.MethodGet, "/api/payments/payment/*"),
			"no status read for a wrong or missing token")
	})

	t.Run("gateway down at the return", func(t *testing.T) {
		res := flowDrive(t, node, chromium, shop.srv.URL+"/buy/full?order=OUTAGE-1", shop.srv.URL+"/ok", []flowStep{
			{Wait: "#pay-card", Shot: "gateway", Fetch: hooks.URL + "/gateway-down", Click: "#pay-card"},
			{Wait: "#reload", Text: "Neplaťte prosím znovu.", Shot: "pending", Fetch: hooks.URL + "/gateway-up", Click: "#reload"},
		})
		assert.Contains(t, res.Text, "signature verified: true")
		ret := shop.lastReturn(t)
		assert.Equal(t, "/ok", ret.Path)
		assert.Equal(t, "OUTAGE-1", ret.Query.Get("orderNumber"))
		assert.Contains(t, b.log.String(), "pending page shown")
	})
}
