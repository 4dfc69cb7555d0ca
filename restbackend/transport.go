package restbackend

import (
	"net"
	"net/http"
	"time"
)

// DefaultMaxIdleConns is the idle keep-alive pool to the gateway unless
// Config.MaxIdleConns says otherwise. It should cover the calls in flight
// at peak: a call finding no idle connection dials (and TLS-handshakes)
// afresh. With a 100 ms gateway and 2000 concurrent calls, a pool of 256
// dialled for 0.4 of the calls; 4096 cut that to 0.04 and the CPU per call
// by a fifth (issue 14). Idle connections cost a few KiB each and close
// after IdleConnTimeout.
const DefaultMaxIdleConns = 4096

// newPooledHTTPClient returns the one HTTP client of a Client: keep-alive
// sized for maxIdle concurrent calls, with timeouts on every stage.
func newPooledHTTPClient(timeout time.Duration, maxIdle int) *http.Client {
	if maxIdle <= 0 {
		maxIdle = DefaultMaxIdleConns
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          maxIdle,
		MaxIdleConnsPerHost:   maxIdle, // one gateway host
		MaxConnsPerHost:       0,       // no cap: a cap would queue calls behind slow ones
		IdleConnTimeout:       90 * time.Second,
		// A quarter of net/http's 4 KiB each: a status read's request
		// (about 300 bytes) and reply (about 400, headers included) fit in
		// 1 KiB, a longer one (a createPayment's body, a statement) takes
		// another read or write; the buffers live as long as the
		// connection, one per call in flight and per idle one, and every
		// byte of them held costs two once the collector's headroom is
		// counted (issue 28: memory per call held by a slow gateway).
		ReadBufferSize:  1 << 10,
		WriteBufferSize: 1 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout, // backstop; each call also has its context deadline
		// A redirect would turn a POST into a GET and send it elsewhere:
		// hand the 3xx back as a failure instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
