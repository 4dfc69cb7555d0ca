package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/legacybridge/soapbridge/store"
)

// storeCounts serves the backlogs of the shared store (outbox, ledger) from
// the last successful read of a background probe (SetStoreCounts), so that
// a scrape never waits for, nor fails with, the database. Every replica
// reports the same shared backlog.
type storeCounts struct {
	known   map[string]bool // operation names; others are counted as "other"
	started time.Time

	mu      sync.Mutex
	have    bool
	at      time.Time
	outbox  store.OutboxCounts
	ledger  store.LedgerCounts
	inDoubt map[string]int // by operation, every operation seen in doubt since start (0 once settled)
}

var (
	outboxDesc = prometheus.NewDesc("soapbridge_outbox_notifications",
		"Notifications in the outbox by state (pending, delivered, dead), from the shared store; see soapbridge_store_counts_age_seconds.",
		[]string{"state"}, nil)
	ledgerDesc = prometheus.NewDesc("soapbridge_ledger_calls",
		"Money-moving calls in the ledger not done, by state (pending: under way, in_doubt: outcome unknown), from the shared store.",
		[]string{"state"}, nil)
	inDoubtDesc = prometheus.NewDesc("soapbridge_ledger_in_doubt_calls",
		"Ledger entries in doubt by operation (createPayment moves no money; the others may have), from the shared store; "+
			"an operation appears once it had an entry in doubt since start.",
		[]string{"operation"}, nil)
	ageDesc = prometheus.NewDesc("soapbridge_store_counts_age_seconds",
		"Seconds since the store-backed gauges (outbox, ledger) were last read (since start if never): they keep their last value while the store cannot be read.",
		nil, nil)
)

func newStoreCounts(ops []string) *storeCounts {
	c := &storeCounts{known: map[string]bool{}, started: time.Now(), inDoubt: map[string]int{}}
	for _, op := range ops {
		c.known[op] = true
	}
	return c
}

// SetStoreCounts records a successful read of the store's backlogs.
func (m *Metrics) SetStoreCounts(outbox store.OutboxCounts, ledger store.LedgerCounts) {
	c := m.counts
	c.mu.Lock()
	defer c.mu.Unlock()
	c.have, c.at, c.outbox, c.ledger = true, time.Now(), outbox, ledger
	for op := range c.inDoubt {
		c.inDoubt[op] = 0
	}
	for op, n := range ledger.InDoubtByOperation {
		if !c.known[op] {
			op = "other"
		}
		c.inDoubt[op] += n
	}
}

// StoreCounts returns the last outbox counts read and when (ok false when
// none was read yet).
func (m *Metrics) StoreCounts() (outbox store.OutboxCounts, at time.Time, ok bool) {
	c := m.counts
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outbox, c.at, c.have
}

func (c *storeCounts) Describe(ch chan<- *prometheus.Desc) {
	ch <- outboxDesc
	ch <- ledgerDesc
	ch <- inDoubtDesc
	ch <- ageDesc
}

func (c *storeCounts) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	since := c.started
	if c.have {
		since = c.at
		gauge := func(d *prometheus.Desc, v int, label string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), label)
		}
		gauge(outboxDesc, c.outbox.Pending, "pending")
		gauge(outboxDesc, c.outbox.Delivered, "delivered")
		gauge(outboxDesc, c.outbox.Dead, "dead")
		gauge(ledgerDesc, c.ledger.Pending, "pending")
		gauge(ledgerDesc, c.ledger.InDoubt, "in_doubt")
		for op, n := range c.inDoubt {
			gauge(inDoubtDesc, n, op)
		}
	}
	ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, time.Since(since).Seconds())
}

// ConnStats are the public listener's connections.
type ConnStats struct {
	Open    int
	Max     int // 0: no cap
	Refused int64
}

// SetConnections makes every scrape report stats().
func (m *Metrics) SetConnections(stats func() ConnStats) { m.connections.Store(&stats) }

type connCollector struct{ m *Metrics }

var (
	connOpenDesc    = prometheus.NewDesc("soapbridge_http_connections", "Open client connections of the public listener.", nil, nil)
	connMaxDesc     = prometheus.NewDesc("soapbridge_http_connections_max", "The cap on open client connections (max_connections); absent when none.", nil, nil)
	connRefusedDesc = prometheus.NewDesc("soapbridge_http_connections_refused_total", "Client connections closed at once because a connection cap was reached.", nil, nil)
)

func (c connCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- connOpenDesc
	ch <- connMaxDesc
	ch <- connRefusedDesc
}

func (c connCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.m.connections.Load()
	if f == nil {
		return
	}
	s := (*f)()
	ch <- prometheus.MustNewConstMetric(connOpenDesc, prometheus.GaugeValue, float64(s.Open))
	if s.Max > 0 {
		ch <- prometheus.MustNewConstMetric(connMaxDesc, prometheus.GaugeValue, float64(s.Max))
	}
	ch <- prometheus.MustNewConstMetric(connRefusedDesc, prometheus.CounterValue, float64(s.Refused))
}
