package main

// Reload and key rotation through the running binary: SIGHUP (and a
// watched config file) while real calls flow, never a failed call.

import (
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
	"github.com/legacybridge/soapbridge/operations"
)

// Secure keys of the rotation tests (the demo merchant's is demoSecureKey).
const (
	rotatedKey = "RotatedSecureKey-0123456789"
	shopBKey   = "ShopBSecureKey-0123456789ab"
)

// cfgMerchant is one merchant of a test config file.
type cfgMerchant struct {
	goid, client, secret, key, previousKey string
}

var demoCfgMerchant = cfgMerchant{goid: demoGoID, client: demoClientID, secret: demoClientSecret, key: demoSecureKey}

// writeConfig writes a config file of merchants (and extra top-level lines).
func writeConfig(t *testing.T, path string, extra string, ms ...cfgMerchant) {
	t.Helper()
	var b strings.Builder
	b.WriteString(extra)
	b.WriteString("merchants:\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "  - goid: %s\n    client_id: %s\n    client_secret: %s\n    secure_key: %s\n", m.goid, m.client, m.secret, m.key)
		if m.previousKey != "" {
			fmt.Fprintf(&b, "    previous_secure_key: %s\n", m.previousKey)
		}
	}
	// Written aside and renamed, as a ConfigMap update swaps it whole.
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(b.String()), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// withConfigFile runs the bridge on a config file instead of the demo
// merchant's variables.
func withConfigFile(path string) bridgeOpt {
	return withEnv("SOAPBRIDGE_CONFIG="+path, "SOAPBRIDGE_GOID=", "SOAPBRIDGE_CLIENT_ID=", "SOAPBRIDGE_CLIENT_SECRET=", "SOAPBRIDGE_SECURE_KEY=")
}

// signal sends sig to the bridge.
func (b *bridgeProc) signal(sig syscall.Signal) {
	b.t.Helper()
	require.NoError(b.t, b.cmd.Process.Signal(sig))
}

// waitLog waits until the bridge has logged n lines containing every part
// (generous bound: the test never depends on how soon).
func (b *bridgeProc) waitLog(n int, parts ...string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for countLines(b, parts...) < n {
		if time.Now().After(deadline) {
			b.t.Fatalf("no %d log lines with %q within 30 s:\n%s", n, parts, b.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// statusLoad calls paymentStatus for payment id through url, signed with
// the key the shop holds now, from several clients until stop; every reply
// must be CALL_COMPLETED and verify with the key its request was signed
// with.
type statusLoad struct {
	url, goid, id string
	shopKey       atomic.Value // string
	calls, failed atomic.Int64
	mu            sync.Mutex
	failures      []string
	stop          chan struct{}
	wg            sync.WaitGroup
}

func startStatusLoad(t *testing.T, url, goid, id, key string, clients int) *statusLoad {
	l := &statusLoad{url: url, goid: goid, id: id, stop: make(chan struct{})}
	l.shopKey.Store(key)
	for c := range clients {
		l.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.one(t, fmt.Sprintf("load-%d-%d", c, i))
			}
		})
	}
	return l
}

func (l *statusLoad) one(t *testing.T, rid string) {
	key := l.shopKey.Load().(string)
	sig, err := operations.Sign(key, operations.PaymentSessionFields(l.goid, l.id)...)
	require.NoError(t, err)
	body := `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">` + str("encryptedSignature", sig) +
		long("paymentSessionId", l.id) + long("targetGoId", l.goid) + `</paymentSessionInfo>`
	doc, err := lbSOAP(l.url, "paymentStatus", body, rid)
	l.calls.Add(1)
	fail := func(why string) {
		l.failed.Add(1)
		l.mu.Lock()
		if len(l.failures) < 5 {
			l.failures = append(l.failures, why)
		}
		l.mu.Unlock()
	}
	switch {
	case err != nil:
		fail(err.Error())
	case flowText(doc, "result") != "CALL_COMPLETED":
		fail(flowText(doc, "resultDescription"))
	case !operations.Verify(key, flowText(doc, "encryptedSignature"), operations.PaymentStatusReplyFields(func(n string) string { return flowText(doc, n) })...):
		fail("reply not signed with the request's key")
	}
}

func (l *statusLoad) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	assert.Zero(t, l.failed.Load(), "failed calls of %d: %v", l.calls.Load(), l.failures)
	assert.Positive(t, l.calls.Load())
}

// createFor creates a payment of merchant m through url and returns its id.
func createFor(t *testing.T, url string, m cfgMerchant, order string) string {
	t.Helper()
	f := false
	sig, err := operations.Sign(m.key, operations.PaymentCommandFields{TargetGoID: m.goid, ProductName: "Kniha", TotalPrice: "12900",
		Currency: "CZK", OrderNumber: order, FailedURL: "https://shop.example/ko", SuccessURL: "https://shop.example/ok",
		PreAuthorization: operations.FormatBool(&f), RecurrentPayment: operations.FormatBool(&f)}.Fields()...)
	require.NoError(t, err)
	doc, err := lbSOAP(url, "createPayment", `<paymentCommand xsi:type="ns2:EPaymentCommand">`+str("currency", "CZK")+
		str("encryptedSignature", sig)+str("failedURL", "https://shop.example/ko")+str("orderNumber", order)+
		`<preAuthorization xsi:type="xsd:boolean">false</preAuthorization>`+str("productName", "Kniha")+
		`<recurrentPayment xsi:type="xsd:boolean">false</recurrentPayment>`+str("successURL", "https://shop.example/ok")+
		long("targetGoId", m.goid)+long("totalPrice", "12900")+`</paymentCommand>`, "create-"+order)
	require.NoError(t, err)
	require.Equal(t, "CALL_COMPLETED", flowText(doc, "result"), flowText(doc, "resultDescription"))
	return flowText(doc, "paymentSessionId")
}

// TestReloadUnderLoad: a merchant added by SIGHUP while calls flow, none
// failing; a bad config and a change of a fixed setting refused with the
// setting named, the configuration in force kept; an unknown signal
// ignored; a watched file reloaded without a signal.
func TestReloadUnderLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soapbridge.yaml")
	writeConfig(t, path, "", demoCfgMerchant)
	b := startBridge(t, withConfigFile(path), withEnv("SOAPBRIDGE_WATCH_CONFIG=true"))
	id := createFor(t, b.URL, demoCfgMerchant, "RL-1")
	load := startStatusLoad(t, b.URL, demoGoID, id, demoSecureKey, 4)

	// A second shop comes in by SIGHUP: registered at the embedded sandbox
	// too, it can pay at once.
	shopB := cfgMerchant{goid: "8123456790", client: "shop-b", secret: "shop-b-secret", key: shopBKey}
	writeConfig(t, path, "", demoCfgMerchant, shopB)
	b.signal(syscall.SIGHUP)
	b.waitLog(1, "configuration reloaded", `"added":[8123456790]`)
	b.waitLog(1, "the gateway issued tokens after a reload", `"merchants":[8123456790]`)
	createFor(t, b.URL, shopB, "RL-B-1")
	_, page := adminGet(t, b.AdminURL+"/")
	assert.Contains(t, page, "<td>8123456790</td>", "the status page shows the merchants in force")

	// A config with a mistake: refused, named, the one in force kept.
	require.NoError(t, os.WriteFile(path, []byte("merchants:\n  - goid: 8123456789\n    secure_keyy: x\n"), 0o600))
	b.signal(syscall.SIGHUP)
	b.waitLog(1, "configuration reload refused", "secure_keyy", "secure_key")
	createFor(t, b.URL, shopB, "RL-B-2")

	// A setting that cannot change at run time: named, refused.
	writeConfig(t, path, "soap_path: /elsewhere\n", demoCfgMerchant, shopB)
	b.signal(syscall.SIGHUP)
	b.waitLog(1, "configuration reload refused", "soap_path cannot change while the bridge runs")

	// A key changed without keeping the old one: refused.
	changed := demoCfgMerchant
	changed.key = rotatedKey
	writeConfig(t, path, "", changed, shopB)
	b.signal(syscall.SIGHUP)
	b.waitLog(1, "configuration reload refused", "previous_secure_key is not the key in force")

	// Unknown signals change nothing.
	b.signal(syscall.SIGUSR1)
	b.signal(syscall.SIGUSR2)

	// The file watched: shop B removed without a signal.
	writeConfig(t, path, "", demoCfgMerchant)
	b.waitLog(1, "configuration reloaded", `"trigger":"config file changed"`, `"removed":[8123456790]`)
	doc, err := lbSOAP(b.URL, "paymentStatus", `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">`+
		str("encryptedSignature", "00")+long("paymentSessionId", id)+long("targetGoId", shopB.goid)+`</paymentSessionInfo>`, "gone")
	require.NoError(t, err)
	assert.Contains(t, flowText(doc, "resultDescription"), "unknown targetGoId 8123456790", "a removed shop is refused")
	_, page = adminGet(t, b.AdminURL+"/")
	assert.NotContains(t, page, "<td>8123456790</td>", "nor shown")

	load.finish(t)
	t.Logf("%d paymentStatus calls during five reloads, none failed", load.calls.Load())
	_, metrics := adminGet(t, b.AdminURL+"/metrics")
	assert.Equal(t, 2.0, metricValue(t, metrics, "soapbridge_config_reloads_total", `result="ok"`))
	assert.Equal(t, 3.0, metricValue(t, metrics, "soapbridge_config_reloads_total", `result="refused"`))
	assert.Zero(t, metricValue(t, metrics, "soapbridge_merchant_soap_calls_total", `goid="8123456790",result="ok"`),
		"a removed merchant's series are gone")
	for _, k := range []string{rotatedKey, shopBKey, "shop-b-secret"} {
		assert.NotContains(t, b.log.String(), k, "a secret in the log")
	}
}

