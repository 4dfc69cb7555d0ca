package main

// Scale-out, shown: three bridge processes on one PostgreSQL schema behind a
// real HAProxy (round robin, loopback), one sandbox gateway process, a test
// e-shop. A payment lives across replicas; SOAP load runs through the
// balancer while one replica is killed with SIGKILL.

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/operations"
)

// haproxyProc is a running HAProxy in the foreground, logging one line per
// request to stdout: "<server> <status> <termination state> <path> {<X-Request-Id>}".
type haproxyProc struct {
	URL  string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// startHAProxy balances port over the replicas, round robin, with health
// checks on /healthz every 200 ms. A connection refused by a dead replica is
// tried again on another one (retries + redispatch: the request never reached
// a bridge, so nothing can act twice); a request a replica dies holding is
// not retried (a capture might have happened): the client gets a 502 or a
// closed connection.
func startHAProxy(t *testing.T, bin, port string, replicas []*bridgeProc) *haproxyProc {
	t.Helper()
	var servers strings.Builder
	for i, b := range replicas {
		fmt.Fprintf(&servers, "  server r%d %s\n", i, strings.TrimPrefix(b.URL, "http://"))
	}
	cfg := `global
  log stdout format raw local0
  maxconn 2000
defaults
  mode http
  log global
  timeout connect 1s
  timeout client 60s
  timeout server 60s
  retries 3
  option redispatch
  # As an ingress does: the bridges name the caller from it when
  # trusted_proxies lists the balancer.
  option forwardfor
frontend soap
  bind 127.0.0.1:` + port + `
  http-request capture req.hdr(X-Request-Id) len 64
  log-format "%s %ST %tsc %HP %hr"
  default_backend bridges
backend bridges
  balance roundrobin
  option httpchk GET /healthz
  http-response set-header X-Served-By %s
  default-server check inter 200ms fall 1 rise 2
` + servers.String()
	h := runHAProxy(t, bin, t.TempDir(), port, cfg)
	if err := waitHealthy(h.URL+"/healthz", h.done); err != nil {
		t.Fatalf("haproxy: %v\n%s", err, h.log.String())
	}
	return h
}

// runHAProxy checks cfg (haproxy -c), then runs HAProxy on it in the
// foreground, its log kept and shown when the test fails; it is stopped
// (SIGTERM, then killed after 10 s) at the test's end.
func runHAProxy(t *testing.T, bin, dir, port, cfg string) *haproxyProc {
	t.Helper()
	path := filepath.Join(dir, "haproxy.cfg")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	if out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, cfg)
	}
	h := &haproxyProc{URL: "http://127.0.0.1:" + port, log: &syncBuffer{}, done: make(chan struct{})}
	h.cmd = exec.Command(bin, "-db", "-f", path)
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	require.NoError(t, h.cmd.Start())
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.done
		}
		if t.Failed() {
			t.Logf("haproxy log:\n%s", h.log.String())
		}
	})
	return h
}

// hapLine is one request in HAProxy's log.
type hapLine struct {
	server, state, path, requestID string
	status                         int
}

