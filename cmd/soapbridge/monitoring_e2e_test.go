package main

// Monitoring through the running binary: the series a scrape carries with
// 1, 10 and 100 merchants (with per-merchant labels on and off), each
// family documented; scrapes
// and readiness while PostgreSQL is cut off and while the gateway stalls;
// readiness at the connection cap.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/faultproxy"
	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/wsdl"
)

// merchantsFile writes a config file with n merchants (goids 7000000001…)
// and returns its path and the goids.
func merchantsFile(t *testing.T, n int) (string, []string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("merchants:\n")
	var goids []string
	for i := 1; i <= n; i++ {
		g := strconv.Itoa(7000000000 + i)
		goids = append(goids, g)
		fmt.Fprintf(&b, "  - goid: %s\n    client_id: client-%d\n    client_secret: secret-%d\n    secure_key: SecureKeyOfMerchant-%04d-abcdef\n", g, i, i, i)
	}
	path := filepath.Join(t.TempDir(), "merchants.yaml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path, goids
}

// opBody is a request of op for goid whose signature does not verify: the
// call reaches the core, which refuses it (a FAILED reply, a signature
// failure counted), whatever the gateway.
func opBody(op wsdl.Operation, goid string) string {
	if op.Param == nil {
		return ""
	}
	_, typ, _ := strings.Cut(op.Param.Type, ":")
	goidField := "targetGoId"
	var more string
	switch typ {
	case "EBuyerCreate":
		goidField, more = "eshopGoId", str("buyerEmail", "buyer@example.com")
	case "ERefundRequest":
		more = long("amount", "100") + str("currency", "CZK") + str("description", "refund") + long("paymentSessionId", "3000000001")
	case "ERecurrenceRequest":
		more = str("orderNumber", "R-1") + long("parentPaymentSessionId", "3000000001") + long("totalPrice", "100")
	case "EPaymentCommand":
		more = str("currency", "CZK") + str("orderNumber", "O-1") + str("productName", "Zboží") + long("totalPrice", "100") +
			str("successURL", "https://shop.example.com/ok") + str("failedURL", "https://shop.example.com/failed")
	default:
		more = long("paymentSessionId", "3000000001")
	}
	return `<` + op.Param.Name + ` xsi:type="ns2:` + typ + `">` + str("encryptedSignature", "bm90IGEgc2lnbmF0dXJl") +
		long(goidField, goid) + more + `</` + op.Param.Name + `>`
}

// sampleLines are the sample lines of a Prometheus text scrape (one per
// series).
func sampleLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// seriesWith counts the sample lines naming goid in a label.
func seriesWith(lines []string, goid string) int {
	re := regexp.MustCompile(`[{,][a-z_]+="` + goid + `"`)
	n := 0
	for _, l := range lines {
		if re.MatchString(l) {
			n++
		}
	}
	return n
}

// scrapeAfterCalls starts a bridge with n merchants, makes one call of
// every operation (each WSDL entry) per merchant, and returns the sample
// lines of one scrape and the goids.
func scrapeAfterCalls(t *testing.T, n int, env ...string) ([]string, []string) {
	t.Helper()
	cfgFile, goids := merchantsFile(t, n)
	// The file's merchants only: the demo merchant's variables unset.
	b := startBridge(t, withEnv(append([]string{"SOAPBRIDGE_CONFIG=" + cfgFile, "SOAPBRIDGE_GOID=", "SOAPBRIDGE_CLIENT_ID=",
		"SOAPBRIDGE_CLIENT_SECRET=", "SOAPBRIDGE_SECURE_KEY=", "SOAPBRIDGE_LOG_LEVEL=warn"}, env...)...))
	type job struct {
		op   wsdl.Operation
		goid string
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for j := range jobs {
				soapAs(t, b.SOAPURL, "127.0.0.1", "", "", j.op.Name, opBody(j.op, j.goid))
			}
		})
	}
	for _, g := range goids {
		for _, op := range wsdl.Operations {
			jobs <- job{op, g}
		}
	}
	close(jobs)
	wg.Wait()
	code, text := adminGet(t, b.AdminURL+"/metrics")
	require.Equal(t, http.StatusOK, code)
	b.Stop()
	return sampleLines(text), goids
}

