// Package access decides who may call the SOAP endpoint for a merchant:
// the source networks a merchant's calls may come from (the client address,
// or the X-Forwarded-For address a trusted proxy vouches for), optional
// HTTP Basic credentials (with a limit on wrong ones per caller address,
// logins.go), and a per-merchant request rate that holds for the whole
// cluster of replicas (rates.go). The legacy
// protocol accepts the browser's paymentSession signature on refunds and
// voids, so anyone holding a customer's pay-full-v2 link could otherwise
// refund or void that payment; these rules close that without any change
// on the e-shop's side beyond its client's login settings.
//
// It knows HTTP requests but neither SOAP nor the legacy operations. The
// SOAP adapter asks it in two stages: Admit (networks, credentials) once it
// has decoded the goid of a call, before the core looks at the call; Spend
// (the rate) only once the core has verified the call's signature, so that
// a forged call never uses up a merchant's rate nor counts as its demand.
//
// A Guard lives as long as the process: a reload hands it new rules (Use),
// swapped in whole, while what must outlive a reload stays in tables keyed
// by goid or by address and is re-limited, not recreated: each merchant's
// token bucket (tokens kept), its demand count and its share of the
// cluster's rate (rates.go), and every address's count of wrong passwords
// (logins.go).
package access

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
	RateLimit bool   // refused by the rate limit rather than by who called
	Reason    string // Reason* below: why, as a bounded label
}

// Reasons of a Denied (the refusal counters' reason label).
const (
	ReasonNetwork          = "access_network"           // not from an allowed network
	ReasonNoCredentials    = "access_no_credentials"    // HTTP Basic credentials required, none sent
	ReasonWrongCredentials = "access_wrong_credentials" // wrong HTTP Basic credentials
	ReasonBlocked          = "access_blocked"           // the address sent too many wrong ones
	ReasonRateLimited      = "rate_limited"             // the merchant's rate limit
)

func (d *Denied) Error() string { return d.Msg }

// policy is one merchant's compiled rules.
type policy struct {
	nets   []netip.Prefix
	user   []byte
	pwHash [32]byte // compared as hashes: constant time whatever the lengths
	rate   float64  // calls per second; 0: no limit
	burst  int
	// bucket is the merchant's token bucket, from the Guard's long-lived
	// table (nil: no limit). Set when the rules are put in force (Use).
	bucket *bucket
}

// bucket is one merchant's rate state. It outlives the rules: a reload
// re-limits it (new rate and burst, tokens kept), it is never rebuilt.
type bucket struct {
	limiter *rate.Limiter
	// calls counts the calls that reached the rate check since the last
	// share of the rate (rates.go): this process's demand.
	calls atomic.Int64

	mu    sync.Mutex // rate, burst and share, and their setting on limiter
	rate  float64
	burst int
	share float64 // the part of the merchant's rate this process enforces
}

// RuleSet is every merchant's rules, compiled and validated whole
// (Compile); a Guard puts one in force at once (Use).
type RuleSet struct {
	policies map[int64]*policy
}

// Compile validates and compiles the rules by goid. Nothing is in force
// until a Guard uses the set.
func Compile(rules map[int64]Rules) (*RuleSet, error) {
	rs := &RuleSet{policies: map[int64]*policy{}}
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
			p.burst = r.RateBurst
			if p.burst <= 0 {
				p.burst = max(1, int(2*r.RateLimit))
			}
		}
		if len(p.nets) > 0 || p.user != nil || p.rate > 0 {
			rs.policies[goid] = p
		}
	}
	return rs, nil
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
func (p *Proxies) Any() bool { return p != nil && len(p.trusted) > 0 }

// Trusted reports whether a is a trusted proxy's address.
func (p *Proxies) Trusted(a netip.Addr) bool { return p != nil && contains(p.trusted, a.Unmap()) }

