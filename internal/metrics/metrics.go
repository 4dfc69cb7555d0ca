// Package metrics holds the bridge's Prometheus metrics. It is the one
// place that imports prometheus: the core (operations), its SOAP adapter
// and the REST client only know small observer interfaces
// (soapapi.Observer, restbackend.Observer, OutboxConfig.OnAttempt), which
// Metrics implements, so they stay free of a metrics library and tests of
// the core need none.
//
// The SOAP hot path (touch at >10k calls/s) looks its counter and
// histogram up in a map built at start, keyed by a comparable struct: no
// label formatting and no allocation per call.
package metrics

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/legacybridge/soapbridge/store"
)

// Results of a SOAP call (soapapi.Result* values).
var results = []string{"ok", "client_fault", "server_fault", "denied", "rate_limited"}

type callKey struct {
	op     string
	goid   int64
	result string
}

type callChild struct {
	count   prometheus.Counter
	latency prometheus.Observer
	n       *atomic.Int64 // for the status page, without reading prometheus back
}

type gwKey struct {
	endpoint string
	status   int
}

type gwChild struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// Metrics is the bridge's registry and the observers that feed it.
type Metrics struct {
	Registry *prometheus.Registry

	calls     map[callKey]callChild // read-only after New
	soapCalls *prometheus.CounterVec
	soapLat   *prometheus.HistogramVec
	goids     map[int64]bool

	gwCalls *prometheus.CounterVec
	gwLat   *prometheus.HistogramVec
	gwMu    sync.RWMutex
	gw      map[gwKey]gwChild

	tokens   prometheus.Counter
	attempts *prometheus.CounterVec
	storeLat *prometheus.HistogramVec
	outcomes [3]atomic.Int64 // delivered, retry, dead: for the status page
	badSigs  *prometheus.CounterVec
	channels *prometheus.CounterVec
	logins   *prometheus.CounterVec // auth.go

	failMu   sync.Mutex
	failures []OutboxFailure // the most recent last, at most maxFailures
}

var outcomeNames = [3]string{"delivered", "retry", "dead"}

// New registers every metric for the operations ops and the merchants
// goids. Calls for another goid count under merchant "other", so a client
// cannot grow the label set.
func New(ops []string, goids []int64, st store.Store) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry(), goids: map[int64]bool{}, gw: map[gwKey]gwChild{}}
	r := m.Registry
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.soapCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_soap_calls_total",
		Help: "SOAP calls by legacy operation, merchant (goid) and result."}, []string{"operation", "merchant", "result"})
	m.soapLat = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "soapbridge_soap_call_duration_seconds",
		Help:    "Time from reading a SOAP call to its reply being decided.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25}},
		[]string{"operation", "merchant", "result"})
	m.gwCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_gateway_calls_total",
		Help: "HTTP exchanges with the REST gateway by endpoint and status (0: no reply)."}, []string{"endpoint", "status"})
	m.gwLat = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "soapbridge_gateway_call_duration_seconds",
		Help: "Duration of one HTTP exchange with the REST gateway.", Buckets: prometheus.DefBuckets}, []string{"endpoint", "status"})
	m.tokens = prometheus.NewCounter(prometheus.CounterOpts{Name: "soapbridge_gateway_token_fetches_total",
		Help: "OAuth2 token requests sent to the gateway (cached tokens are not counted)."})
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_outbox_attempts_total",
		Help: "Notification delivery attempts by outcome (delivered, retry, dead)."}, []string{"outcome"})
	m.storeLat = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "soapbridge_store_duration_seconds",
		Help: "Duration of store operations.", Buckets: []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}},
		[]string{"op"})
	m.badSigs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_signature_failures_total",
		Help: "SOAP calls refused because their encryptedSignature does not verify, by operation and merchant."},
		[]string{"operation", "merchant"})
	m.channels = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_unmapped_payment_channels_total",
		Help: "paymentChannels and defaultPaymentChannel codes without a REST equivalent, by merchant, code (a legacy table code or unknown) and outcome (dropped, use_enabled, refused)."},
		[]string{"merchant", "code", "outcome"})
	r.MustRegister(m.soapCalls, m.soapLat, m.gwCalls, m.gwLat, m.tokens, m.attempts, m.storeLat, m.badSigs, m.channels)
	m.registerLogins()
	if st != nil {
		r.MustRegister(&outboxCollector{st: st})
	}

	m.calls = map[callKey]callChild{}
	merchants := append([]int64{0, -1}, goids...) // 0: none (touch, unreadable), -1: other
	for _, g := range goids {
		m.goids[g] = true
	}
	for _, op := range append(ops, "unknown") {
		for _, g := range merchants {
			for _, res := range results {
				l := prometheus.Labels{"operation": op, "merchant": merchantLabel(g), "result": res}
				m.calls[callKey{op, g, res}] = callChild{count: m.soapCalls.With(l), latency: m.soapLat.With(l), n: new(atomic.Int64)}
			}
		}
	}
	for _, o := range []string{"delivered", "retry", "dead"} {
		m.attempts.WithLabelValues(o)
	}
	return m
}