// TestMetricsSeriesPerMerchant: the series of a replica grow by at most 30
// per merchant, and by none with per-merchant labels off.
func TestMetricsSeriesPerMerchant(t *testing.T) {
	for _, labels := range []string{"true", "false"} {
		t.Run("merchant_labels="+labels, func(t *testing.T) {
			counts := map[int]int{}
			for _, n := range []int{1, 10, 100} {
				lines, goids := scrapeAfterCalls(t, n, "SOAPBRIDGE_METRICS_MERCHANT_LABELS="+labels)
				counts[n] = len(lines)
				per := seriesWith(lines, goids[0])
				t.Logf("merchant labels %s, %d merchants: %d series, %d naming the first merchant", labels, n, len(lines), per)
				for _, g := range goids {
					if labels == "true" {
						assert.LessOrEqual(t, seriesWith(lines, g), 30, "series of merchant %s", g)
					} else {
						require.Zero(t, seriesWith(lines, g), "no series names merchant %s", g)
					}
				}
			}
			for _, n := range []int{10, 100} {
				growth := float64(counts[n]-counts[1]) / float64(n-1)
				t.Logf("merchant labels %s: %.1f series per merchant from 1 to %d merchants", labels, growth, n)
				if labels == "true" {
					assert.LessOrEqual(t, growth, 30.0)
				} else {
					assert.LessOrEqual(t, counts[n]-counts[1], 0, "no growth with merchant labels off")
				}
			}
		})
	}
}

// tcpProxy forwards TCP connections to upstream until cut: then it drops
// every connection and holds new ones open without an answer, as a
// database whose network stalls.
type tcpProxy struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func startTCPProxy(t *testing.T, upstream string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{ln: ln, upstream: upstream, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.dropAll() })
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		cut := p.cut
		p.mu.Unlock()
		if cut {
			continue // held: never read, never answered
		}
		go p.pipe(c)
	}
}

func (p *tcpProxy) pipe(c net.Conn) {
	u, err := net.Dial("tcp", p.upstream)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[u] = true
	p.mu.Unlock()
	go func() { io.Copy(u, c); u.Close() }() //nolint:errcheck // ends when either side closes
	io.Copy(c, u)                            //nolint:errcheck
	c.Close()
}

func (p *tcpProxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// setCut cuts the database off (true) or lets it through again.
func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	p.cut = cut
	p.mu.Unlock()
	p.dropAll()
}

// metricLine is the value of the sample line starting with series (name
// and labels as exposed), or -1 when absent.
func metricLine(text, series string) float64 {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// TestScrapeDuringDatabaseOutage: the bridge on PostgreSQL through a TCP
// proxy; with the database cut off every scrape still answers 200, the
// store is reported down, the store-backed gauges keep their last value
// and tell their age, and the replica stays ready.
func TestScrapeDuringDatabaseOutage(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err, "the test needs a URL DSN")
	proxy := startTCPProxy(t, u.Host)
	u.Host = proxy.addr()
	b := startBridge(t, withDB(u.String()))
	admin := b.AdminURL

	require.Empty(t, soapAs(t, b.SOAPURL, "127.0.0.1", "", "", "touch", "").fault)
	before := waitMetric(t, admin, `soapbridge_dependency_up{dependency="store"} 1`)
	pending := metricLine(before, `soapbridge_outbox_notifications{state="pending"}`)
	require.GreaterOrEqual(t, pending, 0.0)

	proxy.setCut(true)
	during := waitMetric(t, admin, `soapbridge_dependency_up{dependency="store"} 0`)
	assert.Equal(t, pending, metricLine(during, `soapbridge_outbox_notifications{state="pending"}`), "the last value is kept")
	assert.Equal(t, 0.0, metricLine(during, `soapbridge_ledger_calls{state="in_doubt"}`))
	assert.Equal(t, 1.0, metricLine(during, `soapbridge_soap_calls_total{operation="touch",result="ok"}`), "the call series stay")
	assert.Equal(t, 1.0, metricLine(during, "soapbridge_ready"))
	age := metricLine(during, "soapbridge_store_counts_age_seconds")
	assert.Greater(t, age, 0.0)
	code, body := adminGet(t, admin+"/readyz")
	assert.Equal(t, http.StatusOK, code, "the database is every replica's: not a reason to eject this one")
	assert.Contains(t, body, `"store":{"up":false`)
	code, _ = adminGet(t, admin+"/")
	assert.Equal(t, http.StatusOK, code, "the status page answers from memory")
	code, _ = adminGet(t, admin+"/outbox")
	assert.Equal(t, http.StatusServiceUnavailable, code, "a live read of the store says it failed")
	a := soapAs(t, b.SOAPURL, "127.0.0.1", "", "", "touch", "")
	assert.Empty(t, a.fault, "touch needs no database")
	code, later := adminGet(t, admin+"/metrics")
	require.Equal(t, http.StatusOK, code)
	assert.Greater(t, metricLine(later, "soapbridge_store_counts_age_seconds"), age, "the gauges grow stale, and say so")
	assert.Equal(t, 2.0, metricLine(later, `soapbridge_soap_calls_total{operation="touch",result="ok"}`))

	proxy.setCut(false)
	after := waitMetric(t, admin, `soapbridge_dependency_up{dependency="store"} 1`)
	assert.Less(t, metricLine(after, "soapbridge_store_counts_age_seconds"), metricLine(later, "soapbridge_store_counts_age_seconds"))
	assert.Contains(t, b.log.String(), "store unreachable (readiness unaffected")
	assert.Contains(t, b.log.String(), "store reachable again")
}