// Options are a Guard's settings beyond the merchants' rules.
type Options struct {
	// Proxies tells the caller's address (nil: the connection's peer).
	Proxies *Proxies
	// LoginFailuresPerMinute is how many refused HTTP Basic logins one
	// client address may make in a minute (logins.go); past them its calls
	// for merchants with credentials are refused without checking. 0: no
	// limit.
	LoginFailuresPerMinute int
	// OnLoginRefused, when set, is told of each login refused, with the
	// reason: LoginWrong or LoginBlocked. Called on the request path: it
	// must not block.
	OnLoginRefused func(reason string)
}

// Reasons OnLoginRefused is told.
const (
	LoginWrong   = "wrong"   // credentials given and wrong: counted against the address
	LoginBlocked = "blocked" // refused unchecked: the address made too many wrong ones
)

// Guard checks calls against every merchant's rules. Safe for concurrent
// use.
type Guard struct {
	*Proxies
	rules   atomic.Pointer[RuleSet] // in force: swapped whole by Use
	logins  *loginLimiter           // nil: no limit; long-lived, keyed by address
	onLogin func(string)

	mu sync.Mutex // serializes Use and AssumeReplicas; guards buckets and firstShare
	// buckets are the merchants' token buckets by goid, kept across rule
	// sets (a merchant removed and added again gets its bucket back).
	buckets    map[int64]*bucket
	firstShare float64 // a new bucket's share (AssumeReplicas); 1 by default
	share      sharing // rates.go
}

// NewGuard compiles the rules by goid and puts them in force.
func NewGuard(rules map[int64]Rules, o Options) (*Guard, error) {
	if o.Proxies == nil {
		o.Proxies = &Proxies{}
	}
	if o.LoginFailuresPerMinute < 0 {
		return nil, fmt.Errorf("login failures per minute: %d is negative", o.LoginFailuresPerMinute)
	}
	rs, err := Compile(rules)
	if err != nil {
		return nil, err
	}
	g := &Guard{Proxies: o.Proxies, onLogin: o.OnLoginRefused, buckets: map[int64]*bucket{}, firstShare: 1}
	if o.LoginFailuresPerMinute > 0 {
		g.logins = newLoginLimiter(o.LoginFailuresPerMinute)
	}
	if g.onLogin == nil {
		g.onLogin = func(string) {}
	}
	g.Use(rs)
	return g, nil
}

// Bind prepares rs for this Guard before it is put in force anywhere (a
// reload binds the set it builds, then swaps it in, then calls Use): each
// limited merchant's policy gets its long-lived token bucket, the one it
// had (tokens, demand count and share carried) or, for a merchant new to
// the Guard, a full one at the share AssumeReplicas set. Nothing in force
// changes: a bucket already used keeps its rate until Use.
func (g *Guard) Bind(rs *RuleSet) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bind(rs)
}

func (g *Guard) bind(rs *RuleSet) {
	for goid, p := range rs.policies {
		if p.rate <= 0 || p.bucket != nil { // set once: a set used again already has it (buckets are never replaced)
			continue
		}
		b := g.buckets[goid]
		if b == nil {
			b = &bucket{limiter: rate.NewLimiter(rate.Limit(p.rate), p.burst), share: g.firstShare}
			b.relimit(p.rate, p.burst)
			g.buckets[goid] = b
		}
		p.bucket = b
	}
}

// Use puts rs in force for the calls that carry no rules (WithRules): one
// atomic swap. It binds rs if Bind was not called, and re-limits the
// merchants' buckets to rs's rates and bursts, keeping their tokens, their
// demand count and their share. The counts of wrong passwords are the
// Guard's and stay as they are. rs may be used again (a refused reload
// puts the set in force back), by this Guard only.
func (g *Guard) Use(rs *RuleSet) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bind(rs)
	for _, p := range rs.policies {
		if p.bucket != nil {
			p.bucket.relimit(p.rate, p.burst)
		}
	}
	g.rules.Store(rs)
}

type rulesKey struct{}

// WithRules returns ctx carrying rs (bound to the Guard): a call checked
// with it is judged by rs alone, whatever a reload puts in force meanwhile.
func WithRules(ctx context.Context, rs *RuleSet) context.Context {
	if rs == nil {
		return ctx
	}
	return context.WithValue(ctx, rulesKey{}, rs)
}

