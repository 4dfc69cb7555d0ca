package main

// Deploys that no shop notices (docs/operations.md#upgrades): two
// replicas on one PostgreSQL schema behind a real HAProxy that checks the
// admin /readyz every second (fall 2), one sandbox gateway process, shops
// running createPayment → pay → paymentStatus → a partial refund sent
// twice (the shop's repeat after a lost reply) → a second partial refund,
// all through the balancer, while
//   - TestRollingRestartNoFailedCall restarts one replica after the other
//     with SIGTERM (shutdown_delay 3s: the replica leaves the balancer
//     before it closes anything);
//   - TestRollingUpgradeFromPreviousRelease replaces replicas of the
//     previous release (9d7c50c, schema version 3, built from git) with
//     this one, one at a time, old and new serving side by side.
// Both: no failed call, and at the gateway every payment refunded exactly
// twice (the repeat moved no money, whichever release answered it). The
// order of events is set by what the replicas answered, not by sleeps.

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
)

// previousRelease is the release before this one (schema version 3): it
// keys the ledger by the signed digest with the key and locks refunds
// with a ledger entry.
const previousRelease = "9d7c50c14823d7e0875830e1cb654b5e6795b36f"

// previousReleaseBinary builds cmd/soapbridge of previousRelease from this
// repository's git history (git archive into a temporary tree, go build
// there: the module cache has its modules), cached by commit under the
// user's cache directory so that later runs pay nothing. Without git or
// the commit (a shallow clone) the test is skipped, failing under CI=true.
func previousReleaseBinary(t *testing.T) string {
	t.Helper()
	git := testenv.LookPath(t, "git", "apt-get install git")
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "soapbridge-e2e", previousRelease, "soapbridge")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if out, err := exec.Command(git, "cat-file", "-e", previousRelease+"^{commit}").CombinedOutput(); err != nil {
		testenv.Missing(t, "the previous release's commit "+previousRelease[:7]+" in git ("+strings.TrimSpace(string(out))+")",
			"git fetch --unshallow")
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", fmt.Sprintf("%s archive %s | tar -x -C %s", git, previousRelease, src))
	archive.Dir = "../.."
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", previousRelease[:7], err, out)
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	tmp := bin + ".tmp"
	build := exec.Command("go", "build", "-o", tmp, "./cmd/soapbridge")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of %s: %v\n%s", previousRelease[:7], err, out)
	}
	require.NoError(t, os.Rename(tmp, bin))
	return bin
}

// slot is one replica's place behind the balancer: fixed ports, so that
// a replica started again (or replaced) comes back where HAProxy looks.
type slot struct {
	name, port, admin string
	b                 *bridgeProc
}

// startIn runs bin in s on dsn against the gateway gw. current: this
// release (it knows shutdown_delay); else the previous one.
func (s *slot) startIn(t *testing.T, bin, dsn, gw, lb string, current bool) {
	t.Helper()
	b := &bridgeProc{URL: "http://127.0.0.1:" + s.port, AdminURL: "http://127.0.0.1:" + s.admin, SandboxURL: gw,
		t: t, log: &syncBuffer{}, done: make(chan struct{})}
	b.SOAPURL = b.URL + soapPath
	env := []string{
		"SOAPBRIDGE_LISTEN=127.0.0.1:" + s.port,
		"SOAPBRIDGE_ADMIN_LISTEN=127.0.0.1:" + s.admin,
		"SOAPBRIDGE_PUBLIC_URL=" + lb,
		"SOAPBRIDGE_DATABASE=" + dsn,
		"SOAPBRIDGE_GATEWAY_URL=" + gw + "/api",
		"SOAPBRIDGE_GOID=" + demoGoID,
		"SOAPBRIDGE_CLIENT_ID=" + demoClientID,
		"SOAPBRIDGE_CLIENT_SECRET=" + demoClientSecret,
		"SOAPBRIDGE_SECURE_KEY=" + demoSecureKey,
		"SOAPBRIDGE_MAX_CONNECTIONS_PER_IP=0",
		"SOAPBRIDGE_LOG_BUFFER=0",
	}
	if current {
		env = append(env, "SOAPBRIDGE_SHUTDOWN_DELAY=3s", "SOAPBRIDGE_MAX_REPLICAS=4")
	}
	b.cmd = exec.Command(bin)
	b.cmd.Env = append(envWithout("SOAPBRIDGE_"), env...)
	b.cmd.Dir = t.TempDir()
	b.cmd.Stdout, b.cmd.Stderr = b.log, b.log
	require.NoError(t, b.cmd.Start())
	go func() { b.waitErr = b.cmd.Wait(); close(b.done) }()
	if err := waitHealthy(b.AdminURL+"/readyz", b.done); err != nil {
		_ = b.cmd.Process.Kill()
		<-b.done
		t.Fatalf("%s: %v\n%s", s.name, err, b.log.String())
	}
	t.Cleanup(func() {
		if !b.stopped {
			b.Stop()
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", s.name, b.log.String())
		}
	})
	s.b = b
}

