package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// The Kustomize base's settings behind a real balancer (HAProxy, adding
// X-Forwarded-For as an ingress does): per-address cap off, the
// balancer's address in trusted_proxies. A stranger's wrong Basic
// passwords through the balancer block the stranger, and the shop, behind
// the same balancer from another address, still gets in with its right
// ones. Without trusted_proxies the same settings are refused at start,
// naming the settings, instead of locking the shop out.
func TestIngressStrangerDoesNotLockOutShop(t *testing.T) {
	hapBin := testenv.LookPath(t, "haproxy", "apt-get install haproxy")
	basic := []string{"SOAPBRIDGE_BASIC_USER=shop", "SOAPBRIDGE_BASIC_PASSWORD=" + testBasicPassword,
		"SOAPBRIDGE_MAX_CONNECTIONS_PER_IP=0"}

	// Started as the server; killed after a minute if it serves instead.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bridgeBinary(t))
	cmd.Env = append(envWithout("SOAPBRIDGE_"), append([]string{"SOAPBRIDGE_SANDBOX=true", "SOAPBRIDGE_LISTEN=127.0.0.1:0",
		"SOAPBRIDGE_SANDBOX_LISTEN=127.0.0.1:0", "SOAPBRIDGE_ADMIN_LISTEN=off",
		"SOAPBRIDGE_DATABASE=" + filepath.Join(t.TempDir(), "bridge.db")}, basic...)...)
	cmd.Dir = t.TempDir()
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	require.Error(t, err, "the bridge must refuse to start: %s", out)
	require.NoError(t, ctx.Err(), "the bridge served instead of refusing")
	assert.Contains(t, out, "max_connections_per_ip is 0 (as behind a load balancer) but trusted_proxies is empty, and merchant(s) "+demoGoID)
	assert.Contains(t, out, "SOAPBRIDGE_TRUSTED_PROXIES")
	assert.NotContains(t, out, testBasicPassword)

	b := startBridge(t, withEnv(append(basic, "SOAPBRIDGE_TRUSTED_PROXIES=127.0.0.1")...))
	lbPort := freePorts(t, 1)[0]
	hap := startHAProxy(t, hapBin, lbPort, []*bridgeProc{b})
	lb := hap.URL + soapPath
	const stranger, shop = "127.0.0.66", "127.0.0.10" // Linux routes all of 127/8 to loopback
	status := paymentStatusBody(t, "3000000001")
	for range 11 { // the default basic_auth_failures_per_minute is 10
		a := soapAs(t, lb, stranger, "shop", "guess", "paymentStatus", status)
		require.True(t, strings.HasPrefix(a.fault, "access denied:"), a.fault)
	}
	blocked := soapAs(t, lb, stranger, "shop", testBasicPassword, "paymentStatus", status)
	assert.Equal(t, "access denied: too many wrong HTTP Basic credentials from address "+stranger+
		"; credentials from it are not checked for a while, retry in a minute", blocked.fault, "the stranger is blocked, by its own address")
	for range 3 {
		a := soapAs(t, lb, shop, "shop", testBasicPassword, "paymentStatus", status)
		assert.NotContains(t, a.fault, "access denied", "the shop behind the same balancer gets in")
	}
	b.Stop()
	assert.Contains(t, b.log.String(), `"client_ip":"`+shop+`"`, "the bridge saw the shop's own address")
	assert.NotContains(t, b.log.String(), testBasicPassword)
}