// TestReadinessDuringGatewayStall: the gateway holds every request; the
// probe reports it down while /readyz keeps answering 200 all along.
func TestReadinessDuringGatewayStall(t *testing.T) {
	e := newMoneyEnv(t, "2s", "6s")
	admin := e.b.AdminURL
	waitMetric(t, admin, `soapbridge_dependency_up{dependency="gateway"} 1`)

	e.proxy.Add(faultproxy.Rule{Fault: faultproxy.Hang})
	deadline := time.Now().Add(60 * time.Second)
	polls := 0
	for {
		code, body := adminGet(t, admin+"/readyz")
		require.Equal(t, http.StatusOK, code, "ready all along: %s", body)
		polls++
		_, text := adminGet(t, admin+"/metrics")
		if strings.Contains(text, "\n"+`soapbridge_dependency_up{dependency="gateway"} 0`+"\n") {
			assert.Contains(t, text, "\nsoapbridge_ready 1\n")
			assert.Contains(t, body, `"status":"ready"`)
			break
		}
		require.False(t, time.Now().After(deadline), "the stalled gateway was never reported down")
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("gateway reported down after %d readiness polls, each 200", polls)
	code, body := adminGet(t, admin+"/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"gateway":{"up":false,"error":"no answer within 5s"`)
	a := soapAs(t, e.b.SOAPURL, "127.0.0.1", "", "", "touch", "")
	assert.Empty(t, a.fault, "the replica still answers")

	e.proxy.Clear()
	waitMetric(t, admin, `soapbridge_dependency_up{dependency="gateway"} 1`)
}

// TestReadinessFollowsTheConnectionCap: a replica whose connections reach
// 95 % of max_connections leaves the Service until they close.
func TestReadinessFollowsTheConnectionCap(t *testing.T) {
	b := startBridge(t, withEnv("SOAPBRIDGE_MAX_CONNECTIONS=20"))
	host := strings.TrimPrefix(b.URL, "http://")
	var conns []net.Conn
	for range 19 {
		c, err := net.Dial("tcp", host)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	// until the answer is want and says reason: the connection of the
	// start's /healthz may still count until the bridge has seen it close
	waitReady := func(want int, reason string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := adminGet(t, b.AdminURL+"/readyz")
			if code == want && strings.Contains(body, reason) {
				return
			}
			require.False(t, time.Now().After(deadline), "readyz %d, want %d and %s: %s", code, want, reason, body)
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitReady(http.StatusServiceUnavailable, `"reason":"connections: 19 open of max_connections 20"`)
	_, text := adminGet(t, b.AdminURL+"/metrics")
	assert.Equal(t, 0.0, metricLine(text, "soapbridge_ready"))
	assert.Equal(t, 19.0, metricLine(text, "soapbridge_http_connections"))
	assert.Equal(t, 20.0, metricLine(text, "soapbridge_http_connections_max"))
	for _, c := range conns {
		c.Close()
	}
	waitReady(http.StatusOK, "")
}

// TestEveryMetricIsDocumented: every family a scrape carries after each
// operation was called (the bridge's own, not the Go runtime's) is named
// in operations.md, so a new metric cannot reach operators undocumented.
func TestEveryMetricIsDocumented(t *testing.T) {
	lines, _ := scrapeAfterCalls(t, 1)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	families := map[string]bool{}
	for _, l := range lines {
		name := l[:strings.IndexAny(l, "{ ")]
		if !strings.HasPrefix(name, "soapbridge_") {
			continue // go_, process_, promhttp_: the client library's
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && bytes.Contains(doc, []byte("`"+base+"`")) {
				name = base
			}
		}
		families[name] = true
	}
	require.NotEmpty(t, families)
	for name := range families {
		assert.True(t, bytes.Contains(doc, []byte("`"+name+"`")), "metric %s is not in docs/operations.md", name)
	}
	t.Logf("%d metric families, each documented", len(families))
}