// stop sends SIGTERM and waits for a clean exit.
func (s *slot) stop(t *testing.T) {
	t.Helper()
	s.b.Stop()
	require.NoError(t, s.b.waitErr, "%s exits 0 after SIGTERM", s.name)
}

// drainHAProxy balances over slots, round robin, checking each replica's
// admin /readyz every second (fall 2, rise 2), retrying only connection
// failures, with a runtime socket for the operator's steps.
func drainHAProxy(t *testing.T, bin, port string, slots []*slot) (*haproxyProc, string) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	var servers strings.Builder
	for _, s := range slots {
		fmt.Fprintf(&servers, "  server %s 127.0.0.1:%s check port %s\n", s.name, s.port, s.admin)
	}
	cfg := `global
  log stdout format raw local0
  maxconn 2000
  stats socket ` + sock + ` level admin
defaults
  mode http
  log global
  timeout connect 1s
  timeout client 60s
  timeout server 60s
  retries 3
  option redispatch
frontend soap
  bind 127.0.0.1:` + port + `
  http-request capture req.hdr(X-Request-Id) len 64
  log-format "%s %ST %tsc %HP %hr"
  default_backend bridges
backend bridges
  balance roundrobin
  option httpchk GET /readyz
  http-response set-header X-Served-By %s
  default-server check inter 1s fall 2 rise 2
` + servers.String()
	h := runHAProxy(t, bin, dir, port, cfg)
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "haproxy listens")
	return h, sock
}

// haproxyCommand sends one runtime API command (the operator's socat).
func haproxyCommand(t *testing.T, sock, cmd string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte(cmd + "\n"))
	require.NoError(t, err)
	buf := make([]byte, 4096)
	n, _ := c.Read(buf)
	require.Empty(t, strings.TrimSpace(string(buf[:n])), "haproxy %q", cmd)
}

func plainCreateBody(t *testing.T, shopURL, order string) string {
	f := false
	sig := sign(t, operations.PaymentCommandFields{TargetGoID: demoGoID, ProductName: "Konvice", TotalPrice: "45900", Currency: "CZK",
		OrderNumber: order, FailedURL: shopURL + "/ko", SuccessURL: shopURL + "/ok",
		PreAuthorization: operations.FormatBool(&f), RecurrentPayment: operations.FormatBool(&f), PaymentChannels: ""}.Fields()...)
	return `<paymentCommand xsi:type="ns2:EPaymentCommand">` + str("currency", "CZK") +
		str("encryptedSignature", sig) + str("failedURL", shopURL+"/ko") + str("orderNumber", order) +
		`<preAuthorization xsi:type="xsd:boolean">false</preAuthorization>` + str("productName", "Konvice") +
		`<recurrentPayment xsi:type="xsd:boolean">false</recurrentPayment>` + str("successURL", shopURL+"/ok") +
		long("targetGoId", demoGoID) + long("totalPrice", "45900") + `</paymentCommand>`
}

// shopTraffic runs shops through the balancer until stop: each buys,
// its customer pays, it reads the status, refunds one item twice (the
// repeat of a lost reply) and another item once.
type shopTraffic struct {
	t        *testing.T
	lb, gw   string
	stopped  atomic.Bool
	wg       sync.WaitGroup
	mu       sync.Mutex
	calls    int
	failures []string
	served   map[string]int
	payments []int64
}

func startShops(t *testing.T, lb, gw string, shops int) *shopTraffic {
	s := &shopTraffic{t: t, lb: lb, gw: gw, served: map[string]int{}}
	for w := range shops {
		s.wg.Go(func() {
			for n := 0; !s.stopped.Load(); n++ {
				s.shop(fmt.Sprintf("dr-%d-%d", w, n))
			}
		})
	}
	return s
}

