package main

// The admin listener of the running binary: metrics that add up to the
// calls made, readiness that holds while the gateway is down (reported as a
// dependency instead), and a status page that shows the merchants and their
// traffic but never a secret.

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
	assert.Equal(t, 3.0, metricValue(t, text, "soapbridge_soap_calls_total", `operation="paymentStatus",result="ok"`))
	assert.Equal(t, 1.0, metricValue(t, text, "soapbridge_soap_calls_total", `operation="paymentStatus",result="denied"`))
	assert.Equal(t, 2.0, metricValue(t, text, "soapbridge_soap_calls_total", `operation="touch",result="ok"`))
	assert.Equal(t, 3.0, metricValue(t, text, "soapbridge_merchant_soap_calls_total", `goid="`+demoGoID+`",result="ok"`))
	assert.Equal(t, 1.0, metricValue(t, text, "soapbridge_merchant_soap_calls_total", `goid="`+demoGoID+`",result="denied"`))
	assert.Equal(t, 4.0, metricValue(t, text, "soapbridge_soap_call_duration_seconds_count", `operation="paymentStatus"`))
	// Every SOAP call counted once: the sum over all series is the calls made.
	total := 0.0
	for _, m := range regexp.MustCompile(`(?m)^soapbridge_soap_calls_total\{[^}]*\} (\S+)$`).FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		total += v
	}
	assert.Equal(t, 6.0, total)
	// The gateway saw what the bridge counted (the proxy forwards every call).
	gw := metricValue(t, text, "soapbridge_gateway_calls_total", `endpoint="payment_status",status="200"`)
	assert.Equal(t, float64(e.proxy.Forwarded(http.MethodGet, "/api/payments/payment/*")), gw)
	assert.GreaterOrEqual(t, gw, 3.0)
	assert.Contains(t, text, "soapbridge_gateway_token_fetches_total ")
	assert.Contains(t, text, `soapbridge_store_duration_seconds_count{operation="session"}`)
	assert.Contains(t, text, "go_goroutines ")
	assert.Contains(t, text, `soapbridge_build_info{goversion="go`)
	assert.Contains(t, text, "soapbridge_ready 1")
	assert.Contains(t, text, `soapbridge_config_reloads_total{result="ok"} 0`)
	assert.Equal(t, 0.0, metricValue(t, text, "soapbridge_signature_failures_total", `operation="paymentStatus"`))

	// The store-backed gauges come from the background probe, which ran at start.
	text = waitMetric(t, admin, `soapbridge_dependency_up{dependency="store"} 1`)
	assert.Contains(t, text, `soapbridge_outbox_notifications{state="pending"}`)
	assert.Contains(t, text, `soapbridge_ledger_calls{state="pending"} 0`)
	assert.Contains(t, text, `soapbridge_ledger_calls{state="in_doubt"} 0`)
	assert.Contains(t, text, "soapbridge_store_counts_age_seconds ")

	// A forged call: the signature of payment id, sent for id+1.
	ids := strconv.FormatInt(id, 10)
	forged := strings.Replace(body3, long("paymentSessionId", ids), long("paymentSessionId", strconv.FormatInt(id+1, 10)), 1)
	require.NotEqual(t, body3, forged)
	a = soapAs(t, e.b.SOAPURL, "127.0.0.1", "shop", testBasicPassword, "paymentStatus", forged)
	require.Empty(t, a.fault)
	require.Equal(t, "CALL_FAILED", a.result)
	_, text2 := adminGet(t, admin+"/metrics")
	assert.Equal(t, 1.0, metricValue(t, text2, "soapbridge_signature_failures_total", `operation="paymentStatus"`))
	assert.Equal(t, 1.0, metricValue(t, text2, "soapbridge_merchant_signature_failures_total", `goid="`+demoGoID+`"`))

	code, page := adminGet(t, admin+"/")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, demoGoID)
	assert.Contains(t, page, "<td>paymentStatus</td><td>5</td>")
	// The shop's notification URL refuses connections: its failed
	// deliveries are listed by host, never with the URL's path or query.
	assert.Contains(t, page, "http://127.0.0.1:9")
	assert.NotContains(t, page, "/notify?token")
	for _, secret := range []string{demoClientSecret, demoSecureKey, testBasicPassword, "shop-notify-token"} {
		assert.NotContains(t, page, secret)
		assert.NotContains(t, text, secret)
	}
	code, _ = adminGet(t, admin+"/debug/pprof/")
	assert.Equal(t, http.StatusOK, code)

	// The gateway goes away: reported by the background probe, while the
	// replica stays ready (every replica shares the gateway).
	e.proxy.Add(faultproxy.Rule{Fault: faultproxy.ResetBefore})
	waitMetric(t, admin, `soapbridge_dependency_up{dependency="gateway"} 0`)
	code, body = adminGet(t, admin+"/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"status":"ready"`)
	assert.Regexp(t, `"gateway":\{"up":false,"error":"[^"]+"`, body)
	assert.Contains(t, body, `"store":{"up":true`)
	e.proxy.Clear()
	assert.False(t, strings.Contains(e.b.log.String(), testBasicPassword))
}

// waitMetric polls the metrics of the admin listener at admin until a
// sample line is want (the background probes run every probeEvery), and
// returns that scrape. Every scrape must answer 200.
func waitMetric(t *testing.T, admin, want string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, text := adminGet(t, admin+"/metrics")
		require.Equal(t, http.StatusOK, code)
		if strings.Contains(text, "\n"+want+"\n") {
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 60 s; last scrape:\n%s", want, grepLines(text, "soapbridge_dependency_up", "soapbridge_ready"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// grepLines are the lines of text containing any of subs.
func grepLines(text string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
