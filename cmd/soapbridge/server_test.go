package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/internal/tracing"
)

// touchEnvelope is a touch call as PHP SoapClient sends it.
const touchEnvelope = `<?xml version="1.0" encoding="UTF-8"?>
<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><SOAP-ENV:Body><ns1:touch/></SOAP-ENV:Body></SOAP-ENV:Envelope>`

// logLines collects what run writes to stdout and lets a test wait for a
// line.
type logLines struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newLogLines() *logLines { return &logLines{changed: make(chan struct{})} }

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.changed)
	l.changed = make(chan struct{})
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitLine returns the first JSON log line whose msg is msg.
func (l *logLines) waitLine(t testing.TB, msg string, done <-chan error) map[string]any {
	t.Helper()
	timeout := time.After(30 * time.Second) // a safety net, not an assertion of speed
	for {
		l.mu.Lock()
		text, changed := l.buf.String(), l.changed
		l.mu.Unlock()
		for _, line := range strings.Split(text, "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
				return rec
			}
		}
		select {
		case <-changed:
		case err := <-done:
			t.Fatalf("run returned %v before logging %q; log:\n%s", err, msg, text)
		case <-timeout:
			t.Fatalf("no %q log line; log:\n%s", msg, text)
		}
	}
}

// inProcess is a bridge started by run() in this process.
type inProcess struct {
	URL  string
	log  *logLines
	stop context.CancelFunc
	done chan error
}

// startInProcess runs the bridge on free loopback ports with the embedded
// sandbox and a fresh SQLite file, and stops it at the end of the test.
func startInProcess(t testing.TB, env map[string]string) *inProcess {
	t.Helper()
	full := map[string]string{
		"SOAPBRIDGE_LISTEN":         "127.0.0.1:0",
		"SOAPBRIDGE_SANDBOX_LISTEN": "127.0.0.1:0",
		"SOAPBRIDGE_ADMIN_LISTEN":   "127.0.0.1:0",
		"SOAPBRIDGE_DATABASE":       filepath.Join(t.TempDir(), "bridge.db"),
		"SOAPBRIDGE_LOG_LEVEL":      "debug",
		"SOAPBRIDGE_LOG_BUFFER":     "0", // tests read the log as soon as a call is answered
	}
	for k, v := range env {
		full[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &inProcess{log: newLogLines(), stop: cancel, done: make(chan error, 1)}
	go func() { b.done <- run(ctx, nil, envOf(full), b.log) }()
	rec := b.log.waitLine(t, "listening", b.done)
	b.URL = "http://" + rec["addr"].(string)
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-b.done:
			assert.NoError(t, err, "run after cancel")
		case <-time.After(30 * time.Second):
			t.Error("run did not return after cancel")
		}
	})
	return b
}

func TestRunServes(t *testing.T) {
	b := startInProcess(t, nil)
	soap := b.URL + "/axis/EPaymentServiceV2"

	// healthz, with a request id.
	resp, err := http.Get(b.URL + "/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"status":"ok"}`, string(body))
	assert.NotEmpty(t, resp.Header.Get("X-Request-Id"))

	// The WSDL, its address derived from the request.
	resp, err = http.Get(soap + "?WSDL")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/xml; charset=utf-8", resp.Header.Get("Content-Type"))
	doc := etree.NewDocument()
	require.NoError(t, doc.ReadFromBytes(body))
	addr := doc.FindElement("//service/port/address")
	require.NotNil(t, addr)
	assert.Equal(t, soap, addr.SelectAttrValue("location", ""))

	// The HTML page without ?wsdl.
	resp, err = http.Get(soap)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), soap+"?wsdl")

	// touch through the operations and the SOAP stack.
	resp, err = http.Post(soap, "text/xml; charset=utf-8", strings.NewReader(touchEnvelope))
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `<touchReturn xsi:type="soapenc:string">OK</touchReturn>`)

	// A body over the limit is a SOAP fault on the SOAP endpoint, a 413
	// elsewhere.
	big := strings.Repeat("x", 1<<20+1)
	resp, err = http.Post(soap, "text/xml; charset=utf-8", strings.NewReader(big))
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Contains(t, string(body), "request too large")
	resp, err = http.Post(b.URL+"/gw/pay-base-v2", "application/x-www-form-urlencoded", strings.NewReader(big))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	// The access log names path, status and request id, never the query.
	resp, err = http.Get(b.URL + "/healthz?encryptedSignature=query-value-not-logged")
	require.NoError(t, err)
	resp.Body.Close()
	rid := resp.Header.Get("X-Request-Id")
	logged := b.log.String()
	assert.NotContains(t, logged, "query-value-not-logged")
	var access map[string]any
	for _, line := range strings.Split(logged, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["request_id"] == rid {
			access = rec
		}
	}
	require.NotNil(t, access, "access log line of request %s", rid)
	assert.Equal(t, "/healthz", access["path"])
	assert.Equal(t, "GET", access["method"])
	assert.EqualValues(t, 200, access["status"])

	// Sandbox mode announces the demo merchant once, at start.
	demo := b.log.waitLine(t, "embedded sandbox demo merchant (demo credentials, not secrets)", b.done)
	assert.EqualValues(t, 8123456789, demo["goid"])
	assert.Equal(t, "sandbox-secret", demo["client_secret"])
}