func (h *haproxyProc) lines(t *testing.T) []hapLine {
	t.Helper()
	var out []hapLine
	sc := bufio.NewScanner(strings.NewReader(h.log.String()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 || !strings.HasPrefix(f[4], "{") {
			continue // start-up and health-check messages
		}
		status, err := strconv.Atoi(f[1])
		require.NoError(t, err, sc.Text())
		out = append(out, hapLine{server: f[0], status: status, state: f[2], path: f[3], requestID: strings.Trim(f[4], "{}")})
	}
	return out
}

// lbClient keeps connections to the balancer open between calls, as a
// shop's PHP-FPM pool would.
var lbClient = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// failure is a call through the balancer that failed, and when.
type failure struct {
	what       string
	start, end time.Time
	err        error
}

// lbSOAPServed is lbSOAP that also returns the replica HAProxy chose
// (its X-Served-By header).
func lbSOAPServed(url, op, body, requestID string) (*etree.Document, string, error) {
	var by string
	doc, err := lbSOAPHeader(url, op, body, requestID, func(h http.Header) { by = h.Get("X-Served-By") })
	return doc, by, err
}

// lbSOAP posts one operation with a request id of the caller's choosing,
// so the replica that served it can be found in the access logs.
func lbSOAP(url, op, body, requestID string) (*etree.Document, error) {
	return lbSOAPHeader(url, op, body, requestID, func(http.Header) {})
}

func lbSOAPHeader(url, op, body, requestID string, header func(http.Header)) (*etree.Document, error) {
	env := `<?xml version="1.0" encoding="UTF-8"?>` +
		`<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" ` +
		`xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` +
		`xmlns:ns2="http://gate.gopay.cz/ws" xmlns:xsd="http://www.w3.org/2001/XMLSchema" SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">` +
		`<SOAP-ENV:Body><ns1:` + op + `>` + body + `</ns1:` + op + `></SOAP-ENV:Body></SOAP-ENV:Envelope>`
	req, err := http.NewRequest(http.MethodPost, url+soapPath, strings.NewReader(env))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	req.Header.Set("X-Request-Id", requestID)
	resp, err := lbClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	header(resp.Header)
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %.200s", op, resp.StatusCode, raw)
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if f := doc.FindElement("//faultstring"); f != nil {
		return nil, fmt.Errorf("%s: fault %s", op, f.Text())
	}
	return doc, nil
}

// servedBy is the index of the replica whose access log has the SOAP call
// with requestID, or -1.
func servedBy(t *testing.T, replicas []*bridgeProc, requestID string) int {
	t.Helper()
	found := -1
	for i, b := range replicas {
		for line := range strings.SplitSeq(b.log.String(), "\n") {
			if strings.Contains(line, `"request_id":"`+requestID+`"`) && strings.Contains(line, `"path":"`+soapPath+`"`) {
				require.Equal(t, -1, found, "call %s served twice", requestID)
				found = i
				break
			}
		}
	}
	return found
}

// countLines counts the log lines of a replica containing every part.
func countLines(b *bridgeProc, parts ...string) int {
	n := 0
	for line := range strings.SplitSeq(b.log.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

func preauthCreateBody(t *testing.T, shopURL, order string) string {
	tr, f := true, false
	sig := sign(t, operations.PaymentCommandFields{TargetGoID: demoGoID, ProductName: "Konvice", TotalPrice: "45900", Currency: "CZK",
		OrderNumber: order, FailedURL: shopURL + "/ko", SuccessURL: shopURL + "/ok",
		PreAuthorization: operations.FormatBool(&tr), RecurrentPayment: operations.FormatBool(&f), PaymentChannels: ""}.Fields()...)
	return `<paymentCommand xsi:type="ns2:EPaymentCommand">` + str("currency", "CZK") +
		str("encryptedSignature", sig) + str("failedURL", shopURL+"/ko") + str("orderNumber", order) +
		`<preAuthorization xsi:type="xsd:boolean">true</preAuthorization>` + str("productName", "Konvice") +
		`<recurrentPayment xsi:type="xsd:boolean">false</recurrentPayment>` + str("successURL", shopURL+"/ok") +
		long("targetGoId", demoGoID) + long("totalPrice", "45900") + `</paymentCommand>`
}

func paymentStatusBody(t *testing.T, id string) string {
	return `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">` +
		str("encryptedSignature", sign(t, operations.PaymentSessionFields(demoGoID, id)...)) +
		long("paymentSessionId", id) + long("targetGoId", demoGoID) + `</paymentSessionInfo>`
}

func TestThreeReplicasBehindHAProxy(t *testing.T) {
	hapBin := testenv.LookPath(t, "haproxy", "apt-get install haproxy")
	dsn := testenv.PostgresSchema(t)
	gw := startGatewaySandbox(t)
	shop := newFlowShop(t)
	lbPort := freePorts(t, 1)[0]
	lb := "http://127.0.0.1:" + lbPort
	// The public URL is the balancer's: the gateway's callbacks are balanced
	// like the shops' calls. Every connection comes from HAProxy's address,
	// so the per-address cap is off, as behind any proxy.
	env := withEnv("SOAPBRIDGE_GATEWAY_URL="+gw.URL+"/api", "SOAPBRIDGE_NOTIFICATION_URL="+shop.srv.URL+"/notify",
		"SOAPBRIDGE_PUBLIC_URL="+lb, "SOAPBRIDGE_MAX_CONNECTIONS_PER_IP=0")
	replicas := make([]*bridgeProc, 3)
	for i := range replicas {
		replicas[i] = startBridge(t, withDB(dsn), env)
	}
	hap := startHAProxy(t, hapBin, lbPort, replicas)
	shop.setBridge(lb)
	notified := 0 // notifications the e-shop received

	// One payment across the replicas, one step at a time through the
	// balancer: created, paid by the customer at the gateway, captured,
	// refunded; each change notified.
	id := func() string {
		doc, err := lbSOAP(lb, "createPayment", preauthCreateBody(t, shop.srv.URL, "HA-1"), "ha-create")
		require.NoError(t, err)
		require.Equal(t, "CALL_COMPLETED", flowText(doc, "result"), flowText(doc, "resultDescription"))
		return flowText(doc, "paymentSessionId")
	}()
	flowPay(t, gw.URL, id)
	shop.waitNotification(t, id)
	notified++
	for _, step := range []struct{ op, rid string }{{"capturePayment", "ha-capture"}, {"refundPayment", "ha-refund"}} {
		n, _ := strconv.ParseInt(id, 10, 64)
		doc, err := lbSOAP(lb, step.op, sessionInfoBody(t, n), step.rid)
		require.NoError(t, err, step.op)
		require.Equal(t, "FINISHED", flowText(doc, "result"), "%s: %s", step.op, flowText(doc, "resultDescription"))
		shop.waitNotification(t, id)
		notified++
	}
	doc, err := lbSOAP(lb, "paymentStatus", paymentStatusBody(t, id), "ha-status")
	require.NoError(t, err)
	assert.Equal(t, "REFUNDED", flowText(doc, "sessionState"))
	assert.Equal(t, "Konvice", flowText(doc, "productName"), "the session written by one replica is read by another")

	created, captured, refunded := servedBy(t, replicas, "ha-create"), servedBy(t, replicas, "ha-capture"), servedBy(t, replicas, "ha-refund")
	require.NotEqual(t, -1, created)
	assert.NotEqual(t, created, captured, "captured through another replica")
	assert.NotEqual(t, created, refunded, "refunded through another replica")
	callbacks, deliveries := make([]int, 3), make([]int, 3)
	for i, b := range replicas {
		callbacks[i] = countLines(b, `"path":"/callback/notify"`, `"status":200`)
		deliveries[i] = countLines(b, "notification delivered")
	}
	others := 0
	for i := range replicas {
		if i != created {
			others += callbacks[i]
		}
	}
	assert.Positive(t, others, "the gateway's callbacks reached replicas other than the creating one")
	t.Logf("payment %s: created on r%d, captured on r%d, refunded on r%d; gateway callbacks per replica %v, e-shop notifications sent per replica %v",
		id, created, captured, refunded, callbacks, deliveries)

	// Load through the balancer: touch and paymentStatus from several
	// clients, and a shop creating payments its customers pay at once. One
	// replica is killed with SIGKILL once every replica has answered part
	// of the load, and the load goes on until each survivor has answered
	// more of it after the kill: the order of events is set, not their
	// times.
	const (
		workers = 6
		share   = 5 // load calls each replica answers before the kill, and each survivor after it
	)
	var (
		calls    atomic.Int64
		mu       sync.Mutex
		failures []failure
		paid     []string
		served   = make([]int, 3)
		wg       sync.WaitGroup
	)
	fail := func(what string, start time.Time, err error) {
		mu.Lock()
		failures = append(failures, failure{what, start, time.Now(), err})
		mu.Unlock()
	}
	var stopped atomic.Bool
	defer func() { stopped.Store(true); wg.Wait() }() // also when a require below fails
	loadStart := time.Now()
	for w := range workers {
		wg.Go(func() {
			for n := 0; !stopped.Load(); n++ {
				rid := fmt.Sprintf("ha-load-%d-%d", w, n)
				calls.Add(1)
				start := time.Now()
				var (
					doc *etree.Document
					by  string
					err error
				)
				if n%2 == 0 {
					doc, by, err = lbSOAPServed(lb, "touch", "", rid)
					if err == nil && doc.FindElement("//touchReturn") == nil {
						err = fmt.Errorf("no touchReturn")
					}
				} else {
					doc, by, err = lbSOAPServed(lb, "paymentStatus", paymentStatusBody(t, id), rid)
					if err == nil && flowText(doc, "sessionState") != "REFUNDED" {
						err = fmt.Errorf("paymentStatus: %s %s", flowText(doc, "result"), flowText(doc, "resultDescription"))
					}
				}
				if err != nil {
					fail(rid, start, err)
					continue
				}
				i, aerr := strconv.Atoi(strings.TrimPrefix(by, "r"))
				if assert.NoError(t, aerr, "X-Served-By %q", by) {
					mu.Lock()
					served[i]++
					mu.Unlock()
				}
			}
		})
	}
	// The shop: createPayment through the balancer, then the customer pays.
	// shopGate held by the test pauses it between two payments.
	var shopGate sync.Mutex
	wg.Go(func() {
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		buy := func(n int) {
			calls.Add(1)
			start := time.Now()
			resp, err := noRedirect.Get(fmt.Sprintf("%s/buy/full?order=HA-L%d", shop.srv.URL, n))
			if err != nil {
				fail("buy", start, err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusFound {
				fail("buy", start, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, body))
				return
			}
			req, _ := http.NewRequest(http.MethodGet, resp.Header.Get("Location"), nil)
			pid := req.URL.Query().Get("sessionInfo.paymentSessionId")
			r, err := http.Post(gw.URL+"/sandbox/payments/"+pid+"/pay", "application/json",
				strings.NewReader(`{"outcome":"success","instrument":"PAYMENT_CARD"}`))
			if assert.NoError(t, err) {
				r.Body.Close()
				assert.Equal(t, http.StatusOK, r.StatusCode)
			}
			mu.Lock()
			paid = append(paid, pid)
			mu.Unlock()
		}
		for n := 0; !stopped.Load(); n++ {
			shopGate.Lock()
			buy(n)
			shopGate.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	})
	servedNow := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(served)
	}
	paidNow := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(paid)
	}
	// drain takes the e-shop's notifications until the shared outbox has
	// nothing pending and every payment paid so far was announced, each
	// accepted notification delivered once (read on replica via).
	received := map[string]int{}
	drain := func(via *bridgeProc, within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		for {
			c := outboxCounts(t, via)
			paid := paidNow()
			announced := 0
			for _, p := range paid {
				if received[p] > 0 {
					announced++
				}
			}
			if c["pending"] == 0 && announced == len(paid) && notified == c["delivered"] {
				require.Zero(t, c["dead"])
				return
			}
			select {
			case q := <-shop.notified:
				received[q.Get("paymentSessionId")]++
				notified++
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				t.Fatalf("outbox %v; the e-shop received %d notifications, %d of the %d payments paid under load", c, notified, announced, len(paid))
			}
		}
	}
	require.Eventually(t, func() bool { return slices.Min(servedNow()) >= share && len(paidNow()) > 0 }, 2*time.Minute, 10*time.Millisecond,
		"every replica answers part of the load, and the shop sold something")
	// The shop pauses and the notifications under way are delivered
	// before the kill: a replica killed while it holds a claimed outbox
	// row leaves it to its lease (2 minutes; the outbox tests cover that),
	// which this test would only wait out.
	shopGate.Lock()
	drain(replicas[0], time.Minute)
	const killed = 2
	k := replicas[killed]
	k.stopped = true
	// Its counters die with it: read them just before the kill.
	_, killedText := adminGet(t, k.AdminURL+"/metrics")
	killStart := time.Now()
	require.NoError(t, k.cmd.Process.Signal(syscall.SIGKILL))
	<-k.done
	killEnd := time.Now() // the process is gone
	killedLogged := countLines(k, `"logger":"http"`, `"method":"POST"`, `"path":"`+soapPath+`"`)
	checkNoSecrets(t, k.log.String(), k.readyAt, k.embedded)
	atKill, paidAtKill := servedNow(), len(paidNow())
	shopGate.Unlock()
	require.Eventually(t, func() bool {
		now := servedNow()
		for i := range replicas {
			if i != killed && now[i] < atKill[i]+share {
				return false
			}
		}
		return len(paidNow()) > paidAtKill
	}, 2*time.Minute, 10*time.Millisecond, "the survivors answer the load after the kill, and the shop sells again")
	stopped.Store(true)
	wg.Wait()
	load := time.Since(loadStart)

	// A call can fail only if it was under way when the replica died (its
	// start before the kill, its end after). HAProxy
	// answers 502 for those it had handed to the dead replica; calls sent to
	// it afterwards were redispatched. (HAProxy's own log, written
	// non-blocking to stdout, is only reported: it may drop lines.)
	var hap502 int
	for _, l := range hap.lines(t) {
		if l.status >= 500 && l.server == fmt.Sprintf("r%d", killed) {
			hap502++
		}
	}
	t.Logf("load: %d calls in %v through HAProxy, %d failed, all under way when r%d was killed at +%v (HAProxy logged %d answered 502 for r%d); answered per replica %v; %d payments created and paid during the load",
		calls.Load(), load.Round(time.Millisecond), len(failures), killed, killStart.Sub(loadStart).Round(time.Millisecond), hap502, killed, served, len(paid))
	for _, f := range failures {
		t.Logf("failed: %s after %v: %v", f.what, f.end.Sub(f.start).Round(time.Millisecond), f.err)
		assert.True(t, f.start.Before(killEnd) && !f.end.Before(killStart), "%s failed though it was not under way at the kill", f.what)
	}
	for i := range replicas {
		assert.Positive(t, served[i], "replica r%d answered part of the load", i)
	}
	for i, b := range replicas {
		if i != killed {
			assert.Equal(t, served[i], countLines(b, `"request_id":"ha-load-`, `"status":200`), "r%d's access log agrees with the replies", i)
		}
	}

	// Metrics scraped from each replica add up to the SOAP calls it
	// answered. A survivor's counter equals the SOAP requests in its access
	// log over the whole test, and its touch and paymentStatus counts cover
	// the load calls the clients saw it answer. The killed replica's
	// counter is lost with it; its last scrape, taken just before the kill,
	// counts at most the calls it had finished by the kill plus those then
	// in flight (one per load worker and the shop).
	var survivors float64
	for i, b := range replicas {
		if i == killed {
			continue
		}
		_, text := adminGet(t, b.AdminURL+"/metrics")
		got := soapCallsTotal(t, text, "")
		logged := countLines(b, `"logger":"http"`, `"method":"POST"`, `"path":"`+soapPath+`"`)
		assert.Equal(t, float64(logged), got, "r%d: soapbridge_soap_calls_total over all series = SOAP requests it logged", i)
		loadOps := soapCallsTotal(t, text, `operation="touch"`) + soapCallsTotal(t, text, `operation="paymentStatus"`)
		assert.GreaterOrEqual(t, loadOps, float64(served[i]), "r%d: its touch and paymentStatus counters cover the load calls it answered", i)
		survivors += got
	}
	before := soapCallsTotal(t, killedText, "")
	assert.Positive(t, before, "r%d counted calls before the kill", killed)
	assert.LessOrEqual(t, before, float64(killedLogged+workers+1), "r%d's last scrape counts no more than it answered", killed)
	t.Logf("metrics: survivors counted %.0f SOAP calls (= their access logs); r%d counted %.0f before the kill (%d logged by the kill)",
		survivors, killed, before, killedLogged)

	// Every notification the shared outbox accepted reaches the e-shop
	// once, the paid payments' included, though a replica died.
	drain(replicas[0], time.Minute)
	c := outboxCounts(t, replicas[0])
	t.Logf("notifications: %d accepted by the outbox, %d delivered, %d received by the e-shop", c["delivered"], c["delivered"], notified)
	select {
	case q := <-shop.notified:
		t.Fatalf("a notification was delivered twice: %v", q)
	case <-time.After(time.Second):
	}
}

// soapCallsTotal sums the soapbridge_soap_calls_total series whose labels
// contain filter ("" for all) in a Prometheus text exposition.
func soapCallsTotal(t *testing.T, text, filter string) float64 {
	t.Helper()
	total := 0.0
	for _, m := range regexp.MustCompile(`(?m)^soapbridge_soap_calls_total\{([^}]*)\} (\S+)$`).FindAllStringSubmatch(text, -1) {
		if !strings.Contains(m[1], filter) {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		total += v
	}
	return total
}
