package main

// The admin listener of the running binary: metrics that add up to the
// calls made, readiness that fails while the gateway is down, and a status
// page that shows the merchants and their traffic but never a secret.

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/faultproxy"
)

func adminGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// metricValue is the value of one sample line of the Prometheus text format
// (0 when absent).
func metricValue(t *testing.T, text, name, labels string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{` + regexp.QuoteMeta(labels) + `\} (\S+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

func TestAdminMetricsReadinessStatusPage(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "observe.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("merchants:\n  - goid: "+demoGoID+"\n"+
		"    basic_user: shop\n    basic_password: "+testBasicPassword+"\n"+
		"    notification_url: http://127.0.0.1:9/notify?token=shop-notify-token\n"), 0o600))
	e := newMoneyEnv(t, "2s", "6s", withEnv("SOAPBRIDGE_CONFIG="+cfgFile))
	admin := e.b.AdminURL

	code, body := adminGet(t, admin+"/livez")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = adminGet(t, admin+"/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"status":"ready"`)

	id := e.payment("paid")
	body3 := sessionInfoBody(t, id)
	for range 3 {
		a := soapAs(t, e.b.SOAPURL, "127.0.0.1", "shop", testBasicPassword, "paymentStatus", body3)
		require.Empty(t, a.fault)
	}
	for range 2 {
		a := soapAs(t, e.b.SOAPURL, "127.0.0.1", "", "", "touch", "")
		require.Empty(t, a.fault)
	}
	a := soapAs(t, e.b.SOAPURL, "127.0.0.1", "shop", "nope", "paymentStatus", body3)
	require.NotEmpty(t, a.fault)

	code, text := adminGet(t, admin+"/metrics")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 3.0, metricValue(t, text, "soapbridge_soap_calls_total", `merchant="`+demoGoID+`",operation="paymentStatus",result="ok"`))
	assert.Equal(t, 1.0, metricValue(t, text, "soapbridge_soap_calls_total", `merchant="`+demoGoID+`",operation="paymentStatus",result="denied"`))
	assert.Equal(t, 2.0, metricValue(t, text, "soapbridge_soap_calls_total", `merchant="none",operation="touch",result="ok"`))
	assert.Equal(t, 3.0, metricValue(t, text, "soapbridge_soap_call_duration_seconds_count", `merchant="`+demoGoID+`",operation="paymentStatus",result="ok"`))
	// Every SOAP call counted once: the sum over all series is the calls made.
	total := 0.0
	for _, m := range regexp.MustCompile(`(?m)^soapbridge_soap_calls_total\{[^}]*\} (\S+)$`).FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		total += v
	}
	assert.Equal(t, 6.0, total)
	// The gateway saw what the bridge counted (the proxy forwards every call).
	gw := metricValue(t, text, "soapbridge_gateway_calls_total", `endpoint="payment status",status="200"`)
	assert.Equal(t, float64(e.proxy.Forwarded(http.MethodGet, "/api/payments/payment/*")), gw)
	assert.GreaterOrEqual(t, gw, 3.0)
	assert.GreaterOrEqual(t, metricValue(t, text, "soapbridge_gateway_token_fetches_total", ""), 0.0)
	assert.Contains(t, text, "soapbridge_gateway_token_fetches_total ")
	assert.Contains(t, text, `soapbridge_outbox_notifications{state="pending"}`)
	assert.Contains(t, text, `soapbridge_store_duration_seconds_count{op="session"}`)
	assert.Contains(t, text, "go_goroutines ")

	assert.Contains(t, text, `soapbridge_ledger_calls{state="pending"} 0`)
	assert.Contains(t, text, `soapbridge_ledger_calls{state="in_doubt"} 0`)
	assert.Equal(t, 0.0, metricValue(t, text, "soapbridge_signature_failures_total", `merchant="`+demoGoID+`",operation="paymentStatus"`))

	// A forged call: the signature of payment id, sent for id+1.
	ids := strconv.FormatInt(id, 10)
	forged := strings.Replace(body3, long("paymentSessionId", ids), long("paymentSessionId", strconv.FormatInt(id+1, 10)), 1)
	require.NotEqual(t, body3, forged)
	a = soapAs(t, e.b.SOAPURL, "127.0.0.1", "shop", testBasicPassword, "paymentStatus", forged)
	require.Empty(t, a.fault)
	require.Equal(t, "CALL_FAILED", a.result)
	_, text2 := adminGet(t, admin+"/metrics")
	assert.Equal(t, 1.0, metricValue(t, text2, "soapbridge_signature_failures_total", `merchant="`+demoGoID+`",operation="paymentStatus"`))

	code, page := adminGet(t, admin+"/")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, demoGoID)
	assert.Contains(t, page, "<td>paymentStatus</td><td>5</td>")
	assert.Contains(t, page, "none since start", "no failed delivery yet")
	assert.Contains(t, page, "http://127.0.0.1:9")
	for _, secret := range []string{demoClientSecret, demoSecureKey, testBasicPassword, "shop-notify-token"} {
		assert.NotContains(t, page, secret)
		assert.NotContains(t, text, secret)
	}
	code, _ = adminGet(t, admin+"/debug/pprof/")
	assert.Equal(t, http.StatusOK, code)

	// The gateway goes away: readiness fails once the cached probe expires.
	e.proxy.Add(faultproxy.Rule{Fault: faultproxy.ResetBefore})
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body = adminGet(t, admin+"/readyz")
		if code != http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Contains(t, body, `"gateway":"unreachable`)
	assert.Contains(t, body, `"store":"ok"`)
	e.proxy.Clear()
	assert.False(t, strings.Contains(e.b.log.String(), testBasicPassword))
}
