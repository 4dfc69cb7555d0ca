package access

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Tracking bounds of the refused-login limiter: past maxTracked addresses
// the ones whose allowance is whole again are forgotten; past maxAddrs
// (an attacker with very many addresses) new addresses share one
// allowance.
const (
	maxTracked = 10000
	maxAddrs   = 65536
)

// loginLimiter counts refused HTTP Basic logins per client address: each
// address may make perMinute of them at once, and one more every
// 60/perMinute seconds (a token bucket). An address that used them up is
// refused without its credentials being compared, so guessing a
// merchant's password runs at that pace whatever the attacker sends. An
// IPv6 client counts by its /64, the block one subscriber gets. Per
// process: behind a balancer each replica counts on its own.
//
// Why per address and not per merchant: a merchant's allowance used up by
// a stranger would lock the merchant's own shop out.
type loginLimiter struct {
	every rate.Limit
	burst int

	mu       sync.Mutex
	addrs    map[netip.Addr]*rate.Limiter
	overflow *rate.Limiter
}

func newLoginLimiter(perMinute int) *loginLimiter {
	every := rate.Limit(float64(perMinute) / 60)
	return &loginLimiter{every: every, burst: perMinute, addrs: map[netip.Addr]*rate.Limiter{},
		overflow: rate.NewLimiter(every, perMinute)}
}

// key is the unit an address counts under: itself, or its /64.
func loginKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// blocked reports whether a has no refused login left: its next one would
// be over the limit.
func (l *loginLimiter) blocked(a netip.Addr) bool {
	l.mu.Lock()
	lim := l.addrs[loginKey(a)]
	if lim == nil && len(l.addrs) >= maxAddrs {
		lim = l.overflow
	}
	l.mu.Unlock()
	return lim != nil && lim.Tokens() < 1
}

// failed counts a refused login of a.
func (l *loginLimiter) failed(a netip.Addr) {
	k := loginKey(a)
	l.mu.Lock()
	lim := l.addrs[k]
	if lim == nil {
		if len(l.addrs) >= maxTracked {
			l.forgetWhole()
		}
		if len(l.addrs) < maxAddrs {
			lim = rate.NewLimiter(l.every, l.burst)
			l.addrs[k] = lim
		} else {
			lim = l.overflow
		}
	}
	l.mu.Unlock()
	lim.Allow()
}

// forgetWhole drops the addresses whose allowance has refilled: they
// behave as new ones. Called with mu held.
func (l *loginLimiter) forgetWhole() {
	now := time.Now()
	for k, lim := range l.addrs {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.addrs, k)
		}
	}
}