func merchantLabel(g int64) string {
	switch g {
	case 0:
		return "none"
	case -1:
		return "other"
	}
	return strconv.FormatInt(g, 10)
}

// ObserveCall implements soapapi.Observer.
func (m *Metrics) ObserveCall(op string, goid int64, result string, d time.Duration) {
	if goid != 0 && !m.goids[goid] {
		goid = -1
	}
	c, ok := m.calls[callKey{op, goid, result}]
	if !ok {
		c, ok = m.calls[callKey{"unknown", goid, result}]
		if !ok {
			return
		}
	}
	c.count.Inc()
	c.latency.Observe(d.Seconds())
	c.n.Add(1)
}

// ObserveGateway implements restbackend.Observer.
func (m *Metrics) ObserveGateway(endpoint string, status int, d time.Duration) {
	k := gwKey{endpoint, status}
	m.gwMu.RLock()
	c, ok := m.gw[k]
	m.gwMu.RUnlock()
	if !ok {
		l := prometheus.Labels{"endpoint": endpoint, "status": strconv.Itoa(status)}
		c = gwChild{count: m.gwCalls.With(l), latency: m.gwLat.With(l)}
		m.gwMu.Lock()
		m.gw[k] = c
		m.gwMu.Unlock()
	}
	c.count.Inc()
	c.latency.Observe(d.Seconds())
	if endpoint == "token" {
		m.tokens.Inc()
	}
}

// BadSignature is operations.Config.OnBadSignature. The labels stay
// bounded: an operation comes from the core's own names, an unconfigured
// goid counts as "other".
func (m *Metrics) BadSignature(op string, goid int64) {
	if goid != 0 && !m.goids[goid] {
		goid = -1
	}
	m.badSigs.WithLabelValues(op, merchantLabel(goid)).Inc()
}

// UnmappedChannel is operations.Config.OnUnmappedChannel. The core passes
// the code as a bounded label (a legacy table code or "unknown") and one
// of its few outcomes; an unconfigured goid counts as "other".
func (m *Metrics) UnmappedChannel(goid int64, code, outcome string) {
	if goid != 0 && !m.goids[goid] {
		goid = -1
	}
	m.channels.WithLabelValues(merchantLabel(goid), code, outcome).Inc()
}

// maxFailures is how many failed deliveries the status page lists.
const maxFailures = 20

// OutboxFailure is a failed delivery attempt as the status page shows it:
// where (scheme and host only: the path and query of a notification URL
// carry the e-shop's parameters and the signature) and what came back.
type OutboxFailure struct {
	At        time.Time
	GoID      int64
	PaymentID int64
	Target    string // scheme://host
	Status    string // "HTTP 503", "no reply", "timeout"
	Dead      bool   // given up
	RequestID string
}

