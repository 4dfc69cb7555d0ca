package access

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

func basicReq(remote, xff, user, pw string) *http.Request {
	r := httptest.NewRequest("POST", "/", nil)
	r.RemoteAddr = remote
	if xff != "" {
		r.Header.Set("X-Forwarded-For", xff)
	}
	if user != "" {
		r.SetBasicAuth(user, pw)
	}
	return r
}

// Wrong credentials count against the caller's address (behind a trusted
// proxy, the client it names; an IPv6 caller by its /64); once used up,
// the address is refused before its credentials are compared, right ones
// included, and every refusal is reported. Other addresses, and missing
// credentials, are not affected.
func TestLoginFailuresBlockTheAddress(t *testing.T) {
	var mu sync.Mutex
	reasons := map[string]int{}
	g, err := NewGuard(map[int64]Rules{2: {BasicUser: "u", BasicPassword: "secret-pw"}}, Options{
		Proxies: mustProxies(t, "10.0.0.1"), LoginFailuresPerMinute: 3,
		OnLoginRefused: func(r string) { mu.Lock(); reasons[r]++; mu.Unlock() },
	})
	require.NoError(t, err)
	wrong := func(remote, xff string) error { return g.Admit(basicReq(remote, xff, "u", "guess"), 2) }
	right := func(remote, xff string) error { return g.Admit(basicReq(remote, xff, "u", "secret-pw"), 2) }

	for range 5 {
		d, ok := IsDenied(g.Admit(basicReq("203.0.113.9:1", "", "", ""), 2))
		require.True(t, ok)
		assert.Equal(t, "access denied: HTTP Basic credentials required for goid 2", d.Msg)
	}
	for range 3 {
		d, ok := IsDenied(wrong("203.0.113.9:1", ""))
		require.True(t, ok)
		assert.Equal(t, "access denied: wrong HTTP Basic credentials for goid 2", d.Msg)
	}
	for _, call := range []func(string, string) error{wrong, right} {
		d, ok := IsDenied(call("203.0.113.9:2", ""))
		require.True(t, ok)
		assert.Equal(t, "access denied: too many wrong HTTP Basic credentials from address 203.0.113.9; credentials from it "+
			"are not checked for a while, retry in a minute", d.Msg)
	}
	assert.NoError(t, right("203.0.113.10:1", ""), "another address")
	assert.Equal(t, map[string]int{LoginWrong: 3, LoginBlocked: 2}, reasons)

	// Behind the trusted proxy each client counts on its own.
	for range 3 {
		require.Error(t, wrong("10.0.0.1:5", "198.51.100.1"))
	}
	_, ok := IsDenied(right("10.0.0.1:5", "198.51.100.1"))
	assert.True(t, ok, "the client behind the proxy is blocked")
	assert.NoError(t, right("10.0.0.1:5", "198.51.100.2"), "not the proxy, nor its other clients")

	// IPv6: one /64 counts as one.
	for _, a := range []string{"[2001:db8::1]:1", "[2001:db8::2]:1", "[2001:db8::3]:1"} {
		require.Error(t, wrong(a, ""))
	}
	assert.Error(t, right("[2001:db8::99]:1", ""))
	assert.NoError(t, right("[2001:db8:0:1::1]:1", ""))

	// Without a limit nothing is blocked.
	open, err := NewGuard(map[int64]Rules{2: {BasicUser: "u", BasicPassword: "secret-pw"}}, Options{})
	require.NoError(t, err)
	for range 10 {
		require.Error(t, open.Admit(basicReq("203.0.113.9:1", "", "u", "guess"), 2))
	}
	assert.NoError(t, open.Admit(basicReq("203.0.113.9:1", "", "u", "secret-pw"), 2))
}

// The limiter tracks a bounded number of addresses: past the bound, the
// addresses whose allowance is whole are forgotten, and past the hard cap
// new addresses share one allowance.
func TestLoginLimiterBounded(t *testing.T) {
	l := newLoginLimiter(2)
	a := func(i int) netipAddr { return addrN(i) }
	for i := range maxTracked {
		l.failed(a(i))
	}
	assert.Len(t, l.addrs, maxTracked)
	l.failed(a(maxTracked)) // none is whole again yet: all kept
	assert.Len(t, l.addrs, maxTracked+1)
	assert.False(t, l.blocked(a(1)), "one failure of two")
	l.failed(a(1))
	assert.True(t, l.blocked(a(1)))
}

