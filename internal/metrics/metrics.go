// Package metrics holds the bridge's Prometheus metrics. It is the one
// place that imports prometheus: the core (operations), its SOAP adapter
// and the REST client only know small observer interfaces
// (operations.Observer, restbackend.Observer, OutboxConfig.OnAttempt),
// which Metrics implements, so they stay free of a metrics library and
// tests of the core need none. Every call of every entry (SOAP, the
// browser flows, the callbacks) reaches Observe once, as the core's
// operations.CallOutcome.
//
// Two rules keep the exposition useful when it is needed most and cheap
// when there are many merchants:
//   - A scrape never touches a dependency. What comes from the shared store
//     (outbox and ledger backlogs) and the dependencies' health are pushed
//     in by background probes (SetStoreCounts, SetDependencyUp) and served
//     from memory, with their age; a database outage shows as
//     soapbridge_dependency_up{dependency="store"} 0, not as a failed scrape.
//   - Per-merchant series are few (MerchantSeriesMax per merchant) and can be
//     turned off: the per-operation series carry no merchant label.
//
// The SOAP hot path (touch at >10k calls/s) looks its counters up in a map
// built at start, keyed by a comparable struct: no label formatting and no
// allocation per call.
package metrics

import (
	"context"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
)

// Results of a SOAP call, as soapbridge_soap_calls_total labels them
// (soapResult).
var results = []string{"ok", "client_fault", "server_fault", "denied", "rate_limited"}

// soapResult is the soapbridge_soap_calls_total label of a core result: a
// reply, even one that says FAILED, is "ok".
func soapResult(r operations.Result) string {
	switch r {
	case operations.ResultClientFault:
		return "client_fault"
	case operations.ResultServerError:
		return "server_fault"
	case operations.ResultDenied:
		return "denied"
	case operations.ResultRateLimited:
		return "rate_limited"
	}
	return "ok"
}

// flowResults are the results a browser flow can end with (the core's
// names).
var flowResults = []operations.Result{operations.ResultOK, operations.ResultRefused, operations.ResultBadSignature,
	operations.ResultServerError}

type flowKey struct {
	flow   string
	result operations.Result
}

type flowUseKey struct {
	flow string
	goid int64
}

// MerchantSeriesMax is the most counter series one configured merchant adds
// to a replica's exposition (with merchant labels on): a calls counter per
// result, a signature-failures counter and an unmapped-channels counter.
// The usage record's last-call gauge adds one more once the merchant has
// called, the key overlap gauge one while a rotation of the merchant's
// keys is under way, and the rate-share gauge (rateshare.go) one for a
// merchant with a rate_limit. Held by a test.
const MerchantSeriesMax = 7

// Goid stand-ins in the call map: a call without a goid (touch,
// paymentMethodList, an unreadable request), and a goid no merchant has.
const (
	noGoID    = 0
	otherGoID = -1
)

type callKey struct {
	op     string
	goid   int64
	result string
}

// callChild is everything one call updates, resolved at start.
type callChild struct {
	count    prometheus.Counter  // by operation and result
	latency  prometheus.Observer // by operation
	merchant prometheus.Counter  // by goid and result; nil: no goid or merchant labels off
	n        *atomic.Int64       // by operation and goid, for the status page
}

type gwKey struct {
	endpoint string
	status   int
}

type gwChild struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// Options are what New needs to know of the bridge.
type Options struct {
	// Operations are the legacy operation names; calls of another name
	// count as "unknown".
	Operations []string
	// GoIDs are the configured merchants; a call for another goid counts
	// as merchant "other", so a client cannot grow the label set.
	GoIDs []int64
	// MerchantLabels adds the per-merchant series (a goid label). Off, no
	// series grows with the number of merchants.
	MerchantLabels bool
	// Build is reported by soapbridge_build_info.
	Build Build
	// RefusalReasons are the reason codes of refused calls
	// (operations.RefusalReasons): soapbridge_refusals_total's labels.
	RefusalReasons []string
}

// Build identifies the running binary.
type Build struct {
	Version   string // the module version, "(devel)" for a local build
	Revision  string // VCS revision, "-dirty" appended for a modified tree; "unknown" when not stamped
	GoVersion string
}