// TestKeyRotationAcrossReplicas: two replicas on one PostgreSQL behind
// HAProxy, a shop calling all along. The documented procedure (reload every
// replica with the new key and the old one as previous; the shop moves to
// the new key; reload every replica without the old one) fails no call,
// and every reply verifies with the key its request was signed with.
func TestKeyRotationAcrossReplicas(t *testing.T) {
	hapBin := testenv.LookPath(t, "haproxy", "apt-get install haproxy")
	dsn := testenv.PostgresSchema(t)
	gw := startGatewaySandbox(t)
	lbPort := freePorts(t, 1)[0]
	lb := "http://127.0.0.1:" + lbPort
	paths := make([]string, 2)
	replicas := make([]*bridgeProc, 2)
	for i := range replicas {
		paths[i] = filepath.Join(t.TempDir(), "soapbridge.yaml")
		writeConfig(t, paths[i], "", demoCfgMerchant)
		replicas[i] = startBridge(t, withDB(dsn), withConfigFile(paths[i]), withEnv("SOAPBRIDGE_GATEWAY_URL="+gw.URL+"/api",
			"SOAPBRIDGE_PUBLIC_URL="+lb, "SOAPBRIDGE_MAX_CONNECTIONS_PER_IP=0"))
	}
	startHAProxy(t, hapBin, lbPort, replicas)
	id := createFor(t, lb, demoCfgMerchant, "ROT-1")
	load := startStatusLoad(t, lb, demoGoID, id, demoSecureKey, 4)
	step := func(m cfgMerchant, n int) {
		for i, r := range replicas {
			writeConfig(t, paths[i], "", m)
			r.signal(syscall.SIGHUP)
			r.waitLog(n, "configuration reloaded")
		}
	}

	// 1. Every replica takes the new key, keeping the old one.
	step(cfgMerchant{goid: demoGoID, client: demoClientID, secret: demoClientSecret, key: rotatedKey, previousKey: demoSecureKey}, 1)
	before := load.calls.Load()
	for load.calls.Load() < before+50 {
		time.Sleep(10 * time.Millisecond)
	}
	// 2. The shop moves to the new key.
	load.shopKey.Store(rotatedKey)
	before = load.calls.Load()
	for load.calls.Load() < before+50 {
		time.Sleep(10 * time.Millisecond)
	}
	// 3. The old key goes.
	step(cfgMerchant{goid: demoGoID, client: demoClientID, secret: demoClientSecret, key: rotatedKey}, 2)
	before = load.calls.Load()
	for load.calls.Load() < before+50 {
		time.Sleep(10 * time.Millisecond)
	}
	load.finish(t)
	t.Logf("%d paymentStatus calls through the rotation on 2 replicas, none failed", load.calls.Load())

	// The old key is refused now, on every replica.
	for i := range 2 {
		doc, err := lbSOAP(lb, "paymentStatus", paymentStatusBody(t, id), fmt.Sprintf("old-key-%d", i))
		require.NoError(t, err)
		assert.Equal(t, "CALL_FAILED", flowText(doc, "result"))
	}
	for _, r := range replicas {
		assert.NotContains(t, r.log.String(), rotatedKey, "a secret in the log")
	}
}
