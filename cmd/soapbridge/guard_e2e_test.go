package main

// The access guard through the running binary: a forged call (a signature
// that does not verify) uses up none of a merchant's rate, neither in one
// process nor in the cluster's shares; a reload (SIGHUP) carries over what
// must outlive it: a stranger's block for wrong Basic passwords, a
// merchant's drained token bucket and the busy replica's share of the
// rate. The rates and the login allowance are so low that nothing refills
// while a test runs: the tests count calls, they never time them.

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// forgedStatusBody is a paymentStatus call for goid whose signature does
// not verify: what a stranger can send.
func forgedStatusBody(goid string) string {
	return `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">` + str("encryptedSignature", "00") +
		long("paymentSessionId", "3000000001") + long("targetGoId", goid) + `</paymentSessionInfo>`
}

// statusBody is the shop's correctly signed paymentStatus of payment id.
func statusBody(t *testing.T, id string) string {
	body := strings.Replace(sessionInfoBody(t, mustInt(t, id)), "<sessionInfo ", "<paymentSessionInfo ", 1)
	return strings.Replace(body, "</sessionInfo>", "</paymentSessionInfo>", 1)
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	_, err := fmt.Sscan(s, &n)
	require.NoError(t, err)
	return n
}

// rateRefused reports whether a is the rate limit's fault for the demo
// merchant.
func rateRefused(a answer) bool {
	return strings.HasPrefix(a.fault, "rate limit exceeded: goid "+demoGoID)
}

// guardConfig is a config file of the demo merchant (rate-limited, no
// other rule) and shop B (HTTP Basic credentials).
func guardConfig(t *testing.T, path string, rate float64, burst int) {
	t.Helper()
	body := fmt.Sprintf("merchants:\n"+
		"  - goid: %s\n    client_id: %s\n    client_secret: %s\n    secure_key: %s\n    rate_limit: %g\n    rate_burst: %d\n"+
		"  - goid: 8123456790\n    client_id: shop-b\n    client_secret: shop-b-secret\n    secure_key: %s\n"+
		"    basic_user: shop\n    basic_password: %s\n",
		demoGoID, demoClientID, demoClientSecret, demoSecureKey, rate, burst, shopBKey, testBasicPassword)
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(body), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// One process. A stranger's forged calls are answered (refused as forged)
// and leave the shop's rate whole; the shop's own calls use it up.
func TestForgedCallsSpendNoRate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "guard.yaml")
	guardConfig(t, path, 0.01, 3)
	b := startBridge(t, withConfigFile(path))
	id := createFor(t, b.URL, demoCfgMerchant, "FORGED-1") // one of the 3 calls at once

	for i := range 10 {
		a := soapAs(t, b.SOAPURL, "127.0.0.2", "", "", "paymentStatus", forgedStatusBody(demoGoID))
		require.Empty(t, a.fault, "forged call %d: refused as forged, by a reply, not by the rate", i)
	}
	for i := range 2 {
		a := soapAs(t, b.SOAPURL, "127.0.0.1", "", "", "paymentStatus", statusBody(t, id))
		require.Empty(t, a.fault, "the shop's signed call %d after 10 forged ones is admitted", i)
	}
	a := soapAs(t, b.SOAPURL, "127.0.0.1", "", "", "paymentStatus", statusBody(t, id))
	assert.Equal(t, "rate limit exceeded: goid "+demoGoID+" may make at most 0.01 calls per second; retry later", a.fault,
		"the shop's own calls use its rate up")
	b.Stop()
	assert.Equal(t, 10, countLines(b, `"request refused"`, `"goid":`+demoGoID, "invalid encryptedSignature"), "each forged call refused as forged")
}

// One process. The shop uses its rate up and a stranger tries a wrong
// Basic password for shop B; a reload that raises the rate keeps the
// drained bucket drained (under the new rate: no fresh burst per reload),
// and keeps the stranger blocked, right password included; shop B, from
// its own address, gets in.
func TestReloadKeepsTheGuard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "guard.yaml")
	guardConfig(t, path, 0.01, 3)
	b := startBridge(t, withConfigFile(path), withEnv("SOAPBRIDGE_BASIC_AUTH_FAILURES_PER_MINUTE=1"))
	const shop, stranger = "127.0.0.1", "127.0.0.2"
	id := createFor(t, b.URL, demoCfgMerchant, "GUARD-1")
	for range 2 {
		require.Empty(t, soapAs(t, b.SOAPURL, shop, "", "", "paymentStatus", statusBody(t, id)).fault)
	}
	a := soapAs(t, b.SOAPURL, shop, "", "", "paymentStatus", statusBody(t, id))
	require.Equal(t, "rate limit exceeded: goid "+demoGoID+" may make at most 0.01 calls per second; retry later", a.fault)

	shopB := forgedStatusBody("8123456790") // refused before the signature matters
	assert.Equal(t, "access denied: wrong HTTP Basic credentials for goid 8123456790",
		soapAs(t, b.SOAPURL, stranger, "shop", "guess", "paymentStatus", shopB).fault)
	blocked := "access denied: too many wrong HTTP Basic credentials from address " + stranger +
		"; credentials from it are not checked for a while, retry in a minute"
	require.Equal(t, blocked, soapAs(t, b.SOAPURL, stranger, "shop", testBasicPassword, "paymentStatus", shopB).fault)

	// The reload re-limits: twice the rate, a larger burst.
	guardConfig(t, path, 0.02, 4)
	b.signal(syscall.SIGHUP)
	b.waitLog(1, "configuration reloaded", `"changed":[`+demoGoID+`]`)

	a = soapAs(t, b.SOAPURL, shop, "", "", "paymentStatus", statusBody(t, id))
	assert.Equal(t, "rate limit exceeded: goid "+demoGoID+" may make at most 0.02 calls per second; retry later", a.fault,
		"the drained bucket is carried over, under the new rate")
	assert.Equal(t, blocked, soapAs(t, b.SOAPURL, stranger, "shop", testBasicPassword, "paymentStatus", shopB).fault,
		"the stranger's block is carried over")
	assert.NotContains(t, soapAs(t, b.SOAPURL, shop, "shop", testBasicPassword, "paymentStatus", shopB).fault, "access denied",
		"shop B's own address is not blocked")
}