// ReadBuild is the Build of the running binary, from its embedded build
// information.
func ReadBuild() Build {
	b := Build{Version: "unknown", Revision: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && b.Revision != "unknown" {
		b.Revision += "-dirty"
	}
	return b
}

// Metrics is the bridge's registry and the observers that feed it.
type Metrics struct {
	Registry *prometheus.Registry

	// per holds what is resolved per merchant; SetMerchants replaces it
	// whole, so the hot path reads it without a lock. When a source is
	// followed (Follow: the process's snapshot), the series in force are
	// the source's.
	per      atomic.Pointer[perMerchant]
	source   atomic.Pointer[func(context.Context) *MerchantSeries]
	labelled bool // merchant labels on
	ops      []string
	vecs     merchantVecs

	gwCalls *prometheus.CounterVec
	gwLat   *prometheus.HistogramVec
	gwMu    sync.RWMutex
	gw      map[gwKey]gwChild

	tokens      prometheus.Counter
	attempts    *prometheus.CounterVec
	storeLat    *prometheus.HistogramVec
	outcomes    [3]atomic.Int64 // delivered, retry, dead: for the status page
	sigByOp     map[string]prometheus.Counter
	unmapped    *prometheus.CounterVec
	reloads     *prometheus.CounterVec
	dependency  *prometheus.GaugeVec
	ready       atomic.Pointer[func() bool]
	against     atomic.Pointer[func() int64] // soapbridge_replicas_incompatible
	connections atomic.Pointer[func() ConnStats]
	counts      *storeCounts
	logins      *prometheus.CounterVec // auth.go
	ref         refusals               // refusals.go

	failMu   sync.Mutex
	failures []OutboxFailure // the most recent last, at most maxFailures

	// overlaps lists the merchants in key overlap (keyoverlap.go).
	overlaps atomic.Pointer[func() []KeyOverlap]

	flows map[flowKey]prometheus.Counter // soapbridge_flow_requests_total, resolved at start
}

// perMerchant is what the hot path resolves per merchant.
type perMerchant struct {
	goids     map[int64]bool
	calls     map[callKey]callChild
	flowN     map[flowUseKey]*atomic.Int64 // by flow and goid, for the status page
	sigByGoID map[int64]prometheus.Counter // nil with merchant labels off
	unmapped  map[int64]prometheus.Counter // nil with merchant labels off
}

// merchantVecs are the vectors the per-merchant children come from.
type merchantVecs struct {
	soapCalls               *prometheus.CounterVec
	soapLat                 *prometheus.HistogramVec
	byGoID, sigGoID, chanGo *prometheus.CounterVec // nil with merchant labels off
}

var outcomeNames = [3]string{"delivered", "retry", "dead"}

// Dependencies reported by soapbridge_dependency_up.
const (
	DependencyGateway = "gateway"
	DependencyStore   = "store"
)

// New registers every metric of the bridge described by o.
func New(o Options) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry(), gw: map[gwKey]gwChild{}, labelled: o.MerchantLabels,
		ops: append(append([]string(nil), o.Operations...), "unknown")}
	r := m.Registry
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "soapbridge_build_info",
		Help: "Always 1; the labels identify the running binary."}, []string{"version", "revision", "goversion"})
	build.WithLabelValues(o.Build.Version, o.Build.Revision, o.Build.GoVersion).Set(1)

	soapCalls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_soap_calls_total",
		Help: "SOAP calls by legacy operation and result."}, []string{"operation", "result"})
	soapLat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "soapbridge_soap_call_duration_seconds",
		Help:    "Time from reading a SOAP call to its reply being decided, any result, by legacy operation.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25}},
		[]string{"operation"})
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
		[]string{"operation"})
	sigs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_signature_failures_total",
		Help: "SOAP calls refused because their encryptedSignature does not verify, by operation."}, []string{"operation"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_config_reloads_total",
		Help: "Configuration reloads by result (ok: in force; refused: the old configuration stays)."}, []string{"result"})
	m.dependency = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "soapbridge_dependency_up",
		Help: "1 when the last background probe of the dependency (gateway, store) succeeded, else 0."}, []string{"dependency"})
	ready := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "soapbridge_ready",
		Help: "1 when this replica's /readyz answers 200, else 0."}, func() float64 {
		if f := m.ready.Load(); f != nil && (*f)() {
			return 1
		}
		return 0
	})
	against := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "soapbridge_replicas_incompatible",
		Help: "Live replicas on the same database that this one may not serve beside (release and schema version in the replicas table); while above 0 money-moving calls are refused."},
		func() float64 {
			if f := m.against.Load(); f != nil {
				return float64((*f)())
			}
			return 0
		})
	m.unmapped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_unmapped_payment_channels_total",
		Help: "paymentChannels and defaultPaymentChannel codes without a REST equivalent, by code (a legacy table code or unknown) and outcome (dropped, use_enabled, refused)."},
		[]string{"code", "outcome"})
	flowReqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_flow_requests_total",
		Help: "Requests of the legacy browser flows, the statement download and the gateway's callbacks, by flow and result."},
		[]string{"flow", "result"})
	m.flows = map[flowKey]prometheus.Counter{}
	for _, f := range usage.Flows {
		for _, r := range flowResults {
			m.flows[flowKey{f, r}] = flowReqs.WithLabelValues(f, r.String())
		}
	}
	m.counts = newStoreCounts(o.Operations)
	r.MustRegister(build, soapCalls, soapLat, flowReqs, m.gwCalls, m.gwLat, m.tokens, m.attempts, m.storeLat, sigs, m.unmapped,
		m.reloads, m.dependency, ready, against, m.counts, connCollector{m})
	m.registerLogins()
	m.registerRefusals(o)

	m.vecs = merchantVecs{soapCalls: soapCalls, soapLat: soapLat}
	if o.MerchantLabels {
		m.vecs.byGoID = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_merchant_soap_calls_total",
			Help: "SOAP calls by merchant (goid; other: a goid no merchant has) and result."}, []string{"goid", "result"})
		m.vecs.sigGoID = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_merchant_signature_failures_total",
			Help: "SOAP calls refused because their encryptedSignature does not verify, by merchant (goid)."}, []string{"goid"})
		m.vecs.chanGo = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_merchant_unmapped_payment_channels_total",
			Help: "paymentChannels and defaultPaymentChannel codes without a REST equivalent, by merchant (goid)."}, []string{"goid"})
		r.MustRegister(m.vecs.byGoID, m.vecs.sigGoID, m.vecs.chanGo)
	}
	m.sigByOp = map[string]prometheus.Counter{}
	for _, op := range m.ops {
		m.sigByOp[op] = sigs.WithLabelValues(op)
	}
	m.SetMerchants(o.GoIDs)
	for _, o := range outcomeNames {
		m.attempts.WithLabelValues(o)
	}
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("refused")
	return m
}

