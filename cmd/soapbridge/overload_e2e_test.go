package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/faultproxy"
	"github.com/legacybridge/soapbridge/operations"
)

// paymentPath is the gateway's status read (and its other payment GETs).
const paymentPath = "/api/payments/payment/*"

// overloadEnv is a bridge limited to two calls in progress, whose gateway
// holds the first two status reads until released: the order of events is
// set by the fault proxy, never by a timing margin.
type overloadEnv struct {
	*moneyEnv
	id   string
	wsdl string // a copy of the served WSDL, read before the slots are full
}

func newOverloadEnv(t *testing.T, env ...string) *overloadEnv {
	t.Helper()
	e := &overloadEnv{moneyEnv: newMoneyEnv(t, "10s", "20s",
		withEnv(append([]string{"SOAPBRIDGE_MAX_CALLS_IN_PROGRESS=2", "SOAPBRIDGE_OVERLOAD_WAIT=10ms"}, env...)...))}
	e.id = operations.FormatInt(e.payment("plain"))
	// The sandbox's notification of the payment reads the payment through
	// the proxy too: it must be done before the holds.
	require.Eventually(t, func() bool { return strings.Contains(e.b.log.String(), `"path":"/callback/notify","status":200`) },
		time.Minute, 10*time.Millisecond, "the payment's notification was handled")
	// The WSDL and the encoding schema it imports, served by a copy of
	// their own: once the slots are full, their GETs would be refused too.
	code, wsdl := adminGet(t, e.b.WSDLURL)
	require.Equal(t, http.StatusOK, code)
	code, xsd := adminGet(t, e.b.SOAPURL+"?xsd=soapenc")
	require.Equal(t, http.StatusOK, code)
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml; charset=utf-8")
		if r.URL.Query().Get("xsd") == "soapenc" {
			_, _ = io.WriteString(w, xsd)
			return
		}
		_, _ = io.WriteString(w, wsdl)
	}))
	t.Cleanup(docs.Close)
	wsdl = strings.ReplaceAll(wsdl, e.b.SOAPURL, docs.URL+soapPath)
	e.wsdl = docs.URL + soapPath + "?wsdl"
	return e
}

// hold fills both slots: two paymentStatus calls whose gateway reads the
// proxy holds. It returns their answers' channel.
func (e *overloadEnv) hold() <-chan answer {
	e.t.Helper()
	e.proxy.Add(faultproxy.Rule{Method: http.MethodGet, Path: paymentPath, Fault: faultproxy.Hold, Times: 2})
	got := make(chan answer, 2)
	for range 2 {
		go func() { got <- e.soap("paymentStatus", paymentStatusBody(e.t, e.id)) }()
	}
	require.Eventually(e.t, func() bool { return e.proxy.Holding(http.MethodGet, paymentPath) == 2 },
		time.Minute, 10*time.Millisecond, "both calls reached the gateway and are held")
	return got
}

// metric is the value of one sample line of the bridge's /metrics.
func (e *overloadEnv) metric(series string) string {
	e.t.Helper()
	return adminMetric(e.t, e.b.AdminURL, series)
}

// adminMetric is the value of one sample line (series, labels included)
// of a bridge's /metrics on its admin listener, or "absent".
func adminMetric(t *testing.T, adminURL, series string) string {
	t.Helper()
	code, text := adminGet(t, adminURL+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return "absent"
}

// statusCall sends one paymentStatus of id over client; reused says
// whether it went over a connection the client had already used.
func (e *overloadEnv) statusCall(client *http.Client) (resp *http.Response, body string, reused bool) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.b.SOAPURL, strings.NewReader(soapEnvelope("paymentStatus", paymentStatusBody(e.t, e.id))))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
	}))
	resp, err = client.Do(req)
	require.NoError(e.t, err)
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(e.t, err)
	return resp, string(raw), reused
}