// rulesFor is the rule set of the call behind ctx: the one it carries, else
// the one in force.
func (g *Guard) rulesFor(ctx context.Context) *RuleSet {
	if ctx != nil {
		if rs, ok := ctx.Value(rulesKey{}).(*RuleSet); ok {
			return rs
		}
	}
	return g.rules.Load()
}

// Rules is the rule set in force: what a refused reload puts back (Use).
func (g *Guard) Rules() *RuleSet { return g.rules.Load() }

// relimit makes b enforce its share of rate and burst; its tokens stay
// (no more than the new burst).
func (b *bucket) relimit(r float64, burst int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rate, b.burst = r, burst
	b.apply()
}

// Admit checks the access rules of a call for goid arriving as req: the
// networks, then the credentials. A goid without rules (or not configured
// at all: the core answers for it) is admitted. An address that made too
// many wrong logins is refused before its credentials are compared. The
// rate is not Admit's: it is spent (Spend) once the call is verified.
func (g *Guard) Admit(req *http.Request, goid int64) error {
	p := g.rulesFor(req.Context()).policies[goid]
	if p == nil {
		return nil
	}
	addr, known := g.ClientAddr(req)
	if len(p.nets) > 0 {
		if !known || !contains(p.nets, addr) {
			shown := "unknown"
			if known {
				shown = addr.String()
			}
			return &Denied{GoID: goid, Reason: ReasonNetwork, Msg: "access denied: calls for goid " + strconv.FormatInt(goid, 10) +
				" are not accepted from address " + shown}
		}
	}
	if p.user != nil {
		if g.logins != nil && known && g.logins.blocked(addr) {
			g.onLogin(LoginBlocked)
			return &Denied{GoID: goid, Reason: ReasonBlocked, Msg: "access denied: too many wrong HTTP Basic credentials from address " + addr.String() +
				"; credentials from it are not checked for a while, retry in a minute"}
		}
		u, pw, ok := req.BasicAuth()
		h := sha256.Sum256([]byte(pw))
		userOK := subtle.ConstantTimeCompare([]byte(u), p.user)
		pwOK := subtle.ConstantTimeCompare(h[:], p.pwHash[:])
		if !ok {
			return &Denied{GoID: goid, Reason: ReasonNoCredentials, Msg: "access denied: HTTP Basic credentials required for goid " + strconv.FormatInt(goid, 10)}
		}
		if userOK&pwOK != 1 {
			if g.logins != nil && known {
				g.logins.failed(addr)
			}
			g.onLogin(LoginWrong)
			return &Denied{GoID: goid, Reason: ReasonWrongCredentials, Msg: "access denied: wrong HTTP Basic credentials for goid " + strconv.FormatInt(goid, 10)}
		}
	}
	return nil
}

// Spend takes one call from goid's rate and counts it as this process's
// demand (rates.go), or refuses the call when the rate is used up. Only a
// call whose signature verified may spend: whatever a stranger sends
// then neither uses up the merchant's rate nor moves the cluster's shares.
func (g *Guard) Spend(ctx context.Context, goid int64) error {
	p := g.rulesFor(ctx).policies[goid]
	if p == nil || p.bucket == nil {
		return nil
	}
	p.bucket.calls.Add(1)
	if !p.bucket.limiter.Allow() {
		return &Denied{GoID: goid, RateLimit: true, Reason: ReasonRateLimited, Msg: "rate limit exceeded: goid " + strconv.FormatInt(goid, 10) +
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
	if !p.Trusted(peer) {
		return peer, true
	}
	hops := strings.Split(strings.Join(req.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer, true // a malformed hop: believe nothing further left
		}
		a = a.Unmap()
		if !p.Trusted(a) {
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
	if err == nil {
		return nil, false // before d: the target of errors.As lives on the heap
	}
	var d *Denied
	ok := errors.As(err, &d)
	return d, ok
}
