// Package access decides who may call the SOAP endpoint for a merchant:
// the source networks a merchant's calls may come from (the client address,
// or the X-Forwarded-For address a trusted proxy vouches for), optional
// HTTP Basic credentials, and a per-merchant request rate. The legacy
// protocol accepts the browser's paymentSession signature on refunds and
// voids, so anyone holding a customer's pay-full-v2 link could otherwise
// refund or void that payment; these rules close that without any change
// on the e-shop's side beyond its client's login settings.
//
// It knows HTTP requests but neither SOAP nor the legacy operations: the
// SOAP adapter asks it once it has decoded the goid of a call.
package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/time/rate"
)

// Rules are one merchant's caller rules as configured (yaml tags: the
// config file's merchant keys). Zero rules admit anyone, unlimited.
type Rules struct {
	// AllowedNetworks lists CIDRs (or single addresses), separated by
	// commas or spaces, that SOAP calls for the merchant may come from.
	AllowedNetworks string `yaml:"allowed_networks"`
	// BasicUser and BasicPassword, when set, are required as HTTP Basic
	// credentials on every SOAP call for the merchant.
	BasicUser     string `yaml:"basic_user"`
	BasicPassword string `yaml:"basic_password"`
	// RateLimit is the merchant's SOAP calls per second (0: no limit);
	// RateBurst the calls accepted at once above it (0: twice the rate).
	RateLimit float64 `yaml:"rate_limit"`
	RateBurst int     `yaml:"rate_burst"`
}

// Open reports whether r neither restricts networks nor asks for
// credentials: anyone holding a payment's browser signature may then refund
// or void it.
func (r Rules) Open() bool { return r.AllowedNetworks == "" && r.BasicUser == "" }

// Problem is one thing wrong with Rules: the key and a message that
// never quotes the password.
type Problem struct{ Field, Msg string }

// Problems lists what is wrong with r.
func (r Rules) Problems() []Problem {
	var ps []Problem
	if _, err := ParseNetworks(r.AllowedNetworks); err != nil {
		ps = append(ps, Problem{"allowed_networks", "allowed networks: " + err.Error()})
	}
	if (r.BasicUser == "") != (r.BasicPassword == "") {
		ps = append(ps, Problem{"basic_user", "basic_user and basic_password are set together or not at all"})
	}
	if strings.Contains(r.BasicUser, ":") {
		ps = append(ps, Problem{"basic_user", "basic_user must not contain ':' (HTTP Basic cannot carry it)"})
	}
	if r.RateLimit < 0 || r.RateBurst < 0 {
		ps = append(ps, Problem{"rate_limit", "rate_limit and rate_burst must not be negative (0: no limit)"})
	}
	return ps
}

