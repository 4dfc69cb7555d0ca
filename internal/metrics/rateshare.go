package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The part of each rate-limited merchant's rate_limit this replica
// enforces (internal/access, rates.go): 1 on SQLite, its share of the
// cluster's on PostgreSQL.

var rateShareDesc = prometheus.NewDesc("soapbridge_rate_share",
	"Part (0..1) of the merchant's rate_limit this replica enforces now: its share of the cluster's rate, set from the replicas' demand every second.",
	[]string{"goid"}, nil)

// rateShareCollector reports the gauge from the Guard at scrape time.
type rateShareCollector struct{ shares func() map[int64]float64 }

func (c rateShareCollector) Describe(ch chan<- *prometheus.Desc) { ch <- rateShareDesc }

func (c rateShareCollector) Collect(ch chan<- prometheus.Metric) {
	for goid, s := range c.shares() {
		ch <- prometheus.MustNewConstMetric(rateShareDesc, prometheus.GaugeValue, s, strconv.FormatInt(goid, 10))
	}
}

// RateShares registers soapbridge_rate_share{goid}, read from shares
// (access.Guard.RateShares) at every scrape. The series are bounded by the
// merchants configured with a rate_limit; with merchant labels off there
// is none.
func (m *Metrics) RateShares(shares func() map[int64]float64) {
	if m.labelled {
		m.Registry.MustRegister(rateShareCollector{shares})
	}
}
