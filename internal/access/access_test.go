package access

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClientAddrBelievesOnlyTrustedProxies(t *testing.T) {
	proxies, err := NewProxies("10.0.0.0/8, 192.168.1.1")
	require.NoError(t, err)
	g, err := NewGuard(nil, Options{Proxies: proxies})
	require.NoError(t, err)
	for _, c := range []struct{ remote, xff, want string }{
		{"203.0.113.9:5000", "", "203.0.113.9"},
		{"203.0.113.9:5000", "198.51.100.1", "203.0.113.9"},                     // not a proxy: header ignored
		{"10.1.2.3:5000", "198.51.100.1", "198.51.100.1"},                       // trusted proxy
		{"10.1.2.3:5000", "1.2.3.4, 198.51.100.1, 192.168.1.1", "198.51.100.1"}, // client-forged left part ignored
		{"10.1.2.3:5000", "junk, 198.51.100.1", "198.51.100.1"},
		{"10.1.2.3:5000", "198.51.100.1, junk", "10.1.2.3"},
		{"[::ffff:10.1.2.3]:5000", "198.51.100.7", "198.51.100.7"},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		a, ok := g.ClientAddr(r)
		require.True(t, ok)
		assert.Equal(t, c.want, a.String(), "%s / %s", c.remote, c.xff)
	}
}

func TestAdmit(t *testing.T) {
	g, err := NewGuard(map[int64]Rules{
		1: {AllowedNetworks: "198.51.100.0/24"},
		2: {BasicUser: "u", BasicPassword: "secret-pw"},
		3: {RateLimit: 1, RateBurst: 2},
		4: {},
	}, Options{Proxies: mustProxies(t, "10.0.0.1")})
	require.NoError(t, err)
	req := func(remote, xff, user, pw string) *http.Request {
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
	assert.NoError(t, g.Admit(req("198.51.100.7:1", "", "", ""), 1))
	assert.NoError(t, g.Admit(req("10.0.0.1:1", "198.51.100.7", "", ""), 1))
	err = g.Admit(req("10.0.0.2:1", "198.51.100.7", "", ""), 1)
	d, ok := IsDenied(err)
	require.True(t, ok)
	assert.Equal(t, "access denied: calls for goid 1 are not accepted from address 10.0.0.2", d.Msg)

	assert.NoError(t, g.Admit(req("1.1.1.1:1", "", "u", "secret-pw"), 2))
	for _, r := range []*http.Request{req("1.1.1.1:1", "", "u", "secret-p"), req("1.1.1.1:1", "", "", ""), req("1.1.1.1:1", "", "v", "secret-pw")} {
		err := g.Admit(r, 2)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "secret-pw")
	}

	// The rate is not the access rules': Admit never spends it, Spend
	// (once the core verified the call) does.
	for range 5 {
		assert.NoError(t, g.Admit(req("1.1.1.1:1", "", "", ""), 3))
	}
	assert.NoError(t, g.Spend(context.Background(), 3))
	assert.NoError(t, g.Spend(context.Background(), 3))
	d, ok = IsDenied(g.Spend(context.Background(), 3))
	require.True(t, ok)
	assert.True(t, d.RateLimit)
	assert.Equal(t, "rate limit exceeded: goid 3 may make at most 1 calls per second; retry later", d.Msg)
	for _, goid := range []int64{1, 2, 4, 99} {
		assert.NoError(t, g.Spend(context.Background(), goid), "goid %d has no rate limit", goid)
	}

	assert.NoError(t, g.Admit(req("1.1.1.1:1", "", "", ""), 4))
	assert.NoError(t, g.Admit(req("1.1.1.1:1", "", "", ""), 99), "an unknown goid is the core's to answer")
}

func TestRulesProblems(t *testing.T) {
	assert.Empty(t, Rules{AllowedNetworks: "10.0.0.0/8 ::1,192.0.2.1"}.Problems())
	ps := Rules{AllowedNetworks: "10.0.0.0/33", BasicUser: "a:b", RateLimit: -1}.Problems()
	require.Len(t, ps, 4)
	assert.Equal(t, "allowed_networks", ps[0].Field)
	assert.Equal(t, "basic_user", ps[1].Field) // user without password
	assert.True(t, Rules{}.Open())
	assert.False(t, Rules{AllowedNetworks: "::1"}.Open())
}

func mustProxies(t *testing.T, cidrs string) *Proxies {
	t.Helper()
	p, err := NewProxies(cidrs)
	require.NoError(t, err)
	return p
}

// A call carrying a rule set (WithRules) is judged by it alone, whatever
// is put in force meanwhile; Bind gives a new set the buckets in use
// without re-limiting them, Use re-limits them once the set is in force.
func TestPinnedRulesAndBind(t *testing.T) {
	g, err := NewGuard(map[int64]Rules{1: {AllowedNetworks: "10.0.0.0/8"}, 3: {RateLimit: 1, RateBurst: 1}}, Options{})
	require.NoError(t, err)
	pinned := g.Rules()
	next, err := Compile(map[int64]Rules{1: {AllowedNetworks: "192.168.0.0/16"}, 3: {RateLimit: 5, RateBurst: 1}})
	require.NoError(t, err)
	g.Bind(next)

	req := func(remote string) *http.Request {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = remote
		return r
	}
	ctx := WithRules(context.Background(), pinned)
	r := req("10.0.0.2:1").WithContext(ctx)
	require.NoError(t, g.Admit(r, 1), "bound, not in force: the pinned and the guard's rules are the old ones")
	require.NoError(t, g.Spend(ctx, 3))
	d, _ := IsDenied(g.Spend(WithRules(context.Background(), next), 3))
	require.NotNil(t, d, "the bucket is shared: the token the pinned call spent is gone under the new set too")
	assert.Equal(t, "rate limit exceeded: goid 3 may make at most 5 calls per second; retry later", d.Msg)

	g.Use(next)
	assert.NoError(t, g.Admit(r, 1), "a call pinned to the old set keeps it after the swap")
	assert.Error(t, g.Admit(req("10.0.0.2:1"), 1), "an unpinned call sees the set in force")
	d, _ = IsDenied(g.Spend(ctx, 3))
	require.NotNil(t, d)
	assert.Equal(t, "rate limit exceeded: goid 3 may make at most 1 calls per second; retry later", d.Msg, "judged by its own set's rate")
}