// MerchantSeries are the per-merchant series of one set of merchants,
// resolved whole (Series) before anything puts them in force.
type MerchantSeries struct{ p *perMerchant }

// Series resolves the per-merchant series of goids against the series in
// force (a merchant kept keeps its counts), without putting them in force:
// a reload builds them, puts them in force with the rest of its snapshot
// (Follow), then has Retire drop what the removed merchants left.
func (m *Metrics) Series(goids []int64) *MerchantSeries {
	return &MerchantSeries{m.resolve(m.inForce(), goids)}
}

// Follow makes src the series in force: the holder of the process's one
// snapshot. src(ctx) are the series of the configuration the call behind
// ctx pinned, those in force for a ctx that pinned none: a call counts in
// its own configuration's series, so a merchant a reload removes while its
// call is in flight is counted under its own goid for that call, not as
// "other" (the series stay bounded: Retire drops a removed merchant's once
// no call pinned them). While src returns nil, the series SetMerchants put
// are.
func (m *Metrics) Follow(src func(ctx context.Context) *MerchantSeries) { m.source.Store(&src) }

// Retire drops the series and refusals of the merchants of old that none
// of keep has: the series in force, and those of configurations that calls
// still in flight pinned (Follow), which may still count in them.
func (m *Metrics) Retire(old *MerchantSeries, keep ...*MerchantSeries) {
	if old == nil || len(keep) == 0 {
		return
	}
	kept := map[int64]bool{}
	for _, k := range keep {
		for g := range k.p.goids {
			kept[g] = true
		}
	}
	m.retire(old.p, kept)
}

// InForce are the per-merchant series in force (a snapshot's first).
func (m *Metrics) InForce() *MerchantSeries { return &MerchantSeries{m.inForce()} }

// inForce is the per-merchant series in force.
func (m *Metrics) inForce() *perMerchant { return m.seriesOf(context.Background()) }

// seriesOf are the per-merchant series of the call behind ctx (Follow).
func (m *Metrics) seriesOf(ctx context.Context) *perMerchant {
	if src := m.source.Load(); src != nil {
		if s := (*src)(ctx); s != nil {
			return s.p
		}
	}
	return m.per.Load()
}

