package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The cut-over signal of the usage record (operations/usage): when each
// merchant last used the legacy interface, on any replica.

var lastCallDesc = prometheus.NewDesc("soapbridge_legacy_last_call_timestamp_seconds",
	"Unix time of the merchant's last legacy SOAP call or browser flow on any replica (as of this replica's last usage flush, or later).",
	[]string{"goid"}, nil)

// lastCallCollector reports the gauge from memory at scrape time: last
// never reads the store, so a scrape cannot fail or wait on it.
type lastCallCollector struct{ last func() map[int64]time.Time }

func (c lastCallCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lastCallDesc }

func (c lastCallCollector) Collect(ch chan<- prometheus.Metric) {
	for goid, t := range c.last() {
		ch <- prometheus.MustNewConstMetric(lastCallDesc, prometheus.GaugeValue, float64(t.Unix()), strconv.FormatInt(goid, 10))
	}
}

// LegacyLastCall registers soapbridge_legacy_last_call_timestamp_seconds
// {goid}, read from last (usage.Recorder.LastCalls) at every scrape. The
// series are bounded by the merchants configured: last reports no other.
// With merchant labels off there is none (the migration report still has
// days_since_last_call).
func (m *Metrics) LegacyLastCall(last func() map[int64]time.Time) {
	if m.labelled {
		m.Registry.MustRegister(lastCallCollector{last})
	}
}
