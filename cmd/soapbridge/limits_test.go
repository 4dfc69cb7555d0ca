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

// closedByServer reports whether the server closed c without a word. (The
// read's deadline is a safety net: a closed connection reads EOF at once.)
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || (err != nil && strings.Contains(err.Error(), "reset"))
}

// talks reports whether the client end c and the server end s of one
// connection still carry bytes both ways: proof that the listener kept the
// connection, where a quiet read could only show it was not closed yet.
func talks(c, s net.Conn) bool {
	ping, pong := make([]byte, 4), make([]byte, 4)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	s.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	defer s.SetDeadline(time.Time{})
	if _, err := c.Write([]byte("ping")); err != nil {
		return false
	}
	if _, err := io.ReadFull(s, ping); err != nil || string(ping) != "ping" {
		return false
	}
	if _, err := s.Write([]byte("pong")); err != nil {
		return false
	}
	_, err := io.ReadFull(c, pong)
	return err == nil && string(pong) == "pong"
}

// healthy sends GET /healthz on c and reports whether the bridge answered
// 200 on it (false when it closed c instead).
func healthy(c net.Conn) bool {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// acceptAll accepts ln's connections until it closes, handing each on.
func acceptAll(ln net.Listener) <-chan net.Conn {
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
	return accepted
}

func TestConnectionCaps(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := capConnections(inner, 3, 2, &access.Proxies{}, zap.NewNop())
	defer ln.Close()
	accepted := acceptAll(ln)
	addr := inner.Addr().String()

	a1 := dialFrom(t, "127.0.0.1", addr)
	s1 := <-accepted
	a2 := dialFrom(t, "127.0.0.1", addr)
	s2 := <-accepted
	a3 := dialFrom(t, "127.0.0.1", addr) // third from one address: over the per-address cap
	assert.True(t, closedByServer(a3), "third connection from one address")
	b1 := dialFrom(t, "127.0.0.2", addr) // another address: admitted (3 in all)
	sb1 := <-accepted
	c1 := dialFrom(t, "127.0.0.3", addr) // over the total cap
	assert.True(t, closedByServer(c1), "fourth connection in all")
	assert.True(t, talks(a1, s1) && talks(a2, s2) && talks(b1, sb1), "admitted connections stay open")

	// A closed connection gives its place back, once (a second Close
	// must not free a second place).
	require.NoError(t, s1.Close())
	s1.Close()
	a4 := dialFrom(t, "127.0.0.1", addr)
	s4 := <-accepted
	assert.True(t, talks(a4, s4))
	c2 := dialFrom(t, "127.0.0.3", addr)
	assert.True(t, closedByServer(c2), "the total cap holds after a double Close")
}

// Through the running bridge: connections over the per-address cap are
// closed, the admitted ones are served.
func TestBridgeCapsConnectionsPerAddress(t *testing.T) {
	b := startInProcess(t, map[string]string{"SOAPBRIDGE_MAX_CONNECTIONS_PER_IP": "2"})
	addr := strings.TrimPrefix(b.URL, "http://")
	held := []net.Conn{dialFrom(t, "127.0.0.1", addr), dialFrom(t, "127.0.0.1", addr)}
	for i, c := range held {
		require.True(t, healthy(c), "held connection %d is served", i)
	}
	assert.True(t, closedByServer(dialFrom(t, "127.0.0.1", addr)))

	// The held connections are still served (keep-alive).
	assert.True(t, healthy(held[0]))

	// Closing one frees its place: a new connection is served, once the
	// server has seen the close (a connection dialled before that is
	// closed by it, and the next one is tried).
	held[1].Close()
	require.Eventually(t, func() bool { return healthy(dialFrom(t, "127.0.0.1", addr)) }, time.Minute, 10*time.Millisecond)
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
	accepted := acceptAll(ln)
	addr := inner.Addr().String()
	type pair struct{ c, s net.Conn }
	var admitted []pair
	for range 3 { // over the per-address cap of 2
		c := dialFrom(t, "127.0.0.1", addr)
		admitted = append(admitted, pair{c, <-accepted})
	}
	for range 2 {
		c := dialFrom(t, "127.0.0.2", addr)
		admitted = append(admitted, pair{c, <-accepted})
	}
	assert.True(t, closedByServer(dialFrom(t, "127.0.0.2", addr)), "another address keeps its cap")
	for _, p := range admitted {
		assert.True(t, talks(p.c, p.s), "admitted connections stay open")
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
