package metrics

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/store"
)

var legacyOps = []string{"createPayment", "voidAuthorization", "createRecurrentPayment", "refundPayment", "partiallyRefundPayment",
	"paymentStatus", "paymentStatusWCust", "voidRecurrentPayment", "createBuyer", "capturePayment", "paymentMethodList", "touch"}

// series counts the series of a gather whose labels name value, and the
// series in all.
func series(t *testing.T, m *Metrics, value string) (naming, all int) {
	t.Helper()
	mfs, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			n := 1 // one sample line
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				n = len(s.GetHistogram().GetBucket()) + 3 // the buckets, +Inf, _sum, _count
			case dto.MetricType_SUMMARY:
				n = len(s.GetSummary().GetQuantile()) + 2
			}
			all += n
			for _, l := range s.GetLabel() {
				if l.GetValue() == value {
					naming += n
					break
				}
			}
		}
	}
	return naming, all
}

// everything drives every series a merchant can have: every operation
// with every result, and a bad signature of every operation.
func everything(m *Metrics, goid int64) {
	for _, op := range append(legacyOps, "noSuchOperation") {
		for _, res := range results {
			m.ObserveCall(op, goid, res, time.Millisecond)
		}
		m.BadSignature(op, goid)
	}
}

func TestMerchantSeriesAreFewAndCanBeTurnedOff(t *testing.T) {
	goids := []int64{8000000001, 8000000002, 8000000003}
	on := New(Options{Operations: legacyOps, GoIDs: goids, MerchantLabels: true})
	off := New(Options{Operations: legacyOps, GoIDs: goids})
	for _, m := range []*Metrics{on, off} {
		for _, g := range append(goids, 0, 123) { // no goid, an unknown one
			everything(m, g)
		}
	}
	for _, g := range []string{"8000000001", "8000000002", "8000000003", "other"} {
		n, _ := series(t, on, g)
		assert.Equal(t, MerchantSeriesMax, n, "series of merchant %s", g)
		n, _ = series(t, off, g)
		assert.Zero(t, n, "merchant labels off: no series names merchant %s", g)
	}
	_, allOn := series(t, on, "")
	_, allOff := series(t, off, "")
	assert.Equal(t, allOff+MerchantSeriesMax*(len(goids)+1), allOn, "the merchants (and other) add nothing else")

	// A fourth merchant adds exactly its own series.
	four := New(Options{Operations: legacyOps, GoIDs: append(goids, 8000000004), MerchantLabels: true})
	for _, g := range append(goids, 8000000004, 0, 123) {
		everything(four, g)
	}
	_, allFour := series(t, four, "")
	assert.Equal(t, allOn+MerchantSeriesMax, allFour)
}

func TestCallsCountedByOperationAndMerchant(t *testing.T) {
	m := New(Options{Operations: legacyOps, GoIDs: []int64{1}, MerchantLabels: true})
	m.ObserveCall("paymentStatus", 1, "ok", time.Millisecond)
	m.ObserveCall("paymentStatus", 1, "ok", time.Millisecond)
	m.ObserveCall("paymentStatus", 77, "denied", time.Millisecond)
	m.ObserveCall("touch", 0, "ok", time.Millisecond)
	m.ObserveCall("bogus", 0, "client_fault", time.Millisecond)
	assert.Equal(t, 2.0, testutil.ToFloat64(m.per.Load().calls[callKey{"paymentStatus", 1, "ok"}].count))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.per.Load().calls[callKey{"paymentStatus", otherGoID, "denied"}].merchant))
	assert.Nil(t, m.per.Load().calls[callKey{"touch", noGoID, "ok"}].merchant, "touch has no merchant")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.per.Load().calls[callKey{"unknown", noGoID, "client_fault"}].count))
	assert.Equal(t, map[string][]OperationUse{
		"1":     {{"paymentStatus", 2}},
		"other": {{"paymentStatus", 1}},
		"none":  {{"touch", 1}, {"unknown", 1}},
	}, m.Usage())
}