// Two replicas on one PostgreSQL. A stranger's forged calls at replica 0
// count as no demand: replica 1 keeps (at least) half the rate, and the
// shop calling there gets its share's burst. Then the shop keeps replica 1
// busy until it holds nearly the whole rate; a reload of replica 1 keeps
// that share (it used to post a demand of 0 and start again at 1/2).
func TestForgedCallsAndReloadKeepTheClusterShares(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	gw := startGatewaySandbox(t)
	cfgFile := filepath.Join(t.TempDir(), "rate.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("merchants:\n  - goid: "+demoGoID+"\n    rate_limit: 4\n    rate_burst: 10\n"), 0o600))
	env := withEnv("SOAPBRIDGE_CONFIG="+cfgFile, "SOAPBRIDGE_GATEWAY_URL="+gw.URL+"/api", "SOAPBRIDGE_MAX_REPLICAS=2",
		"SOAPBRIDGE_LOG_LEVEL=info")
	replicas := []*bridgeProc{startBridge(t, withDB(dsn), env), startBridge(t, withDB(dsn), env)}
	for _, b := range replicas {
		waitLog(t, b, "per-merchant rate limits shared by the replicas on PostgreSQL")
	}
	waitBothPosted(t, dsn)
	r0, r1 := replicas[0], replicas[1]
	id := createFor(t, r1.URL, demoCfgMerchant, "SHARE-1")
	share := func(b *bridgeProc) float64 {
		_, text := adminGet(t, b.AdminURL+"/metrics")
		return metricValue(t, text, "soapbridge_rate_share", `goid="`+demoGoID+`"`)
	}

	// The stranger's forged calls at r0, for three posts of both replicas.
	stop := make(chan struct{})
	var forged, forgedLimited atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if a := soapAs(t, r0.SOAPURL, "127.0.0.2", "", "", "paymentStatus", forgedStatusBody(demoGoID)); rateRefused(a) {
					forgedLimited.Add(1)
				}
				forged.Add(1)
			}
		})
	}
	waitPosts(t, dsn, 3)
	close(stop)
	wg.Wait()
	t.Logf("%d forged calls at r0 (%d refused by the rate); shares r0 %.3f, r1 %.3f", forged.Load(), forgedLimited.Load(), share(r0), share(r1))
	require.Greater(t, forged.Load(), int64(20))
	assert.Zero(t, forgedLimited.Load(), "a forged call is refused as forged, not by the rate")
	assert.GreaterOrEqual(t, share(r1), 0.5-1e-9, "r1 keeps at least half the rate")
	admitted := 0
	for range 5 {
		if a := soapAs(t, r1.SOAPURL, "127.0.0.1", "", "", "paymentStatus", statusBody(t, id)); !rateRefused(a) {
			require.Empty(t, a.fault)
			admitted++
		}
	}
	t.Logf("the shop's 5 calls at once at r1: %d admitted", admitted)
	// Half the burst of 10 at once, one of it used by the payment's
	// creation (however little has refilled since).
	assert.GreaterOrEqual(t, admitted, 4, "the shop at r1 gets its share's burst")

	// The shop keeps r1 busy until r1 holds nearly the whole rate.
	stop = make(chan struct{})
	var shopCalls atomic.Int64
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := soapAs(t, r1.SOAPURL, "127.0.0.1", "", "", "paymentStatus", statusBody(t, id))
				assert.True(t, a.fault == "" || rateRefused(a), "fault %q", a.fault)
				shopCalls.Add(1)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for share(r1) < 0.9 {
		require.True(t, time.Now().Before(deadline), "r1's share did not reach 0.9 under the shop's load (%.3f)", share(r1))
		time.Sleep(100 * time.Millisecond)
	}
	before := share(r1)
	r1.signal(syscall.SIGHUP)
	r1.waitLog(1, "configuration reloaded")
	after := share(r1)
	t.Logf("r1's share %.3f before its reload, %.3f after (%d shop calls)", before, after, shopCalls.Load())
	assert.Greater(t, after, 0.8, "the busy replica's share is carried over a reload, not reset to 1/2")
}

// waitPosts waits until every replica posting to rate_demand has posted n
// times more (the database's clock: no margin of this one's).
func waitPosts(t *testing.T, dsn string, n int) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for range n {
		var since time.Time
		require.NoError(t, db.QueryRow(`SELECT now()`).Scan(&since))
		for {
			var oldest sql.NullTime
			require.NoError(t, db.QueryRow(`SELECT min(seen_at) FROM rate_demand`).Scan(&oldest))
			if oldest.Valid && oldest.Time.After(since) {
				break
			}
			require.True(t, time.Now().Before(deadline), "the replicas did not post %d times", n)
			time.Sleep(100 * time.Millisecond)
		}
	}
}