// SetMerchants resolves the per-merchant series of goids and puts them in
// force (at start; a reload of a process following a snapshot builds them
// with Series instead): a new merchant gets its series, a removed one loses
// them, the others keep their values.
func (m *Metrics) SetMerchants(goids []int64) {
	old := m.inForce()
	p := m.resolve(old, goids)
	m.per.Store(p)
	m.retire(old, p.goids)
}

// resolve builds the per-merchant series of goids; old, the series in
// force (nil: none), lends the status page's counts of the merchants kept.
func (m *Metrics) resolve(old *perMerchant, goids []int64) *perMerchant {
	p := &perMerchant{goids: map[int64]bool{}, calls: map[callKey]callChild{}, flowN: map[flowUseKey]*atomic.Int64{}}
	merchants := append([]int64{noGoID, otherGoID}, goids...)
	for _, g := range goids {
		p.goids[g] = true
	}
	if m.labelled {
		p.sigByGoID, p.unmapped = map[int64]prometheus.Counter{}, map[int64]prometheus.Counter{}
		for _, g := range merchants[1:] {
			p.sigByGoID[g] = m.vecs.sigGoID.WithLabelValues(goidLabel(g))
			p.unmapped[g] = m.vecs.chanGo.WithLabelValues(goidLabel(g))
		}
	}
	for _, op := range m.ops {
		lat := m.vecs.soapLat.WithLabelValues(op)
		for _, g := range merchants {
			n := new(atomic.Int64) // the status page's count, kept for a merchant already known
			if old != nil {
				if c, ok := old.calls[callKey{op, g, results[0]}]; ok {
					n = c.n
				}
			}
			for _, res := range results {
				c := callChild{count: m.vecs.soapCalls.WithLabelValues(op, res), latency: lat, n: n}
				if m.labelled && g != noGoID {
					c.merchant = m.vecs.byGoID.WithLabelValues(goidLabel(g), res)
				}
				p.calls[callKey{op, g, res}] = c
			}
		}
	}
	for _, f := range usage.Flows {
		for _, g := range merchants {
			n := new(atomic.Int64)
			if old != nil && old.flowN[flowUseKey{f, g}] != nil {
				n = old.flowN[flowUseKey{f, g}]
			}
			p.flowN[flowUseKey{f, g}] = n
		}
	}
	return p
}

// retire drops what old's merchants that kept lacks left behind.
func (m *Metrics) retire(old *perMerchant, kept map[int64]bool) {
	if old != nil {
		m.pruneRefusals(kept)
	}
	if old == nil || !m.labelled {
		return
	}
	for g := range old.goids {
		if !kept[g] {
			l := goidLabel(g)
			m.vecs.sigGoID.DeleteLabelValues(l)
			m.vecs.chanGo.DeleteLabelValues(l)
			for _, res := range results {
				m.vecs.byGoID.DeleteLabelValues(l, res)
			}
		}
	}
}

func goidLabel(g int64) string {
	switch g {
	case noGoID:
		return "none"
	case otherGoID:
		return "other"
	}
	return strconv.FormatInt(g, 10)
}

// goidKey maps a call's goid to the call map's keys.
func (p *perMerchant) goidKey(goid int64) int64 {
	if goid != noGoID && !p.goids[goid] {
		return otherGoID
	}
	return goid
}

// Observe implements operations.Observer: every finished call of every
// entry. A SOAP call counts in the soapbridge_soap_calls_* series, a
// browser flow in soapbridge_flow_requests_total; both in the status
// page's counts (Usage). The per-merchant series are those the call pinned
// (Follow), else those in force.
func (m *Metrics) Observe(ctx context.Context, o operations.CallOutcome) {
	p := m.seriesOf(ctx)
	if !o.Flow {
		m.observeCall(p, o.Operation, o.GoID, soapResult(o.Result), o.Duration)
		return
	}
	r := o.Result
	if r != operations.ResultOK && r != operations.ResultBadSignature && r != operations.ResultServerError {
		r = operations.ResultRefused // a flow has no other refusals
	}
	if c, ok := m.flows[flowKey{o.Operation, r}]; ok {
		c.Inc()
	}
	if n := p.flowN[flowUseKey{o.Operation, p.goidKey(o.GoID)}]; n != nil {
		n.Add(1)
	}
}

