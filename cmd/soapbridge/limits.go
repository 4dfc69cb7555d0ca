package main

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/internal/metrics"
)

// capListener caps the open connections in all and per client address.
// A connection over a cap is closed at once rather than left waiting: a
// client holding many slow connections must not take the last ones, and a
// refused client learns it at once. A connection from a trusted proxy (a
// load balancer, trusted_proxies) counts in all but not per address: it
// carries many clients, which the listener cannot tell apart (the rules
// that can, per merchant and per caller, read X-Forwarded-For).
type capListener struct {
	net.Listener
	maxTotal, maxPerIP int
	proxies            *access.Proxies
	log                *zap.Logger

	mu      sync.Mutex
	total   int
	perIP   map[string]int
	refused atomic.Int64
}

// capConnections wraps ln; a cap of 0 is no cap. It logs which caps
// apply, and to whom.
func capConnections(ln net.Listener, maxTotal, maxPerIP int, proxies *access.Proxies, log *zap.Logger) net.Listener {
	log.Info("connection caps: " + describeCaps(maxTotal, maxPerIP, proxies))
	if maxTotal <= 0 && maxPerIP <= 0 {
		return ln
	}
	return &capListener{Listener: ln, maxTotal: maxTotal, maxPerIP: maxPerIP, proxies: proxies, log: log, perIP: map[string]int{}}
}

// describeCaps says which connection caps apply, for the start-up log.
func describeCaps(maxTotal, maxPerIP int, proxies *access.Proxies) string {
	total := "no cap in all"
	if maxTotal > 0 {
		total = fmt.Sprintf("at most %d open in all (max_connections)", maxTotal)
	}
	switch {
	case maxPerIP <= 0:
		return total + "; no cap per address (max_connections_per_ip 0)"
	case proxies.Any():
		return total + fmt.Sprintf("; at most %d per client address (max_connections_per_ip), except from the trusted proxies "+
			"(trusted_proxies), whose connections carry many clients; behind them allowed_networks, rate limits and the "+
			"refused-login limit apply to the client their X-Forwarded-For names", maxPerIP)
	}
	return total + fmt.Sprintf("; at most %d per client address (max_connections_per_ip); behind a load balancer set "+
		"trusted_proxies, or every client shares the balancer's %d", maxPerIP, maxPerIP)
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		counted := ip // per address, unless a trusted proxy's
		if a, err := netip.ParseAddr(ip); err == nil && l.proxies.Trusted(a) {
			counted = ""
		}
		if reason := l.admit(counted); reason != "" {
			c.Close()
			// One line per 100 refusals: a flood must not flood the log.
			if n := l.refused.Add(1); n%100 == 1 {
				l.log.Warn("connection refused", zap.String("reason", reason), zap.String("remote", ip), zap.Int64("refused_so_far", n))
			}
			continue
		}
		return &cappedConn{Conn: c, release: func() { l.release(counted) }}, nil
	}
}

// admit counts a new connection from ip, or says which cap it hits. A
// trusted proxy's ip is "" (counted in all only).
func (l *capListener) admit(ip string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxTotal > 0 && l.total >= l.maxTotal {
		return "max_connections (" + strconv.Itoa(l.maxTotal) + ") reached"
	}
	if ip != "" && l.maxPerIP > 0 && l.perIP[ip] >= l.maxPerIP {
		return "max_connections_per_ip (" + strconv.Itoa(l.maxPerIP) + ") reached"
	}
	l.total++
	if ip != "" {
		l.perIP[ip]++
	}
	return ""
}

// stats are the open connections, the total cap and the refusals so far
// (metrics, readiness).
func (l *capListener) stats() metrics.ConnStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return metrics.ConnStats{Open: l.total, Max: l.maxTotal, Refused: l.refused.Load()}
}

func (l *capListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if ip == "" {
		return
	}
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// cappedConn gives its place back once, at the first Close.
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// newLimiter is the bridge-wide rate limit: perSecond requests, burst at
// once (twice the rate when 0); nil when perSecond is 0 (no limit).
func newLimiter(perSecond float64, burst int) *rate.Limiter {
	if perSecond <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = max(1, int(2*perSecond))
	}
	return rate.NewLimiter(rate.Limit(perSecond), burst)
}

// rateLimit refuses a request over lim with Retry-After and refuse's
// answer (a SOAP fault on the SOAP endpoint, 429 elsewhere), saying what
// the limit is. A nil lim is no limit.
func rateLimit(lim *rate.Limiter, refuse func(c echo.Context, text string) error) echo.MiddlewareFunc {
	if lim == nil {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	text := fmt.Sprintf("rate limit exceeded: the bridge accepts at most %s requests per second; retry later",
		strconv.FormatFloat(float64(lim.Limit()), 'f', -1, 64))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if lim.Allow() {
				return next(c)
			}
			c.Response().Header().Set("Retry-After", "1")
			return refuse(c, text)
		}
	}
}
