package metrics

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Key rotations under way: the merchants whose previous secure key or
// client secret is still accepted beside the current one, and until when
// (operations.Service.KeyOverlaps).

// KeyOverlap is one merchant in key overlap (operations.KeyOverlap).
type KeyOverlap struct {
	GoID int64
	// SecureKey and ClientSecret say which previous one is accepted.
	SecureKey, ClientSecret bool
	// EndsAt is when the last of them stops being accepted.
	EndsAt time.Time
	// Default: previous_until is not set; EndsAt is the default bound.
	Default bool
	// PreviousKeyUsed is when this replica last accepted a request signed
	// with the previous secure key (zero: not since start).
	PreviousKeyUsed time.Time
}

var (
	overlapCountDesc = prometheus.NewDesc("soapbridge_key_overlap_merchants",
		"Merchants whose previous secure key or client secret is still accepted beside the current one (a rotation under way).", nil, nil)
	overlapEndDesc = prometheus.NewDesc("soapbridge_merchant_key_overlap_end_timestamp_seconds",
		"Unix time at which the merchant's previous secure key or client secret stops being accepted; merchants in overlap only.",
		[]string{"goid"}, nil)
	previousUseDesc = prometheus.NewDesc("soapbridge_merchant_previous_key_last_use_timestamp_seconds",
		"Unix time at which this replica last accepted a request of the merchant signed with its previous secure key; merchants in overlap whose previous key was used since start only.",
		[]string{"goid"}, nil)
)

// overlapCollector reports from memory at scrape time; the per-merchant
// gauge only with merchant labels on (bounded by the merchants configured).
type overlapCollector struct {
	list     *atomic.Pointer[func() []KeyOverlap]
	labelled bool
}

func (c overlapCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- overlapCountDesc
	if c.labelled {
		ch <- overlapEndDesc
		ch <- previousUseDesc
	}
}

func (c overlapCollector) Collect(ch chan<- prometheus.Metric) {
	var os []KeyOverlap
	if f := c.list.Load(); f != nil {
		os = (*f)()
	}
	ch <- prometheus.MustNewConstMetric(overlapCountDesc, prometheus.GaugeValue, float64(len(os)))
	if !c.labelled {
		return
	}
	for _, o := range os {
		goid := strconv.FormatInt(o.GoID, 10)
		ch <- prometheus.MustNewConstMetric(overlapEndDesc, prometheus.GaugeValue, float64(o.EndsAt.Unix()), goid)
		if !o.PreviousKeyUsed.IsZero() {
			ch <- prometheus.MustNewConstMetric(previousUseDesc, prometheus.GaugeValue, float64(o.PreviousKeyUsed.Unix()), goid)
		}
	}
}

// KeyOverlaps registers soapbridge_key_overlap_merchants (and, with
// merchant labels on, soapbridge_merchant_key_overlap_end_timestamp_seconds
// {goid} and soapbridge_merchant_previous_key_last_use_timestamp_seconds
// {goid}), read from list at every scrape; the status page reads the same
// list (KeyOverlapList).
func (m *Metrics) KeyOverlaps(list func() []KeyOverlap) {
	if m.overlaps.Swap(&list) == nil {
		m.Registry.MustRegister(overlapCollector{list: &m.overlaps, labelled: m.labelled})
	}
}

// KeyOverlapList is the merchants in key overlap now (none before
// KeyOverlaps).
func (m *Metrics) KeyOverlapList() []KeyOverlap {
	if f := m.overlaps.Load(); f != nil {
		return (*f)()
	}
	return nil
}