// Two replicas share a merchant's rate: with no demand evenly, with all
// the demand on one, nearly all of it there after a few posts, the shares
// never summing to more than one; a share grows by half the way at each
// post and shrinks at once.
func TestRateSharesFollowDemand(t *testing.T) {
	board := newFakeBoard()
	rules := map[int64]Rules{7: {RateLimit: 10, RateBurst: 10}, 8: {BasicUser: "u", BasicPassword: "p"}}
	a, err := NewGuard(rules, Options{})
	require.NoError(t, err)
	b, err := NewGuard(rules, Options{})
	require.NoError(t, err)
	assert.Equal(t, []int64{7}, a.RateLimited())
	ctx := context.Background()

	a.AssumeReplicas(4)
	assert.InDelta(t, 0.25, a.RateShare(7), 1e-9, "before the cluster is known")
	require.NoError(t, a.ShareRates(ctx, board.of("a")))
	assert.InDelta(t, 0.625, a.RateShare(7), 1e-9, "alone: half the way to the whole rate")
	require.NoError(t, b.ShareRates(ctx, board.of("b")))
	assert.InDelta(t, 0.5, b.RateShare(7), 1e-9, "shrunk at once")
	require.NoError(t, a.ShareRates(ctx, board.of("a")))
	assert.InDelta(t, 0.5, a.RateShare(7), 1e-9)
	assert.InDelta(t, 5, float64(limiterOf(a, 7).Limit()), 1e-9)
	assert.Equal(t, 5, limiterOf(a, 7).Burst())

	// A shop whose calls all reach a.
	prev := a.RateShare(7)
	for round := range 5 {
		admitted := 0
		for range 50 {
			if a.Spend(context.Background(), 7) == nil {
				admitted++
			}
		}
		assert.LessOrEqual(t, admitted, limiterOf(a, 7).Burst()+1, "round %d: a's bucket holds at most its burst", round)
		require.NoError(t, a.ShareRates(ctx, board.of("a")))
		require.NoError(t, b.ShareRates(ctx, board.of("b")))
		assert.Greater(t, a.RateShare(7), prev, "round %d: a's share grows", round)
		assert.LessOrEqual(t, a.RateShare(7)+b.RateShare(7), 1.0+1e-9, "round %d: never more than the rate in all", round)
		prev = a.RateShare(7)
	}
	assert.Greater(t, a.RateShare(7), 0.97)
	assert.Less(t, b.RateShare(7), 0.01)
	assert.Equal(t, 1, limiterOf(b, 7).Burst(), "at least one call at once")

	// a is gone (its posts expire): b grows towards the whole rate.
	board.forget("a")
	before := b.RateShare(7)
	require.NoError(t, b.ShareRates(ctx, board.of("b")))
	assert.InDelta(t, before+(1-before)/2, b.RateShare(7), 1e-9)
	assert.Equal(t, 1.0, b.RateShare(8), "no rate limit: no share")
}

func limiterOf(g *Guard, goid int64) *rate.Limiter {
	return g.rules.Load().policies[goid].bucket.limiter
}

// fakeBoard is the shared table, in memory.
type fakeBoard struct {
	mu    sync.Mutex
	posts map[string]map[int64]float64
}

func newFakeBoard() *fakeBoard { return &fakeBoard{posts: map[string]map[int64]float64{}} }

func (f *fakeBoard) of(replica string) RateBoard {
	return func(_ context.Context, demand map[int64]float64) (map[int64]ClusterDemand, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.posts[replica] = demand
		out := map[int64]ClusterDemand{}
		for _, ds := range f.posts {
			for goid, d := range ds {
				c := out[goid]
				c.Replicas++
				c.Demand += d
				out[goid] = c
			}
		}
		return out, nil
	}
}

func (f *fakeBoard) forget(replica string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.posts, replica)
}

type netipAddr = netip.Addr

// addrN is the i-th address of 10.0.0.0/8.
func addrN(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
}

