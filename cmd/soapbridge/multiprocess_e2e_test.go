package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// TestTwoBridgesOnePostgres: two bridge processes share one PostgreSQL and
// one gateway; a burst of payments paid at once makes both accept
// notifications into the shared outbox and deliver from it. Every
// notification the outbox accepted reaches the e-shop exactly once, none is
// left pending or dead, and every payment was announced.
func TestTwoBridgesOnePostgres(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	gw := startGatewaySandbox(t)
	shop := newFlowShop(t)
	env := withEnv("SOAPBRIDGE_GATEWAY_URL="+gw.URL+"/api", "SOAPBRIDGE_NOTIFICATION_URL="+shop.srv.URL+"/notify")
	bridges := []*bridgeProc{startBridge(t, withDB(dsn), env), startBridge(t, withDB(dsn), env)}

	// Payments created alternately through each bridge, so each gets the
	// gateway's notifications of its own payments.
	const n = 24
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ids := make([]string, 0, n)
	for i := range n {
		shop.setBridge(bridges[i%2].URL)
		resp, err := noRedirect.Get(fmt.Sprintf("%s/buy/full?order=MP-%d", shop.srv.URL, i))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusFound, resp.StatusCode, "createPayment through bridge %d", i%2)
		loc, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		ids = append(ids, loc.Query().Get("sessionInfo.paymentSessionId"))
	}

	// The burst: every payment paid at once.
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			resp, err := http.Post(gw.URL+"/sandbox/payments/"+id+"/pay", "application/json",
				strings.NewReader(`{"outcome":"success","instrument":"PAYMENT_CARD"}`))
			if assert.NoError(t, err) {
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			}
		})
	}
	wg.Wait()

	// Wait until the shared outbox has nothing pending and every payment
	// has been announced at least once.
	received := map[string]int{}
	total := 0
	deadline := time.After(60 * time.Second)
	for {
		c := outboxCounts(t, bridges[0])
		if c["pending"] == 0 && len(received) == n && total == c["delivered"] {
			require.Zero(t, c["dead"])
			break
		}
		select {
		case q := <-shop.notified:
			received[q.Get("paymentSessionId")]++
			total++
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("outbox %v, e-shop received %d notifications of %d payments", c, total, len(received))
		}
	}
	// Nothing more arrives: the accepted notifications were delivered once each.
	select {
	case q := <-shop.notified:
		t.Fatalf("a notification was delivered twice: %v", q)
	case <-time.After(time.Second):
	}
	for _, id := range ids {
		assert.GreaterOrEqual(t, received[id], 1, "payment %s never announced", id)
	}
	assert.Equal(t, outboxCounts(t, bridges[0]), outboxCounts(t, bridges[1]), "both processes see one outbox")
	for i, b := range bridges {
		assert.Contains(t, b.log.String(), "notification delivered", "bridge %d delivered nothing", i)
	}
	doc := flowStatus(t, bridges[1].URL, ids[0]) // created through bridge 0, read through bridge 1
	assert.Equal(t, "PAID", flowText(doc, "sessionState"))
	assert.True(t, strings.HasPrefix(flowText(doc, "productName"), "Čajová konvice"), "the session is shared")
}

// outboxCounts reads the shared outbox's counts from b's admin listener.
func outboxCounts(t *testing.T, b *bridgeProc) map[string]int {
	t.Helper()
	resp, err := http.Get(b.AdminURL + "/outbox")
	require.NoError(t, err)
	defer resp.Body.Close()
	var c map[string]int
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	return c
}