// ObserveCall counts one SOAP call of op by its series' labels (goid 0:
// none; result: one of results).
func (m *Metrics) ObserveCall(op string, goid int64, result string, d time.Duration) {
	m.observeCall(m.inForce(), op, goid, result, d)
}

// observeCall counts one SOAP call in the per-merchant series p.
func (m *Metrics) observeCall(p *perMerchant, op string, goid int64, result string, d time.Duration) {
	goid = p.goidKey(goid)
	c, ok := p.calls[callKey{op, goid, result}]
	if !ok {
		c, ok = p.calls[callKey{"unknown", goid, result}]
		if !ok {
			return
		}
	}
	c.count.Inc()
	c.latency.Observe(d.Seconds())
	if c.merchant != nil {
		c.merchant.Inc()
	}
	c.n.Add(1)
}

// ObserveGateway implements restbackend.Observer. Endpoint names are the
// client's ("payment status"); the label value has "_" for spaces.
func (m *Metrics) ObserveGateway(endpoint string, status int, d time.Duration) {
	k := gwKey{endpoint, status}
	m.gwMu.RLock()
	c, ok := m.gw[k]
	m.gwMu.RUnlock()
	if !ok {
		l := prometheus.Labels{"endpoint": strings.ReplaceAll(endpoint, " ", "_"), "status": strconv.Itoa(status)}
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
	c, ok := m.sigByOp[op]
	if !ok {
		c = m.sigByOp["unknown"]
	}
	c.Inc()
	if p := m.inForce(); p.sigByGoID != nil {
		if c, ok := p.sigByGoID[p.goidKey(goid)]; ok {
			c.Inc()
		}
	}
}

// UnmappedChannel is operations.Config.OnUnmappedChannel. The core passes
// the code as a bounded label (a legacy table code or "unknown") and one of
// its few outcomes; per merchant, one series counts them all.
func (m *Metrics) UnmappedChannel(goid int64, code, outcome string) {
	m.unmapped.WithLabelValues(code, outcome).Inc()
	if p := m.inForce(); p.unmapped != nil {
		if c, ok := p.unmapped[p.goidKey(goid)]; ok {
			c.Inc()
		}
	}
}

// ConfigReloaded counts a configuration reload: ok when the new one is in
// force, not ok when it was refused and the old one stays.
func (m *Metrics) ConfigReloaded(ok bool) {
	res := "refused"
	if ok {
		res = "ok"
	}
	m.reloads.WithLabelValues(res).Inc()
}

// SetDependencyUp records the result of a background probe of dependency
// (DependencyGateway, DependencyStore). A dependency never probed has no
// series.
func (m *Metrics) SetDependencyUp(dependency string, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	m.dependency.WithLabelValues(dependency).Set(v)
}

// SetReadiness makes soapbridge_ready report ready() at every scrape.
func (m *Metrics) SetReadiness(ready func() bool) { m.ready.Store(&ready) }

// SetIncompatibleReplicas makes soapbridge_replicas_incompatible report
// n() at every scrape.
func (m *Metrics) SetIncompatibleReplicas(n func() int64) { m.against.Store(&n) }

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

// OperationUse is how often a merchant called one legacy operation or
// browser flow since start (any result).
type OperationUse struct {
	Operation string
	Calls     int64
}

// Usage lists, per merchant (goid as text; "none" for calls without one,
// "other" for goids no merchant has), the operations and browser flows
// called and how often (every call Observe is told of, whatever its result),
// most called first: what a shop still uses and must port before it can
// leave SOAP. Kept in memory for the status page, whether or not merchant
// labels are exported.
func (m *Metrics) Usage() map[string][]OperationUse {
	byMerchant := map[string]map[string]int64{}
	for k, c := range m.inForce().calls {
		if k.result != results[0] {
			continue // one counter per operation and goid, shared by the results
		}
		n := c.n.Load()
		if n == 0 {
			continue
		}
		ml := goidLabel(k.goid)
		if byMerchant[ml] == nil {
			byMerchant[ml] = map[string]int64{}
		}
		byMerchant[ml][k.op] += n
	}
	for k, c := range m.inForce().flowN {
		if n := c.Load(); n > 0 {
			ml := goidLabel(k.goid)
			if byMerchant[ml] == nil {
				byMerchant[ml] = map[string]int64{}
			}
			byMerchant[ml][k.flow] += n
		}
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