// TestOverloadE2E: the running binary with max_calls_in_progress 2. Two
// paymentStatus calls held at the gateway; the third is refused at once
// with 503, a SOAP Server fault, Retry-After: 1 and Connection: close
// (overload_close_above 0: every refusal closes), and counted; the client's next
// call dials anew; a GET of the WSDL gets a 503 page; /healthz still
// answers; once the gateway lets the two go, both succeed and calls pass
// again.
func TestOverloadE2E(t *testing.T) {
	e := newOverloadEnv(t, "SOAPBRIDGE_OVERLOAD_CLOSE_ABOVE=0")
	got := e.hold()
	assert.Equal(t, "2", e.metric("soapbridge_calls_in_progress"))
	assert.Equal(t, "2", e.metric("soapbridge_calls_in_progress_max"))

	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	start := time.Now()
	resp, raw, _ := e.statusCall(client)
	t.Logf("refused in %v", time.Since(start))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.True(t, resp.Close, "Connection: close")
	assert.Contains(t, raw, "<faultcode>soapenv:Server</faultcode>")
	assert.Contains(t, raw, "server busy: the bridge's limit on calls in progress is reached")

	code, page := adminGet(t, e.b.WSDLURL)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, page, "server busy")
	code, _ = adminGet(t, e.b.URL+"/healthz")
	assert.Equal(t, http.StatusOK, code, "/healthz is never refused")
	assert.Equal(t, "1", e.metric(`soapbridge_overload_refusals_total{route="soap"}`))
	assert.Equal(t, "1", e.metric(`soapbridge_overload_refusals_total{route="other"}`))
	assert.Equal(t, "0", e.metric(`soapbridge_overload_refusals_total{route="callback"}`))
	assert.Equal(t, "0", e.metric(`soapbridge_overload_abandoned_total{route="soap"}`), "refused, not abandoned: their clients waited")
	assert.Equal(t, 2, e.proxy.Holding(http.MethodGet, paymentPath), "the refused call never reached the gateway")

	e.proxy.Release()
	for range 2 {
		a := <-got
		assert.Equal(t, "CALL_COMPLETED", a.result, a.String())
	}
	for range 3 {
		a := e.soap("paymentStatus", paymentStatusBody(t, e.id))
		assert.Equal(t, "CALL_COMPLETED", a.result, "after the release: %s", a)
	}
	// The refused client's connection was closed: its next call dials.
	resp, raw, reused := e.statusCall(client)
	assert.Equal(t, http.StatusOK, resp.StatusCode, raw)
	assert.Contains(t, raw, "CALL_COMPLETED")
	assert.False(t, reused, "the refused call's connection was closed")
	assert.Equal(t, "0", e.metric("soapbridge_calls_in_progress"))
	assert.Equal(t, "1", e.metric(`soapbridge_overload_refusals_total{route="soap"}`))
	assert.Contains(t, e.b.log.String(), "overloaded: refusing calls with 503")
}

// TestOverloadE2EKeepsConnectionBelowThreshold: with overload_close_above
// 100, the few connections open are under it, so the refusal leaves its
// connection open (no Connection: close) and the client's next call goes
// over it.
func TestOverloadE2EKeepsConnectionBelowThreshold(t *testing.T) {
	e := newOverloadEnv(t, "SOAPBRIDGE_OVERLOAD_CLOSE_ABOVE=100")
	got := e.hold()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	resp, raw, _ := e.statusCall(client)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, raw, "server busy: the bridge's limit on calls in progress is reached")
	assert.False(t, resp.Close, "no Connection: close under overload_close_above")
	e.proxy.Release()
	for range 2 {
		a := <-got
		assert.Equal(t, "CALL_COMPLETED", a.result, a.String())
	}
	resp, raw, reused := e.statusCall(client)
	assert.Equal(t, http.StatusOK, resp.StatusCode, raw)
	assert.True(t, reused, "the refused call's connection carried the next call")
}

// TestPHPOverloadFault: PHP's SoapClient, refused by the limit, throws a
// SoapFault with the bridge's Server fault (not an HTTP error without a
// fault): a legacy shop's catch block sees "server busy".
func TestPHPOverloadFault(t *testing.T) {
	php := requirePHP(t)
	e := newOverloadEnv(t)
	got := e.hold()
	// The WSDL from the copy made before: its GET would be refused too.
	env := append(e.b.clientEnv(), "BRIDGE_WSDL_URL="+e.wsdl, "BRIDGE_LOCATION="+e.b.SOAPURL)
	stdout, err := runTool(t, 60*time.Second, env, php, filepath.Join(phpDir, "money_call.php"), "paymentStatus", e.id)
	require.NoError(t, err, stdout)
	f := parseFacts(t, stdout)
	assert.Contains(t, f["fault"], "soapenv:Server: server busy: the bridge's limit on calls in progress is reached", "PHP threw the bridge's fault")
	assert.Equal(t, "1", e.metric(`soapbridge_overload_refusals_total{route="soap"}`))
	e.proxy.Release()
	for range 2 {
		a := <-got
		assert.Equal(t, "CALL_COMPLETED", a.result, a.String())
	}
	stdout, err = runTool(t, 60*time.Second, env, php, filepath.Join(phpDir, "money_call.php"), "paymentStatus", e.id)
	require.NoError(t, err, stdout)
	f = parseFacts(t, stdout)
	assert.Empty(t, f["fault"], "after the release PHP's call passes")
	assert.Equal(t, "CALL_COMPLETED", f["result"])
}