// Sandbox mode prints the demo credentials, but values the operator set
// (perhaps a real secure key tried against the sandbox) are not demo values.
func TestDemoBannerHidesOwnSecrets(t *testing.T) {
	b := startInProcess(t, map[string]string{"SOAPBRIDGE_SANDBOX": "true", "SOAPBRIDGE_CLIENT_SECRET": cfgSecret, "SOAPBRIDGE_SECURE_KEY": cfgKey})
	demo := b.log.waitLine(t, "embedded sandbox demo merchant (demo credentials, not secrets)", b.done)
	assert.EqualValues(t, 8123456789, demo["goid"])
	logged := b.log.String()
	assert.NotContains(t, logged, cfgSecret)
	assert.NotContains(t, logged, cfgKey)
}

func TestRunRejectsBadConfig(t *testing.T) {
	err := run(t.Context(), nil, envOf(map[string]string{
		"SOAPBRIDGE_GATEWAY_URL": "https://gw.example/api", "SOAPBRIDGE_PUBLIC_URL": "https://b.example",
		"SOAPBRIDGE_GOID": "1", "SOAPBRIDGE_CLIENT_ID": "c", "SOAPBRIDGE_CLIENT_SECRET": cfgSecret, "SOAPBRIDGE_SECURE_KEY": "short",
	}), &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "secure key must have at least 24 characters")
	assert.NotContains(t, err.Error(), cfgSecret)
}

// TestGracefulShutdown starts a request, shuts the bridge down while the
// request's body is still on its way, and requires the request to complete
// and run to return nil.
func TestGracefulShutdown(t *testing.T) {
	b := startInProcess(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)

	// Expect: 100-continue makes the server say when the handler starts
	// reading the body: from then on the request is in flight.
	_, err = fmt.Fprintf(conn, "POST /axis/EPaymentServiceV2 HTTP/1.1\r\nHost: %s\r\nContent-Type: text/xml; charset=utf-8\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
		strings.TrimPrefix(b.URL, "http://"), len(touchEnvelope))
	require.NoError(t, err)
	status, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", status)
	_, err = r.ReadString('\n') // blank line after the interim reply
	require.NoError(t, err)

	b.stop()
	b.log.waitLine(t, "shutting down", b.done)

	_, err = io.WriteString(conn, touchEnvelope)
	require.NoError(t, err)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), ">OK</touchReturn>")

	select {
	case err := <-b.done:
		assert.NoError(t, err)
		b.done <- err // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after the in-flight request finished")
	}
	b.log.waitLine(t, "stopped", nil)
	_, err = net.Dial("tcp", strings.TrimPrefix(b.URL, "http://"))
	assert.Error(t, err, "listener still open after run returned")
}

// testEcho is the bridge's middleware stack with test routes, logging to an
// observer.
func testEcho(t *testing.T) (*echo.Echo, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	cfg := defaultConfig()
	log := zap.New(core)
	tr := tracing.Disabled()
	e := newEcho(log, tr, &access.Proxies{}, nil)
	soapRoute(e, cfg.SOAPPath, func(echo.Context) error { panic("boom in SOAP") }, nil, log, tr)
	rest := webRoutes(e, nil, func(ctx context.Context) (context.Context, context.CancelFunc) { return context.WithCancel(ctx) })
	rest.GET("/panic", func(echo.Context) error { panic("boom") })
	rest.GET("/ok", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	return e, logs
}

func TestPanicRecovered(t *testing.T) {
	e, logs := testEcho(t)
	srv := httptest.NewServer(e)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/panic")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.NotContains(t, string(body), "boom", "panic text leaked to the client")
	rid := resp.Header.Get("X-Request-Id")
	panics := logs.FilterMessage("panic recovered").All()
	require.Len(t, panics, 1)
	assert.Equal(t, rid, panics[0].ContextMap()["request_id"])
	assert.Equal(t, "/panic", panics[0].ContextMap()["path"])
	access := logs.FilterMessage("request").FilterField(zap.String("request_id", rid)).All()
	require.Len(t, access, 1)
	assert.EqualValues(t, 500, access[0].ContextMap()["status"])

	// A panic on the SOAP endpoint is answered with a SOAP fault.
	resp, err = http.Post(srv.URL+"/axis/EPaymentServiceV2", "text/xml", strings.NewReader(touchEnvelope))
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Contains(t, string(body), "<faultstring>internal error</faultstring>")
	assert.NotContains(t, string(body), "boom")

	// The server stays up.
	resp, err = http.Get(srv.URL + "/ok")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestRequestID(t *testing.T) {
	e, _ := testEcho(t)
	get := func(id string) string {
		r := httptest.NewRequest(http.MethodGet, "/ok", nil)
		if id != "" {
			r.Header.Set("X-Request-Id", id)
		}
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code)
		return w.Header().Get("X-Request-Id")
	}
	a, b := get(""), get("")
	assert.NotEmpty(t, a)
	assert.NotEqual(t, a, b)
	assert.Equal(t, "shop-42.abc_d", get("shop-42.abc_d"), "a client's id is kept")
	for _, junk := range []string{"has space", `"><script>`, strings.Repeat("a", 129)} {
		got := get(junk)
		assert.NotEqual(t, junk, got)
		assert.NotEmpty(t, got)
	}
}