func TestStoreCountsKeepTheirLastValueAndAge(t *testing.T) {
	m := New(Options{Operations: legacyOps})
	text := gather(t, m)
	assert.NotContains(t, text, "soapbridge_outbox_notifications{", "nothing read yet: no value")
	assert.Contains(t, text, "soapbridge_store_counts_age_seconds ")

	m.SetStoreCounts(store.OutboxCounts{Pending: 2, Delivered: 5, Dead: 1},
		store.LedgerCounts{Pending: 1, InDoubt: 3, InDoubtByOperation: map[string]int{"createPayment": 2, "refundPayment": 1}})
	text = gather(t, m)
	for _, s := range []string{`soapbridge_outbox_notifications{state="pending"} 2`, `soapbridge_outbox_notifications{state="dead"} 1`,
		`soapbridge_ledger_calls{state="in_doubt"} 3`, `soapbridge_ledger_in_doubt_calls{operation="createPayment"} 2`,
		`soapbridge_ledger_in_doubt_calls{operation="refundPayment"} 1`} {
		assert.Contains(t, text, s)
	}
	m.counts.mu.Lock()
	m.counts.at = m.counts.at.Add(-time.Minute) // the store has not answered for a minute
	m.counts.mu.Unlock()
	text = gather(t, m)
	assert.Contains(t, text, `soapbridge_outbox_notifications{state="pending"} 2`, "the last value is kept")
	age := value(t, m, "soapbridge_store_counts_age_seconds")
	assert.GreaterOrEqual(t, age, 60.0)

	// Settled: the operation stays, at 0; an operation of another name is "other".
	m.SetStoreCounts(store.OutboxCounts{}, store.LedgerCounts{InDoubt: 1, InDoubtByOperation: map[string]int{"refund-lock": 1}})
	text = gather(t, m)
	assert.Contains(t, text, `soapbridge_ledger_in_doubt_calls{operation="createPayment"} 0`)
	assert.Contains(t, text, `soapbridge_ledger_in_doubt_calls{operation="other"} 1`)
	assert.Less(t, value(t, m, "soapbridge_store_counts_age_seconds"), 60.0)
}

