package metrics

import "github.com/prometheus/client_golang/prometheus"

// The admission limit on calls in progress (cmd/soapbridge/overload.go):
// its gauges and refusals, read from the limiter's atomics at scrape time,
// so that a refusal costs the limiter an atomic increment and nothing here.

// OverloadRoutes are the values of soapbridge_overload_refusals_total's
// and soapbridge_overload_abandoned_total's route label, in the order of
// OverloadStats.Refused and Abandoned: a SOAP call (a POST
// to the SOAP path), the gateway's callbacks (/callback/…), anything else
// (WSDL, browser flows, unknown paths).
var OverloadRoutes = [3]string{"soap", "callback", "other"}

// OverloadStats are the limiter's figures.
type OverloadStats struct {
	InProgress int64 // calls admitted and not answered yet
	Max        int   // the limit in force (max_calls_in_progress, or lower while the adaptive limit has lowered it); 0: no limit
	Refused    [len(OverloadRoutes)]int64
	Abandoned  [len(OverloadRoutes)]int64 // calls whose client left while they waited for a slot
}

var (
	inProgressDesc = prometheus.NewDesc("soapbridge_calls_in_progress",
		"Requests of the public listener admitted and not answered yet (/healthz not counted).", nil, nil)
	inProgressMaxDesc = prometheus.NewDesc("soapbridge_calls_in_progress_max",
		"The limit on requests in progress in force (max_calls_in_progress, or lower while the adaptive limit has lowered it); absent when there is none.", nil, nil)
	overloadRefusedDesc = prometheus.NewDesc("soapbridge_overload_refusals_total",
		"Requests refused with 503 because the limit on requests in progress was reached for overload_wait, by route (soap, callback, other).",
		[]string{"route"}, nil)
	overloadAbandonedDesc = prometheus.NewDesc("soapbridge_overload_abandoned_total",
		"Requests whose client closed its connection while they waited for a slot (overload_wait): neither made nor refused, by route (soap, callback, other).",
		[]string{"route"}, nil)
)

type overloadCollector struct{ stats func() OverloadStats }

// SetOverload registers the limiter's series, read from stats() at every
// scrape. Call it once.
func (m *Metrics) SetOverload(stats func() OverloadStats) {
	m.Registry.MustRegister(overloadCollector{stats})
}

func (c overloadCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inProgressDesc
	ch <- inProgressMaxDesc
	ch <- overloadRefusedDesc
	ch <- overloadAbandonedDesc
}

func (c overloadCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(inProgressDesc, prometheus.GaugeValue, float64(s.InProgress))
	if s.Max > 0 {
		ch <- prometheus.MustNewConstMetric(inProgressMaxDesc, prometheus.GaugeValue, float64(s.Max))
	}
	for i, r := range OverloadRoutes {
		ch <- prometheus.MustNewConstMetric(overloadRefusedDesc, prometheus.CounterValue, float64(s.Refused[i]), r)
		ch <- prometheus.MustNewConstMetric(overloadAbandonedDesc, prometheus.CounterValue, float64(s.Abandoned[i]), r)
	}
}
