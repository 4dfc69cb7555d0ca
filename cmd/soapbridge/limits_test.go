package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/access"
)

// dialFrom opens a TCP connection to addr from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c without a word.
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || (err != nil && strings.Contains(err.Error(), "reset"))
}

// stillOpen reports whether c is open and idle (the read times out).
func stillOpen(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestConnectionCaps(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := capConnections(inner, 3, 2, &access.Proxies{}, zap.NewNop())
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := inner.Addr().String()

	a1, a2 := dialFrom(t, "127.0.0.1", addr), dialFrom(t, "127.0.0.1", addr)
	first := <-accepted
	<-accepted
	a3 := dialFrom(t, "127.0.0.1", addr) // third from one address: over the per-address cap
	assert.True(t, closedByServer(a3), "third connection from one address")
	b1 := dialFrom(t, "127.0.0.2", addr) // another address: admitted (3 in all)
	<-accepted
	c1 := dialFrom(t, "127.0.0.3", addr) // over the total cap
	assert.True(t, closedByServer(c1), "fourth connection in all")
	assert.True(t, stillOpen(a1) && stillOpen(a2) && stillOpen(b1), "admitted connections stay open")

	// A closed connection gives its place back, once (a second Close
	// must not free a second place).
	require.NoError(t, first.Close())
	first.Close()
	a4 := dialFrom(t, "127.0.0.1", addr)
	<-accepted
	assert.True(t, stillOpen(a4))
	c2 := dialFrom(t, "127.0.0.3", addr)
	assert.True(t, closedByServer(c2), "the total cap holds after a double Close")
}

// Through the running bridge: connections over the per-address cap are
// closed, the admitted ones are served.
func TestBridgeCapsConnectionsPerAddress(t *testing.T) {
	b := startInProcess(t, map[string]string{"SOAPBRIDGE_MAX_CONNECTIONS_PER_IP": "2"})
	addr := strings.TrimPrefix(b.URL, "http://")
	held := []net.Conn{dialFrom(t, "127.0.0.1", addr), dialFrom(t, "127.0.0.1", addr)}
	for _, c := range held {
		require.True(t, stillOpen(c))
	}
	assert.True(t, closedByServer(dialFrom(t, "127.0.0.1", addr)))

	// The held connections are served.
	_, err := held[0].Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	held[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(held[0]), nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	// Closing one frees its place.
	held[1].Close()
	require.Eventually(t, func() bool {
		c := dialFrom(t, "127.0.0.1", addr)
		return stillOpen(c)
	}, 5*time.Second, 50*time.Millisecond)
}

func TestGlobalRateLimit(t *testing.T) {
	b := startInProcess(t, map[string]string{"SOAPBRIDGE_RATE_LIMIT": "0.5", "SOAPBRIDGE_RATE_BURST": "2"})
	soap := b.URL + "/axis/EPaymentServiceV2"
	touch := func() (int, string, string) {
		resp, err := http.Post(soap, "text/xml; charset=utf-8", strings.NewReader(touchEnvelope))
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header.Get("Retry-After")
	}
	for range 2 {
		status, body, _ := touch()
		require.Equal(t, http.StatusOK, status, body)
	}
	status, body, retry := touch()
	assert.Equal(t, http.StatusInternalServerError, status)
	assert.Contains(t, body, "<faultcode>soapenv:Server</faultcode>")
	assert.Contains(t, body, "rate limit exceeded: the bridge accepts at most 0.5 requests per second; retry later")
	assert.Equal(t, "1", retry)

	// Other paths get 429; health probes are never limited.
	resp, err := http.Get(soap + "?wsdl")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	resp, err = http.Get(b.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// Real requests are under 4 KiB: the SOAP endpoint's default limit is
// 64 KiB; the other paths keep their own.
func TestDefaultSOAPBodyLimit(t *testing.T) {
	b := startInProcess(t, nil)
	soap := b.URL + "/axis/EPaymentServiceV2"
	pad := "<!--" + strings.Repeat("x", 64<<10) + "-->"
	resp, err := http.Post(soap, "text/xml; charset=utf-8", strings.NewReader(pad+touchEnvelope))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Contains(t, string(body), "request too large")

	small := "<!--" + strings.Repeat("x", 32<<10) + "-->"
	resp, err = http.Post(soap, "text/xml; charset=utf-8", strings.NewReader(small+touchEnvelope))
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
}

// Connections from a trusted proxy count in all but not per address: the
// balancer is not capped as one client; others still are.
func TestConnectionCapsSpareTrustedProxies(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	proxies, err := access.NewProxies("127.0.0.1/32")
	require.NoError(t, err)
	ln := capConnections(inner, 5, 2, proxies, zap.NewNop())
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := inner.Addr().String()
	var fromProxy []net.Conn
	for range 3 { // over the per-address cap of 2
		fromProxy = append(fromProxy, dialFrom(t, "127.0.0.1", addr))
		<-accepted
	}
	other := []net.Conn{dialFrom(t, "127.0.0.2", addr), dialFrom(t, "127.0.0.2", addr)}
	<-accepted
	<-accepted
	assert.True(t, closedByServer(dialFrom(t, "127.0.0.2", addr)), "another address keeps its cap")
	for _, c := range append(fromProxy, other...) {
		assert.True(t, stillOpen(c))
	}
	assert.True(t, closedByServer(dialFrom(t, "127.0.0.1", addr)), "the proxy within the total cap (5)")
}

// The start-up log says which caps apply.
func TestConnectionCapsSaidAtStart(t *testing.T) {
	b := startInProcess(t, map[string]string{"SOAPBRIDGE_TRUSTED_PROXIES": "10.0.0.0/8"})
	rec := b.log.waitLine(t, "connection caps: at most 4096 open in all (max_connections); at most 256 per client address "+
		"(max_connections_per_ip), except from the trusted proxies (trusted_proxies), whose connections carry many clients; "+
		"behind them allowed_networks, rate limits and the refused-login limit apply to the client their X-Forwarded-For names", b.done)
	assert.Equal(t, "http", rec["logger"])
	assert.Contains(t, describeCaps(0, 0, nil), "no cap in all; no cap per address")
	assert.Contains(t, describeCaps(10, 3, nil), "at most 3 per client address (max_connections_per_ip); behind a load balancer set trusted_proxies")
}