// A reload hands the Guard new rules (Use): what must outlive it is
// carried over, re-limited and not recreated. A drained bucket stays
// drained under its new rate and burst, a blocked address stays blocked
// whatever the new credentials, the shares and the demand counted since
// the last post stay; a merchant new to the Guard starts full at the
// share of an unknown cluster. Rules that do not compile change nothing.
// (The rates are such that no token comes back while the test runs.)
func TestUseCarriesStateOver(t *testing.T) {
	g, err := NewGuard(map[int64]Rules{
		7: {RateLimit: 0.001, RateBurst: 2},
		2: {BasicUser: "u", BasicPassword: "secret-pw"},
	}, Options{LoginFailuresPerMinute: 1})
	require.NoError(t, err)
	g.AssumeReplicas(2)
	board := newFakeBoard()
	ctx := context.Background()
	require.NoError(t, g.ShareRates(ctx, board.of("a"))) // alone: 0.5 → 0.75
	require.InDelta(t, 0.75, g.RateShare(7), 1e-9)
	assert.Equal(t, 2, limiterOf(g, 7).Burst())          // round(2 × 0.75)
	require.NoError(t, g.Spend(context.Background(), 7)) // the one token left of round(2 × 0.5) at the start
	_, limited := IsDenied(g.Spend(context.Background(), 7))
	require.True(t, limited, "drained")
	stranger := "203.0.113.66:1"
	_, denied := IsDenied(g.Admit(basicReq(stranger, "", "u", "guess"), 2))
	require.True(t, denied)

	_, err = Compile(map[int64]Rules{7: {RateLimit: -1}})
	require.Error(t, err)
	rs, err := Compile(map[int64]Rules{
		7: {RateLimit: 0.002, RateBurst: 4},
		2: {BasicUser: "u", BasicPassword: "new-pw"},
		9: {RateLimit: 0.001, RateBurst: 4},
	})
	require.NoError(t, err)
	g.Use(rs)

	d, limited := IsDenied(g.Spend(context.Background(), 7))
	require.True(t, limited, "the drained bucket is still drained")
	assert.Equal(t, "rate limit exceeded: goid 7 may make at most 0.002 calls per second; retry later", d.Msg, "under the new rate")
	assert.InDelta(t, 0.75, g.RateShare(7), 1e-9, "the share is carried over")
	assert.Equal(t, 3, limiterOf(g, 7).Burst(), "the new burst, at the share: round(4 × 0.75)")
	assert.InDelta(t, 0.5, g.RateShare(9), 1e-9, "a new merchant starts at 1/max_replicas")
	assert.NoError(t, g.Spend(context.Background(), 9))
	assert.NoError(t, g.Spend(context.Background(), 9), "and full: 2 of round(4 × 0.5)")
	d, denied = IsDenied(g.Admit(basicReq(stranger, "", "u", "new-pw"), 2))
	require.True(t, denied)
	assert.Contains(t, d.Msg, "too many wrong HTTP Basic credentials from address 203.0.113.66", "still blocked")
	assert.NoError(t, g.Admit(basicReq("198.51.100.10:1", "", "u", "new-pw"), 2), "the shop, with the new password")

	// The demand counted before the reload is posted after it: 3 calls of
	// goid 7 reached the rate check, 2 of goid 9.
	var posted map[int64]float64
	require.NoError(t, g.ShareRates(ctx, func(_ context.Context, demand map[int64]float64) (map[int64]ClusterDemand, error) {
		posted = demand
		return nil, nil
	}))
	require.Contains(t, posted, int64(7))
	assert.Positive(t, posted[7], "the calls counted before the reload are this replica's demand")
	assert.Positive(t, posted[9])

	// A merchant the next rules drop, then bring back, gets its bucket back.
	rs2, err := Compile(map[int64]Rules{9: {RateLimit: 0.001, RateBurst: 4}})
	require.NoError(t, err)
	g.Use(rs2)
	assert.Equal(t, []int64{9}, g.RateLimited())
	assert.NoError(t, g.Spend(context.Background(), 7), "no limit while goid 7 has none")
	g.Use(rs)
	_, limited = IsDenied(g.Spend(context.Background(), 7))
	assert.True(t, limited, "its drained bucket is back")
}

// Calls checked and spent while reloads swap the rules and the shares are
// posted (run under -race): every call sees one rule set whole.
func TestUseWhileServing(t *testing.T) {
	a := map[int64]Rules{7: {RateLimit: 1000, RateBurst: 10}, 2: {BasicUser: "u", BasicPassword: "p"}}
	b := map[int64]Rules{7: {RateLimit: 500, RateBurst: 5}, 9: {RateLimit: 1}}
	g, err := NewGuard(a, Options{LoginFailuresPerMinute: 5})
	require.NoError(t, err)
	ra, err := Compile(a)
	require.NoError(t, err)
	rb, err := Compile(b)
	require.NoError(t, err)
	board := newFakeBoard()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = g.Admit(basicReq("203.0.113.9:1", "", "u", "guess"), 2)
				_ = g.Spend(context.Background(), 7)
				_ = g.Spend(context.Background(), 9)
				_ = g.RateShares()
			}
		})
	}
	for i := range 200 {
		if i%2 == 0 {
			g.Use(rb)
		} else {
			g.Use(ra)
		}
		require.NoError(t, g.ShareRates(context.Background(), board.of("a")))
	}
	close(stop)
	wg.Wait()
	assert.Equal(t, []int64{7}, g.RateLimited(), "the last set in force")
}