// call posts one operation and records who served it, or the failure.
func (s *shopTraffic) call(op, body, rid string, check func(doc string) error) (string, bool) {
	doc, by, err := lbSOAPServed(s.lb, op, body, rid)
	var text string
	if err == nil {
		text = flowText(doc, "result")
		if check != nil {
			err = check(text)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if err != nil {
		s.failures = append(s.failures, fmt.Sprintf("%s %s: %v", rid, op, err))
		return "", false
	}
	s.served[by]++
	if op == "createPayment" {
		return flowText(doc, "paymentSessionId"), true
	}
	return text, true
}

func (s *shopTraffic) shop(order string) {
	t := s.t
	finished := func(r string) error {
		if r != "FINISHED" {
			return fmt.Errorf("result %q", r)
		}
		return nil
	}
	ids, ok := s.call("createPayment", plainCreateBody(t, "http://shop.invalid", order), order+"-create", func(r string) error {
		if r != "CALL_COMPLETED" {
			return fmt.Errorf("result %q", r)
		}
		return nil
	})
	if !ok {
		return
	}
	resp, err := lbClient.Post(s.gw+"/sandbox/payments/"+ids+"/pay", "application/json",
		strings.NewReader(`{"outcome":"success","instrument":"PAYMENT_CARD"}`))
	if err != nil || resp.StatusCode != 200 {
		s.mu.Lock()
		s.failures = append(s.failures, fmt.Sprintf("%s pay at the gateway: %v", order, err))
		s.mu.Unlock()
		return
	}
	resp.Body.Close()
	var id int64
	fmt.Sscan(ids, &id) //nolint:errcheck // checked by the refunds below
	if _, ok := s.call("paymentStatus", paymentStatusBody(t, ids), order+"-status", nil); !ok {
		return
	}
	s.mu.Lock()
	s.payments = append(s.payments, id)
	s.mu.Unlock()
	first := refundRequestBody(t, id, 1000, "item 1")
	s.call("partiallyRefundPayment", first, order+"-refund1", finished)
	s.call("partiallyRefundPayment", first, order+"-refund1-repeat", finished)
	s.call("partiallyRefundPayment", refundRequestBody(t, id, 2000, "item 2"), order+"-refund2", finished)
}

func (s *shopTraffic) servedBy(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[name]
}

// waitServed waits until replica name has answered n more calls than now:
// the balancer sends it traffic.
func (s *shopTraffic) waitServed(t *testing.T, name string, n int) {
	t.Helper()
	from := s.servedBy(name)
	require.Eventually(t, func() bool { return s.servedBy(name) >= from+n }, time.Minute, 10*time.Millisecond,
		"%s answers calls through the balancer", name)
}

// finish stops the shops and checks: no failed call, every payment
// refunded exactly twice at the gateway (the repeat moved nothing).
func (s *shopTraffic) finish(t *testing.T, began time.Time) {
	t.Helper()
	s.stopped.Store(true)
	s.wg.Wait()
	gw := restbackend.New(restbackend.Config{BaseURL: s.gw + "/api"})
	cr := restbackend.Credentials{ClientID: demoClientID, ClientSecret: demoClientSecret}
	twice, wrong := 0, 0
	for _, id := range s.payments {
		h, err := gw.RefundHistory(context.Background(), cr, id)
		require.NoError(t, err)
		switch {
		case len(h) == 2:
			twice++
		default:
			wrong++
			t.Errorf("payment %d refunded %d times at the gateway, want 2", id, len(h))
		}
	}
	t.Logf("%d calls through HAProxy in %v, %d failed; answered per replica %v; %d payments, each refunded twice at the gateway: %d",
		s.calls, time.Since(began).Round(time.Millisecond), len(s.failures), s.served, len(s.payments), twice)
	for _, f := range s.failures {
		t.Errorf("failed call: %s", f)
	}
	assert.Positive(t, len(s.payments))
	assert.Zero(t, wrong)
}

// TestRollingRestartNoFailedCall: SIGTERM one replica, wait for it to
// exit, start it again, wait until the balancer sends it calls, then the
// other; no call fails (each replica fails /readyz at once and serves for
// shutdown_delay, closing connections after each reply, before it closes
// its listener).
func TestRollingRestartNoFailedCall(t *testing.T) {
	hapBin := testenv.LookPath(t, "haproxy", "apt-get install haproxy")
	dsn := testenv.PostgresSchema(t)
	gw := startGatewaySandbox(t)
	ports := freePorts(t, 5)
	lb := "http://127.0.0.1:" + ports[4]
	slots := []*slot{{name: "r0", port: ports[0], admin: ports[1]}, {name: "r1", port: ports[2], admin: ports[3]}}
	bin := bridgeBinary(t)
	for _, s := range slots {
		s.startIn(t, bin, dsn, gw.URL, lb, true)
	}
	_, _ = drainHAProxy(t, hapBin, ports[4], slots)
	began := time.Now()
	shops := startShops(t, lb, gw.URL, 4)
	defer func() { shops.stopped.Store(true); shops.wg.Wait() }()
	for _, s := range slots {
		shops.waitServed(t, s.name, 20)
	}
	for _, s := range slots {
		s.stop(t)
		assert.Contains(t, s.b.log.String(), `"msg":"draining: not ready, still serving"`)
		s.startIn(t, bin, dsn, gw.URL, lb, true)
		shops.waitServed(t, s.name, 20)
	}
	shops.finish(t, began)
}

// TestRollingUpgradeFromPreviousRelease: two replicas of the previous
// release, then, one at a time, one is taken out of the balancer (the
// previous release does not drain on its own: the runbook's step), stopped
// and replaced by this release, which migrates the schema while the other
// old one serves on it; repeats of refunds land on either release. No call
// fails and no money moves twice.
func TestRollingUpgradeFromPreviousRelease(t *testing.T) {
	hapBin := testenv.LookPath(t, "haproxy", "apt-get install haproxy")
	dsn := testenv.PostgresSchema(t)
	old := previousReleaseBinary(t)
	gw := startGatewaySandbox(t)
	ports := freePorts(t, 5)
	lb := "http://127.0.0.1:" + ports[4]
	slots := []*slot{{name: "r0", port: ports[0], admin: ports[1]}, {name: "r1", port: ports[2], admin: ports[3]}}
	for _, s := range slots {
		s.startIn(t, old, dsn, gw.URL, lb, false)
	}
	_, sock := drainHAProxy(t, hapBin, ports[4], slots)
	bin := bridgeBinary(t)
	began := time.Now()
	shops := startShops(t, lb, gw.URL, 4)
	defer func() { shops.stopped.Store(true); shops.wg.Wait() }()
	for _, s := range slots {
		shops.waitServed(t, s.name, 20)
	}
	for i, s := range slots {
		other := slots[1-i]
		haproxyCommand(t, sock, "disable server bridges/"+s.name)
		shops.waitServed(t, other.name, 10) // the balancer sends everything to the other one
		s.stop(t)
		s.startIn(t, bin, dsn, gw.URL, lb, true)
		haproxyCommand(t, sock, "enable server bridges/"+s.name)
		shops.waitServed(t, s.name, 150) // old and new side by side
	}
	shops.finish(t, began)
	for _, s := range slots {
		assert.NotContains(t, s.b.log.String(), "money-moving calls are refused")
	}
}

// incompatibleReplicas reads soapbridge_replicas_incompatible from a
// replica's metrics.
func incompatibleReplicas(t *testing.T, b *bridgeProc) string {
	_, text := adminGet(t, b.AdminURL+"/metrics")
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, "soapbridge_replicas_incompatible "); ok {
			return v
		}
	}
	return "absent"
}

