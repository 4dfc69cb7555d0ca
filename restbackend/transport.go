package restbackend

import (
	"net"
	"net/http"
	"time"
)

// Pool sizes: the bridge serves hundreds of concurrent SOAP calls, each
// making one gateway call. Go's default keeps only 2 idle connections per
// host, so under load most calls would dial (and TLS-handshake) afresh.
const (
	poolIdlePerHost = 256
	poolIdleTotal   = 512
)

// newPooledHTTPClient returns the one HTTP client of a Client: keep-alive
// sized for hundreds of concurrent calls, with timeouts on every stage.
func newPooledHTTPClient(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          poolIdleTotal,
		MaxIdleConnsPerHost:   poolIdlePerHost,
		MaxConnsPerHost:       0, // no cap: a cap would queue calls behind slow ones
		IdleConnTimeout:       90 * time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout, // backstop; each call also has its context deadline
		// A redirect would turn a POST into a GET and send it elsewhere:
		// hand the 3xx back as a failure instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