// OutboxFailed is OutboxConfig.OnFailure.
func (m *Metrics) OutboxFailed(f OutboxFailure) {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	if len(m.failures) == maxFailures {
		copy(m.failures, m.failures[1:])
		m.failures = m.failures[:maxFailures-1]
	}
	m.failures = append(m.failures, f)
}

// RecentFailures are the last failed deliveries, most recent first.
func (m *Metrics) RecentFailures() []OutboxFailure {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	out := make([]OutboxFailure, len(m.failures))
	for i, f := range m.failures {
		out[len(out)-1-i] = f
	}
	return out
}

// OutboxAttempt is OutboxConfig.OnAttempt.
func (m *Metrics) OutboxAttempt(outcome string) {
	m.attempts.WithLabelValues(outcome).Inc()
	for i, n := range outcomeNames {
		if n == outcome {
			m.outcomes[i].Add(1)
		}
	}
}

// Attempts are the delivery attempts since start by outcome.
func (m *Metrics) Attempts() []OperationUse {
	out := make([]OperationUse, len(outcomeNames))
	for i, n := range outcomeNames {
		out[i] = OperationUse{n, m.outcomes[i].Load()}
	}
	return out
}

// OperationUse is how often a merchant called one legacy operation since
// start (any result).
type OperationUse struct {
	Operation string
	Calls     int64
}

// Usage lists, per merchant label, the operations called and how often,
// most called first: what a shop still uses and must port before it can
// leave SOAP.
func (m *Metrics) Usage() map[string][]OperationUse {
	byMerchant := map[string]map[string]int64{}
	for k, c := range m.calls {
		n := c.n.Load()
		if n == 0 {
			continue
		}
		ml := merchantLabel(k.goid)
		if byMerchant[ml] == nil {
			byMerchant[ml] = map[string]int64{}
		}
		byMerchant[ml][k.op] += n
	}
	out := map[string][]OperationUse{}
	for ml, ops := range byMerchant {
		var us []OperationUse
		for op, n := range ops {
			us = append(us, OperationUse{op, n})
		}
		sort.Slice(us, func(i, j int) bool {
			if us[i].Calls != us[j].Calls {
				return us[i].Calls > us[j].Calls
			}
			return us[i].Operation < us[j].Operation
		})
		out[ml] = us
	}
	return out
}

// outboxCollector reads the outbox and ledger backlogs from the store at
// scrape time, so that every replica reports the shared backlog.
type outboxCollector struct{ st store.Store }

var outboxDesc = prometheus.NewDesc("soapbridge_outbox_notifications", "Notifications in the outbox by state (pending, delivered, dead).",
	[]string{"state"}, nil)

var ledgerDesc = prometheus.NewDesc("soapbridge_ledger_calls", "Money-moving calls in the ledger not done, by state (pending: under way, in_doubt: outcome unknown).",
	[]string{"state"}, nil)

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- outboxDesc; ch <- ledgerDesc }

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if l, err := c.st.LedgerCounts(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(ledgerDesc, err)
	} else {
		ch <- prometheus.MustNewConstMetric(ledgerDesc, prometheus.GaugeValue, float64(l.Pending), "pending")
		ch <- prometheus.MustNewConstMetric(ledgerDesc, prometheus.GaugeValue, float64(l.InDoubt), "in_doubt")
	}
	n, err := c.st.Counts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(outboxDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(outboxDesc, prometheus.GaugeValue, float64(n.Pending), "pending")
	ch <- prometheus.MustNewConstMetric(outboxDesc, prometheus.GaugeValue, float64(n.Delivered), "delivered")
	ch <- prometheus.MustNewConstMetric(outboxDesc, prometheus.GaugeValue, float64(n.Dead), "dead")
}

// Store wraps st so that its operations are timed.
func (m *Metrics) Store(st store.Store) store.Store {
	t := &timedStore{Store: st}
	for i, op := range storeOps {
		t.h[i] = m.storeLat.WithLabelValues(op)
	}
	return t
}