// TestReplicaOfAnotherReleaseHoldsMoneyCalls: a replica of a release this
// one may not run beside (its row in the replicas table says it needs
// schema version 999 or later of its peers) makes this one refuse refunds
// with a clear fault, log it and export it, while createPayment goes on;
// once that replica is gone, refunds act again. The foreign row's
// heartbeat lies in the future, so it stays live however slow the run.
func TestReplicaOfAnotherReleaseHoldsMoneyCalls(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	e := newMoneyEnv(t, "5s", "10s", withDB(dsn))
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	id := e.payment("plain")
	require.Equal(t, "0", incompatibleReplicas(t, e.b))

	_, err = db.Exec(`INSERT INTO replicas (id, release, schema_version, runs_beside, host, heartbeat_at)
		VALUES ('next/1/test', 'v-next', 1000, 999, 'elsewhere', now() + interval '1 hour')`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return incompatibleReplicas(t, e.b) == "1" }, time.Minute, 100*time.Millisecond,
		"the next heartbeat finds the replica it may not serve beside")
	a := e.soap("partiallyRefundPayment", refundRequestBody(t, id, 1000, "held"))
	assert.Contains(t, a.fault, "may not run side by side: money-moving calls are refused", a.String())
	assert.Zero(t, e.refunds(id), "nothing refunded")
	assert.Equal(t, "CALL_COMPLETED", e.soap("createPayment", plainCreateBody(t, "http://shop.invalid", "HOLD-1")).String(),
		"createPayment moves no money: it goes on")
	assert.Contains(t, e.b.log.String(), `a replica this one may not serve beside is live`)
	assert.Contains(t, e.b.log.String(), `next/1/test (release v-next, schema version 1000, runs beside 999)`)

	_, err = db.Exec(`DELETE FROM replicas WHERE id = 'next/1/test'`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return incompatibleReplicas(t, e.b) == "0" }, time.Minute, 100*time.Millisecond)
	a = e.soap("partiallyRefundPayment", refundRequestBody(t, id, 1000, "held"))
	assert.Equal(t, "FINISHED", a.String(), "served again: the refund repeated acts once")
	assert.Equal(t, 1, e.refunds(id))
}
