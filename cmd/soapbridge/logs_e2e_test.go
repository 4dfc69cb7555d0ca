package main

// Logs an investigator can trust: nothing a money call logged is lost when
// the process is killed right after answering it; every line is JSON,
// OpenTelemetry's errors included; the caller's address is on the access
// log line and on every line of the call.

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logRecords parses every line of a bridge's output as JSON, failing the
// test on any line that is not (a torn line, plain text on stderr).
func logRecords(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for line := range strings.SplitSeq(strings.TrimRight(out, "\n"), "\n") {
		var rec map[string]any
		if !assert.NoError(t, json.Unmarshal([]byte(line), &rec), "a log line that is not JSON: %q", line) {
			continue
		}
		recs = append(recs, rec)
	}
	return recs
}

// withRequestID are the records of one request.
func withRequestID(recs []map[string]any, id string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["request_id"] == id {
			out = append(out, r)
		}
	}
	return out
}

// The bridge with its default log settings (no log_buffer set) creates a
// payment and refunds one over SOAP, and is killed with SIGKILL as soon as
// the refund's reply is read: every line of both calls is in its output,
// whole, with the caller's address. The reply is written only after the
// handler chain, access log included, has returned, so the lines precede
// it into the kernel; with a buffer they would still be in the process.
func TestSIGKILLAfterMoneyCallLosesNoLine(t *testing.T) {
	e := newMoneyEnv(t, "2s", "6s", withEnv("SOAPBRIDGE_LOG_BUFFER=", "SOAPBRIDGE_LOG_LEVEL=info"))
	id := e.payment("plain")

	shop := newFlowShop(t)
	_, err := lbSOAP(e.b.URL, "createPayment", preauthCreateBody(t, shop.srv.URL, "KILL-1"), "kill-create")
	require.NoError(t, err)
	doc, err := lbSOAP(e.b.URL, "partiallyRefundPayment", refundRequestBody(t, id, 2500, "kill"), "kill-refund")
	require.NoError(t, err)
	require.Equal(t, "FINISHED", flowText(doc, "result"), flowText(doc, "resultDescription"))
	e.b.Kill()

	recs := logRecords(t, e.b.log.String())
	created := withRequestID(recs, "kill-create")
	refunded := withRequestID(recs, "kill-refund")
	var msgs []string
	for _, r := range append(created, refunded...) {
		msgs = append(msgs, r["logger"].(string)+": "+r["msg"].(string))
		assert.Equal(t, "127.0.0.1", r["client_ip"], "client_ip on %q", r["msg"])
	}
	t.Logf("lines of the two calls: %q", msgs)
	assert.Contains(t, msgs, "operations: payment created")
	access := func(recs []map[string]any) map[string]any {
		for _, r := range recs {
			if r["logger"] == "http" && r["msg"] == "request" {
				return r
			}
		}
		return nil
	}
	for name, rs := range map[string][]map[string]any{"createPayment": created, "partiallyRefundPayment": refunded} {
		a := access(rs)
		if assert.NotNil(t, a, "the access log line of %s survived the kill", name) {
			assert.Equal(t, float64(200), a["status"], name)
			assert.Equal(t, soapPath, a["path"], name)
			assert.Contains(t, a["remote"], "127.0.0.1:", name)
		}
	}
}

// Behind a trusted proxy the caller is the client the proxy names, on the
// access log line and on the call's own lines; the proxy's address stays
// in remote. From an untrusted peer X-Forwarded-For is not believed.
func TestClientIPBehindTrustedProxy(t *testing.T) {
	b := startBridge(t, withEnv("SOAPBRIDGE_TRUSTED_PROXIES=127.0.0.1/32", "SOAPBRIDGE_LOG_LEVEL=debug"))
	post := func(src, xff, rid string) {
		body := `<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/"><SOAP-ENV:Body>` +
			`<ns1:paymentStatus xmlns:ns1="http://axis.web.gopay.cz"><paymentSessionInfo><targetGoId>` + demoGoID +
			`</targetGoId><paymentSessionId>1</paymentSessionId><encryptedSignature>00</encryptedSignature></paymentSessionInfo>` +
			`</ns1:paymentStatus></SOAP-ENV:Body></SOAP-ENV:Envelope>`
		req, err := http.NewRequest(http.MethodPost, b.SOAPURL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/xml; charset=utf-8")
		req.Header.Set("X-Request-Id", rid)
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := localClient(src).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	post("127.0.0.1", "198.51.100.1, 203.0.113.9", "via-proxy")
	post("127.0.0.3", "203.0.113.9", "not-a-proxy")
	b.Stop() // its output read to the end

	recs := logRecords(t, b.log.String())
	for rid, want := range map[string]string{"via-proxy": "203.0.113.9", "not-a-proxy": "127.0.0.3"} {
		lines := withRequestID(recs, rid)
		require.GreaterOrEqual(t, len(lines), 2, "%s: the access line and the call's own (a refused signature)", rid)
		for _, r := range lines {
			assert.Equal(t, want, r["client_ip"], "%s: %s", rid, r["msg"])
		}
	}
}

// localClient dials from the loopback address src (127.0.0.x).
func localClient(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// An OTLP collector that refuses every export: its errors are logged as
// JSON lines by the bridge (OpenTelemetry writes plain text to stderr by
// default), and every other line stays JSON too.
func TestOTLPErrorsAreJSONLines(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusBadRequest) // not retried by the exporter
	}))
	t.Cleanup(refusing.Close)
	b := startBridge(t, withEnv("SOAPBRIDGE_OTLP_ENDPOINT="+refusing.URL))
	resp, err := http.Post(b.SOAPURL, "text/xml; charset=utf-8", strings.NewReader(touchEnvelope))
	require.NoError(t, err)
	resp.Body.Close()
	// The batcher exports every 5 s; a safety net, not a margin.
	deadline := time.After(60 * time.Second)
	for !strings.Contains(b.log.String(), "OpenTelemetry error") {
		select {
		case <-deadline:
			t.Fatal("no OpenTelemetry error logged")
		case <-time.After(100 * time.Millisecond):
		}
	}
	b.Stop()
	found := false
	for _, r := range logRecords(t, b.log.String()) {
		if r["msg"] == "OpenTelemetry error (spans may be lost)" {
			found = true
			assert.Equal(t, "warn", r["level"])
			assert.Equal(t, "tracing", r["logger"])
			assert.Contains(t, r["error"], "400")
		}
	}
	assert.True(t, found)
}