// ParseNetworks parses a list of CIDRs or addresses separated by commas or
// spaces; a bare address is a single-host network.
func ParseNetworks(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR (10.0.0.0/8) or an address", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// Denied is a call refused by the rules. Msg is safe to show the caller
// and to log: it names the goid and the reason, never a credential.
type Denied struct {
	GoID      int64
	Msg       string
	RateLimit bool // refused by the rate limit rather than by who called
}

func (d *Denied) Error() string { return d.Msg }

// policy is one merchant's compiled rules.
type policy struct {
	nets    []netip.Prefix
	user    []byte
	pwHash  [32]byte // compared as hashes: constant time whatever the lengths
	limiter *rate.Limiter
	rate    float64
}

// Proxies tells the address a request comes from: the connection's peer,
// or the client a trusted proxy (a load balancer in front of the bridge)
// names in X-Forwarded-For. The zero value trusts no proxy.
type Proxies struct {
	trusted []netip.Prefix
}

// NewProxies trusts the networks of trustedProxies (ParseNetworks).
func NewProxies(trustedProxies string) (*Proxies, error) {
	trusted, err := ParseNetworks(trustedProxies)
	if err != nil {
		return nil, fmt.Errorf("trusted_proxies: %w", err)
	}
	return &Proxies{trusted: trusted}, nil
}

// Any reports whether any proxy is trusted.
func (p *Proxies) Any() bool { return len(p.trusted) > 0 }

// Trusted reports whether a is a trusted proxy's address.
func (p *Proxies) Trusted(a netip.Addr) bool { return contains(p.trusted, a.Unmap()) }

// Guard checks calls against every merchant's rules. Safe for concurrent
// use.
type Guard struct {
	*Proxies
	policies map[int64]*policy
}

// NewGuard compiles the rules by goid; trustedProxies are the networks
// whose X-Forwarded-For header is believed.
func NewGuard(rules map[int64]Rules, trustedProxies string) (*Guard, error) {
	proxies, err := NewProxies(trustedProxies)
	if err != nil {
		return nil, err
	}
	g := &Guard{Proxies: proxies, policies: map[int64]*policy{}}
	for goid, r := range rules {
		if ps := r.Problems(); len(ps) > 0 {
			return nil, fmt.Errorf("merchant %d: %s", goid, ps[0].Msg)
		}
		p := &policy{rate: r.RateLimit}
		p.nets, _ = ParseNetworks(r.AllowedNetworks)
		if r.BasicUser != "" {
			p.user = []byte(r.BasicUser)
			p.pwHash = sha256.Sum256([]byte(r.BasicPassword))
		}
		if r.RateLimit > 0 {
			burst := r.RateBurst
			if burst <= 0 {
				burst = max(1, int(2*r.RateLimit))
			}
			p.limiter = rate.NewLimiter(rate.Limit(r.RateLimit), burst)
		}
		if len(p.nets) > 0 || p.user != nil || p.limiter != nil {
			g.policies[goid] = p
		}
	}
	return g, nil
}

// Admit checks a call for goid arriving as req. A goid without rules (or
// not configured at all: the core answers for it) is admitted. The order
// is network, credentials, rate: a refused caller does not use up the
// merchant's rate.
func (g *Guard) Admit(req *http.Request, goid int64) error {
	p := g.policies[goid]
	if p == nil {
		return nil
	}
	if len(p.nets) > 0 {
		addr, ok := g.ClientAddr(req)
		if !ok || !contains(p.nets, addr) {
			shown := "unknown"
			if ok {
				shown = addr.String()
			}
			return &Denied{GoID: goid, Msg: "access denied: calls for goid " + strconv.FormatInt(goid, 10) +
				" are not accepted from address " + shown}
		}
	}
	if p.user != nil {
		u, pw, ok := req.BasicAuth()
		h := sha256.Sum256([]byte(pw))
		userOK := subtle.ConstantTimeCompare([]byte(u), p.user)
		pwOK := subtle.ConstantTimeCompare(h[:], p.pwHash[:])
		if !ok || userOK&pwOK != 1 {
			msg := "access denied: wrong HTTP Basic credentials for goid "
			if !ok {
				msg = "access denied: HTTP Basic credentials required for goid "
			}
			return &Denied{GoID: goid, Msg: msg + strconv.FormatInt(goid, 10)}
		}
	}
	if p.limiter != nil && !p.limiter.Allow() {
		return &Denied{GoID: goid, RateLimit: true, Msg: "rate limit exceeded: goid " + strconv.FormatInt(goid, 10) +
			" may make at most " + strconv.FormatFloat(p.rate, 'f', -1, 64) + " calls per second; retry later"}
	}
	return nil
}

// ClientAddr is the address a request comes from: the connection's peer,
// or, when the peer is a trusted proxy, the rightmost X-Forwarded-For
// address that is not itself a trusted proxy (a client can prepend
// anything to the header; only what trusted proxies appended counts).
func (p *Proxies) ClientAddr(req *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	peer = peer.Unmap()
	if !contains(p.trusted, peer) {
		return peer, true
	}
	hops := strings.Split(strings.Join(req.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer, true // a malformed hop: believe nothing further left
		}
		a = a.Unmap()
		if !contains(p.trusted, a) {
			return a, true
		}
		peer = a
	}
	return peer, true
}

func contains(nets []netip.Prefix, a netip.Addr) bool {
	for _, p := range nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// IsDenied reports whether err is a refusal by the rules.
func IsDenied(err error) (*Denied, bool) {
	var d *Denied
	ok := errors.As(err, &d)
	return d, ok
}
