package metrics

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Refusal is a refused call as the status page lists it
// (operations.Refusal): no customer data, no signature text.
type Refusal struct {
	At        time.Time
	GoID      int64 // the configured merchant; 0 none
	Operation string
	Reason    string // a reason code (operations.RefusalReasons)
	Field     string // the legacy field at fault, "" none
	RequestID string
}

// MaxRefusalsPerMerchant is how many refusals the status page keeps per
// configured merchant (this replica, the most recent).
const MaxRefusalsPerMerchant = 10

// otherReason is the label of a reason code not in Options.RefusalReasons.
const otherReason = "unlisted"

// refusals counts refused calls by reason and keeps each merchant's last.
type refusals struct {
	total   map[string]prometheus.Counter // by reason, resolved at start
	byGoID  *prometheus.CounterVec        // goid, reason; nil with merchant labels off
	mu      sync.Mutex
	goidSet map[int64]bool // the series of byGoID made so far
	last    map[int64][]Refusal
}

func (m *Metrics) registerRefusals(o Options) {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_refusals_total",
		Help: "Calls refused (signature, access, validation, rate, gateway) by reason code."}, []string{"reason"})
	m.Registry.MustRegister(total)
	m.ref.total = map[string]prometheus.Counter{}
	for _, r := range append(slices.Clone(o.RefusalReasons), otherReason) {
		m.ref.total[r] = total.WithLabelValues(r)
	}
	m.ref.last = map[int64][]Refusal{}
	m.ref.goidSet = map[int64]bool{}
	if o.MerchantLabels {
		m.ref.byGoID = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_merchant_refusals_total",
			Help: "Calls refused by merchant (goid) and reason code; a series appears with the merchant's first refusal of that reason."},
			[]string{"goid", "reason"})
		m.Registry.MustRegister(m.ref.byGoID)
	}
}

// Refused is operations.Config.OnRefusal: it counts r by reason (and by
// merchant, with merchant labels on) and keeps it among the merchant's
// last refusals. Labels stay bounded: a reason outside the fixed set counts
// as "other", a goid no merchant has gets no series and no list.
func (m *Metrics) Refused(r Refusal) {
	c, ok := m.ref.total[r.Reason]
	if !ok {
		r.Reason = otherReason
		c = m.ref.total[otherReason]
	}
	c.Inc()
	p := m.inForce()
	if r.GoID == noGoID || !p.goids[r.GoID] {
		return
	}
	if m.ref.byGoID != nil {
		m.ref.byGoID.WithLabelValues(goidLabel(r.GoID), r.Reason).Inc()
	}
	m.ref.mu.Lock()
	defer m.ref.mu.Unlock()
	m.ref.goidSet[r.GoID] = true
	l := m.ref.last[r.GoID]
	if len(l) == MaxRefusalsPerMerchant {
		l = slices.Delete(l, 0, 1)
	}
	m.ref.last[r.GoID] = append(l, r)
}

// LastRefusals are goid's last refusals on this replica, the most recent
// first.
func (m *Metrics) LastRefusals(goid int64) []Refusal {
	m.ref.mu.Lock()
	defer m.ref.mu.Unlock()
	l := slices.Clone(m.ref.last[goid])
	slices.Reverse(l)
	return l
}

// pruneRefusals forgets the refusals and series of merchants no longer
// configured (a reload removed them).
func (m *Metrics) pruneRefusals(goids map[int64]bool) {
	m.ref.mu.Lock()
	defer m.ref.mu.Unlock()
	for g := range m.ref.goidSet {
		if goids[g] {
			continue
		}
		delete(m.ref.goidSet, g)
		delete(m.ref.last, g)
		if m.ref.byGoID != nil {
			m.ref.byGoID.DeletePartialMatch(prometheus.Labels{"goid": goidLabel(g)})
		}
	}
}