func TestBuildReadinessDependenciesReloads(t *testing.T) {
	m := New(Options{Build: Build{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26.8"}})
	text := gather(t, m)
	assert.Contains(t, text, `soapbridge_build_info{goversion="go1.26.8",revision="abc",version="v1.2.3"} 1`)
	assert.Contains(t, text, "soapbridge_ready 0", "not ready until told")
	assert.NotContains(t, text, "soapbridge_dependency_up{", "not probed yet")
	assert.Contains(t, text, `soapbridge_config_reloads_total{result="refused"} 0`)

	ready := true
	m.SetReadiness(func() bool { return ready })
	m.SetDependencyUp(DependencyGateway, false)
	m.SetDependencyUp(DependencyStore, true)
	m.ConfigReloaded(true)
	m.ConfigReloaded(false)
	m.ConfigReloaded(false)
	m.SetConnections(func() ConnStats { return ConnStats{Open: 3, Max: 10, Refused: 4} })
	text = gather(t, m)
	for _, s := range []string{"soapbridge_ready 1", `soapbridge_dependency_up{dependency="gateway"} 0`,
		`soapbridge_dependency_up{dependency="store"} 1`, `soapbridge_config_reloads_total{result="ok"} 1`,
		`soapbridge_config_reloads_total{result="refused"} 2`, "soapbridge_http_connections 3",
		"soapbridge_http_connections_max 10", "soapbridge_http_connections_refused_total 4"} {
		assert.Contains(t, text, s)
	}
	ready = false
	assert.Contains(t, gather(t, m), "soapbridge_ready 0")

	b := ReadBuild()
	assert.NotEmpty(t, b.Version)
	assert.True(t, strings.HasPrefix(b.GoVersion, "go"))
}

func TestGatewayEndpointLabelsHaveNoSpaces(t *testing.T) {
	m := New(Options{})
	m.ObserveGateway("payment status", 200, time.Millisecond)
	m.ObserveGateway("token", 0, time.Millisecond)
	text := gather(t, m)
	assert.Contains(t, text, `soapbridge_gateway_calls_total{endpoint="payment_status",status="200"} 1`)
	assert.Contains(t, text, `soapbridge_gateway_calls_total{endpoint="token",status="0"} 1`)
	assert.Contains(t, text, "soapbridge_gateway_token_fetches_total 1")
}

func gather(t *testing.T, m *Metrics) string {
	t.Helper()
	mfs, err := m.Registry.Gather()
	require.NoError(t, err)
	var b strings.Builder
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			b.WriteString(mf.GetName())
			if len(s.GetLabel()) > 0 {
				b.WriteString("{")
				for i, l := range s.GetLabel() {
					if i > 0 {
						b.WriteString(",")
					}
					b.WriteString(l.GetName() + `="` + l.GetValue() + `"`)
				}
				b.WriteString("}")
			}
			switch {
			case s.Counter != nil:
				b.WriteString(" " + ftoa(s.GetCounter().GetValue()))
			case s.Gauge != nil:
				b.WriteString(" " + ftoa(s.GetGauge().GetValue()))
			default:
				b.WriteString(" -")
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func value(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// A reload's merchants: a new one gets its series, a removed one loses
// them, one kept keeps its counts.
func TestSetMerchantsOnReload(t *testing.T) {
	m := New(Options{Operations: legacyOps, GoIDs: []int64{1, 2}, MerchantLabels: true})
	m.ObserveCall("paymentStatus", 1, "ok", time.Millisecond)
	m.ObserveCall("paymentStatus", 2, "ok", time.Millisecond)
	m.SetMerchants([]int64{1, 3})
	m.ObserveCall("paymentStatus", 1, "ok", time.Millisecond)
	m.ObserveCall("paymentStatus", 3, "ok", time.Millisecond)
	m.ObserveCall("paymentStatus", 2, "ok", time.Millisecond) // gone: other
	got := map[string]float64{}
	mfs, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "soapbridge_merchant_soap_calls_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			var goid, res string
			for _, l := range s.GetLabel() {
				switch l.GetName() {
				case "goid":
					goid = l.GetValue()
				case "result":
					res = l.GetValue()
				}
			}
			if res == "ok" {
				got[goid] = s.GetCounter().GetValue()
			}
		}
	}
	assert.Equal(t, map[string]float64{"1": 2, "3": 1, "other": 1}, got)
	assert.Equal(t, int64(2), m.Usage()["1"][0].Calls, "the status page's count survives the reload")
}

// Series built for a reload are in force only once the followed source
// (the snapshot) returns them: built and never swapped in (a refused
// reload), they change nothing; swapped in, a kept merchant keeps its
// counts and Retire drops a removed one's.
func TestSeriesFollowTheSnapshot(t *testing.T) {
	m := New(Options{Operations: legacyOps, GoIDs: []int64{1, 2}})
	var cur atomic.Pointer[MerchantSeries]
	cur.Store(m.InForce())
	m.Follow(func(context.Context) *MerchantSeries { return cur.Load() })
	m.ObserveCall("paymentStatus", 1, "ok", time.Millisecond)

	refused := m.Series([]int64{1, 3})
	m.ObserveCall("paymentStatus", 3, "ok", time.Millisecond)
	assert.Equal(t, map[string]int64{"1": 1, "other": 1}, usageCalls(m), "series built but not in force change nothing")

	old := cur.Load()
	next := m.Series([]int64{1, 3})
	assert.NotSame(t, refused, next)
	cur.Store(next)
	m.Retire(old, next)
	m.ObserveCall("paymentStatus", 1, "ok", time.Millisecond)
	m.ObserveCall("paymentStatus", 3, "ok", time.Millisecond)
	m.ObserveCall("paymentStatus", 2, "ok", time.Millisecond)
	assert.Equal(t, map[string]int64{"1": 2, "3": 1, "other": 2}, usageCalls(m), "in force with the snapshot; goid 1 kept its count")
}

// usageCalls are the status page's paymentStatus counts by merchant.
func usageCalls(m *Metrics) map[string]int64 {
	out := map[string]int64{}
	for g, uses := range m.Usage() {
		for _, u := range uses {
			if u.Operation == "paymentStatus" {
				out[g] = u.Calls
			}
		}
	}
	return out
}

// Observe reads the core's outcome of every entry: a SOAP call counts in
// the SOAP series (a refused reply is still a reply: "ok"), a browser flow
// in soapbridge_flow_requests_total only; both in the status page's counts.
func TestObserveEveryEntry(t *testing.T) {
	m := New(Options{Operations: legacyOps, GoIDs: []int64{1}, MerchantLabels: true})
	m.Observe(context.Background(), operations.CallOutcome{Operation: "createPayment", GoID: 1, Result: operations.ResultOK})
	m.Observe(context.Background(), operations.CallOutcome{Operation: "createPayment", GoID: 1, Result: operations.ResultBadSignature})
	m.Observe(context.Background(), operations.CallOutcome{Operation: "createPayment", GoID: 1, Result: operations.ResultRateLimited})
	m.Observe(context.Background(), operations.CallOutcome{Operation: usage.FlowPayBase, Flow: true, GoID: 1, Result: operations.ResultOK})
	m.Observe(context.Background(), operations.CallOutcome{Operation: usage.FlowPayBase, Flow: true, GoID: 1, Result: operations.ResultBadSignature})
	m.Observe(context.Background(), operations.CallOutcome{Operation: usage.FlowPayFull, Flow: true, Result: operations.ResultRefused})

	assert.Equal(t, 2.0, testutil.ToFloat64(m.per.Load().calls[callKey{"createPayment", 1, "ok"}].count))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.per.Load().calls[callKey{"createPayment", 1, "rate_limited"}].count))
	text := gather(t, m)
	assert.Contains(t, text, `soapbridge_flow_requests_total{flow="pay-base-v2",result="ok"} 1`)
	assert.Contains(t, text, `soapbridge_flow_requests_total{flow="pay-base-v2",result="bad_signature"} 1`)
	assert.Contains(t, text, `soapbridge_flow_requests_total{flow="pay-full-v2",result="refused"} 1`)
	assert.NotContains(t, text, `operation="pay-base-v2"`, "no flow in the SOAP series")
	assert.Equal(t, map[string][]OperationUse{
		"1":    {{"createPayment", 3}, {"pay-base-v2", 2}},
		"none": {{"pay-full-v2", 1}},
	}, m.Usage())
}

// Retire drops a removed merchant's series only when none of the series
// kept has it (those in force, and those calls in flight still pinned),
// and a call observed with the series it pinned counts under its own goid.
func TestRetireKeepsPinnedSeries(t *testing.T) {
	m := New(Options{Operations: legacyOps, GoIDs: []int64{1, 2}, MerchantLabels: true})
	var cur atomic.Pointer[MerchantSeries]
	cur.Store(m.InForce())
	type pinKey struct{}
	m.Follow(func(ctx context.Context) *MerchantSeries {
		if s, ok := ctx.Value(pinKey{}).(*MerchantSeries); ok {
			return s
		}
		return cur.Load()
	})
	old := cur.Load()
	pinned := context.WithValue(context.Background(), pinKey{}, old)
	next := m.Series([]int64{1})
	cur.Store(next)
	m.Retire(old, next, old) // a call still pins old
	m.Observe(pinned, operations.CallOutcome{Operation: "paymentStatus", GoID: 2, Result: operations.ResultOK})
	m.Observe(context.Background(), operations.CallOutcome{Operation: "paymentStatus", GoID: 2, Result: operations.ResultOK})
	assert.Equal(t, float64(1), testutil.ToFloat64(m.vecs.byGoID.WithLabelValues("2", "ok")), "the pinned call under its goid")
	assert.Equal(t, float64(1), testutil.ToFloat64(m.vecs.byGoID.WithLabelValues("other", "ok")), "an unpinned one as other")

	m.Retire(old, next) // the call ended
	mfs, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				assert.False(t, l.GetName() == "goid" && l.GetValue() == "2", "%s keeps goid 2", mf.GetName())
			}
		}
	}
}
