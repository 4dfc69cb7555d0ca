package main

import (
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
)

// heldGateway is a sandbox gateway whose status read of a payment can be
// held: the test learns when the bridge's read arrived and releases it.
type heldGateway struct {
	URL     string
	mu      sync.Mutex
	holds   map[string]chan struct{} // payment id → closed to release
	entered chan string
}

func newHeldGateway(t *testing.T, ms ...cfgMerchant) *heldGateway {
	t.Helper()
	var sms []sandbox.Merchant
	for _, m := range ms {
		goid, err := strconv.ParseInt(m.goid, 10, 64)
		require.NoError(t, err)
		sms = append(sms, sandbox.Merchant{Account: restbackend.Account{GoID: goid, ClientID: m.client, ClientSecret: m.secret}})
	}
	sb := sandbox.New(sandbox.Options{Merchants: sms})
	g := &heldGateway{holds: map[string]chan struct{}{}, entered: make(chan string, 4)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/payments/payment/") {
			id := path.Base(r.URL.Path)
			g.mu.Lock()
			release := g.holds[id]
			delete(g.holds, id) // held once
			g.mu.Unlock()
			if release != nil {
				g.entered <- id
				<-release
			}
		}
		sb.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); sb.Close() })
	g.URL = srv.URL
	return g
}

// hold makes the next status read of payment id wait for the returned
// release.
func (g *heldGateway) hold(id string) (release func()) {
	ch := make(chan struct{})
	g.mu.Lock()
	g.holds[id] = ch
	g.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// statusOf calls paymentStatus of payment id as merchant m, off the test's
// goroutine: its reply on the channel returned.
func statusOf(url string, m cfgMerchant, id, rid string) <-chan *etree.Document {
	out := make(chan *etree.Document, 1)
	go func() {
		sig, err := operations.Sign(m.key, operations.PaymentSessionFields(m.goid, id)...)
		if err != nil {
			out <- nil
			return
		}
		doc, _ := lbSOAP(url, "paymentStatus", `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">`+
			str("encryptedSignature", sig)+long("paymentSessionId", id)+long("targetGoId", m.goid)+`</paymentSessionInfo>`, rid)
		out <- doc
	}()
	return out
}

// A call of a merchant a reload removes while the call is in flight is
// counted under its merchant's own goid (the configuration the call
// pinned), not as "other"; the removed merchant's series stay while a call
// pinned to the configuration that had it is in flight, and are dropped
// when the last one ends (the labels stay bounded). The calls are held at
// the gateway until the reload is done: no timing involved.
func TestMetricsCountACallByTheMerchantsItPinned(t *testing.T) {
	shopB := cfgMerchant{goid: "8123456790", client: "shop-b", secret: "shop-b-secret", key: shopBKey}
	gw := newHeldGateway(t, demoCfgMerchant, shopB)
	cfgPath := filepath.Join(t.TempDir(), "soapbridge.yaml")
	writeConfig(t, cfgPath, "", demoCfgMerchant, shopB)
	b := startBridge(t, withConfigFile(cfgPath),
		withEnv("SOAPBRIDGE_GATEWAY_URL="+gw.URL+"/api", "SOAPBRIDGE_METRICS_MERCHANT_LABELS=true"))
	idB := createFor(t, b.URL, shopB, "PINNED-B")
	idA := createFor(t, b.URL, demoCfgMerchant, "PINNED-A")

	const byGoID = "soapbridge_merchant_soap_calls_total"
	scrape := func() string { _, text := adminGet(t, b.AdminURL+"/metrics"); return text }
	before := metricValue(t, scrape(), byGoID, `goid="`+shopB.goid+`",result="ok"`)
	require.Equal(t, float64(1), before, "shop B's createPayment")

	// Two calls in flight on the configuration that has shop B: B's own,
	// and one of the demo merchant that keeps that configuration pinned
	// after B's ends.
	releaseB, releaseA := gw.hold(idB), gw.hold(idA)
	defer releaseB()
	defer releaseA()
	doneB := statusOf(b.URL, shopB, idB, "pinned-b")
	require.Equal(t, idB, <-gw.entered)
	doneA := statusOf(b.URL, demoCfgMerchant, idA, "pinned-a")
	require.Equal(t, idA, <-gw.entered)

	writeConfig(t, cfgPath, "", demoCfgMerchant) // shop B removed
	b.signal(syscall.SIGHUP)
	b.waitLog(1, "configuration reloaded")

	releaseB()
	docB := <-doneB
	require.NotNil(t, docB)
	assert.Equal(t, "CALL_COMPLETED", flowText(docB, "result"), flowText(docB, "resultDescription"))
	text := scrape()
	assert.Equal(t, before+1, metricValue(t, text, byGoID, `goid="`+shopB.goid+`",result="ok"`),
		"shop B's call counted under its goid, the configuration it pinned")
	assert.Zero(t, metricValue(t, text, byGoID, `goid="other",result="ok"`), "not as a goid no merchant has")

	releaseA()
	docA := <-doneA
	require.NotNil(t, docA)
	assert.Equal(t, "CALL_COMPLETED", flowText(docA, "result"), flowText(docA, "resultDescription"))
	require.Eventually(t, func() bool { return !strings.Contains(scrape(), `goid="`+shopB.goid+`"`) },
		10*time.Second, 20*time.Millisecond, "shop B's series dropped once no call pinned its configuration")
	assert.Equal(t, float64(2), metricValue(t, scrape(), byGoID, `goid="`+demoGoID+`",result="ok"`), "the demo merchant's kept")
}
