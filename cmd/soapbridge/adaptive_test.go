package main

import (
	"math"
	"net/http"
	"net/http/httptest"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/legacybridge/soapbridge/restbackend"
)

// settle gives a the windows it needs before it reads a need: one call
// of 100 ms ending in each 100 ms window (10 calls/s: a need of 3, under
// the floor), the scheduler at rest.
func settle(a *adaptiveLimit) {
	for range adaptiveSettle + 1 {
		a.pace.add(int64(100 * time.Millisecond))
		a.step(0, 100*time.Millisecond)
	}
}

// The adaptive limit's steps, driven by given scheduler latencies (no
// clock, no load): over the target it drops by a fifth down to the floor;
// under it, it grows by a tenth only in windows where the limit was
// reached, up to the maximum; otherwise it stays.
func TestAdaptiveLimitSteps(t *testing.T) {
	adm := newAdmission(1000, 0)
	a := newAdaptiveLimit(adm, 1000, 20*time.Millisecond, nil)
	assert.Equal(t, 1000, int(a.limit.Load()), "starts at max_calls_in_progress")
	settle(a)
	assert.Equal(t, 3, a.need)
	assert.Equal(t, 1000, int(a.limit.Load()), "settling at rest moved nothing")
	assert.Equal(t, 800, a.step(50*time.Millisecond, 0))
	assert.Equal(t, 640, a.step(21*time.Millisecond, 0))
	assert.Equal(t, 640, a.step(20*time.Millisecond, 0), "at the target, not reached: stays")
	assert.Equal(t, 640, a.step(0, 0), "idle: stays")
	a.busy.Add(1)
	assert.Equal(t, 704, a.step(5*time.Millisecond, 0), "reached and under the target: grows by a tenth")
	assert.Equal(t, 704, a.step(5*time.Millisecond, 0), "not reached since: stays")
	for range 30 {
		a.step(time.Second, 0)
	}
	assert.Equal(t, adaptiveFloor, int(a.limit.Load()), "never under the floor")
	for range 100 {
		a.busy.Add(1)
		a.step(0, 0)
	}
	assert.Equal(t, 1000, int(a.limit.Load()), "never over the maximum")
	limit, _, _ := adm.state()
	assert.Equal(t, 1000, limit, "what admission enforces")

	small := newAdaptiveLimit(newAdmission(2, 0), 2, time.Millisecond, nil)
	settle(small)
	assert.Equal(t, 2, small.step(time.Second, 0), "a maximum under the floor is never lowered")
}

// Short of CPU before the gateway has replied for a few windows (a cold start:
// every call still at the gateway, the few that ended not yet a rate),
// the limit holds: read off those windows, the need was a fraction of
// what the throughput soon needed, and the limit fell to the floor.
func TestAdaptiveLimitHoldsUntilTheNeedIsKnown(t *testing.T) {
	a := newAdaptiveLimit(newAdmission(1000, 0), 1000, 20*time.Millisecond, nil)
	for range 3 {
		assert.Equal(t, 1000, a.step(time.Second, 100*time.Millisecond), "nothing ended yet")
	}
	for range adaptiveSettle {
		a.pace.add(int64(100 * time.Millisecond))
		assert.Equal(t, 1000, a.step(time.Second, 100*time.Millisecond), "a call a window: not yet a rate")
	}
	a.pace.add(int64(100 * time.Millisecond))
	assert.Equal(t, 800, a.step(time.Second, 100*time.Millisecond), "known now (10/s needs 3): down by a fifth")
}

// Under pressure the limit drops no lower than what the best recent
// throughput needs: 1000 calls in each 100 ms window (10000/s), the
// shortest 100 ms, is 1000 in progress, three times that with the
// headroom; the best rate decays by 0.5% a window once the throughput
// falls, and the shortest call lately rises by 0.5% a window while
// every call is longer.
func TestAdaptiveLimitKeepsWhatThroughputNeeds(t *testing.T) {
	a := newAdaptiveLimit(newAdmission(5000, 0), 5000, 20*time.Millisecond, nil)
	window := func(calls int, shortest time.Duration) {
		for i := range calls {
			a.pace.add(int64(shortest) + int64(i))
		}
	}
	for range adaptiveSettle {
		window(1000, 100*time.Millisecond)
		assert.Equal(t, 5000, a.step(time.Second, 100*time.Millisecond), "settling: holds")
	}
	window(1000, 100*time.Millisecond)
	assert.Equal(t, 4000, a.step(time.Second, 100*time.Millisecond))
	for range 10 {
		window(1000, 100*time.Millisecond)
		a.step(time.Second, 100*time.Millisecond)
	}
	assert.Equal(t, 3000, int(a.limit.Load()), "10000/s × 100 ms × 3")
	// The throughput falls to a tenth: the need follows the decaying best
	// rate, not at once.
	window(100, 100*time.Millisecond)
	assert.Equal(t, 2985, a.step(time.Second, 100*time.Millisecond), "0.995 × 10000/s × 0.1 s × 3, not a fifth less (2400)")
	for range 1000 {
		window(100, 100*time.Millisecond)
		a.step(time.Second, 100*time.Millisecond)
	}
	assert.InDelta(t, 300, int(a.limit.Load()), 1, "1000/s × 100 ms × 3 once the old peak has decayed")
	// Calls queue for the CPU: every one now takes 300 ms; the shortest
	// call lately rises by 0.5% a window, not to 300 ms at once.
	window(100, 300*time.Millisecond)
	a.step(time.Second, 100*time.Millisecond)
	assert.Equal(t, 100500*time.Microsecond, a.minCall)
	window(100, 50*time.Millisecond)
	a.step(time.Second, 100*time.Millisecond)
	assert.Equal(t, 50*time.Millisecond, a.minCall, "a shorter call is taken at once")
	// Windows in which nothing ended (idle, the gateway down) teach
	// nothing: the need holds.
	need := a.need
	for range 2000 {
		a.step(time.Second, 100*time.Millisecond)
	}
	assert.Equal(t, need, a.need)
	assert.Equal(t, need, int(a.limit.Load()))
}

// What the calls needed under load outlives an idle spell or an outage
// (windows without a gateway reply, or only failures: 5xx), so that the
// retries of every shop after it are not met by a limit at the floor.
// Before, the need decayed in such windows (to a twentieth in a minute),
// and a flood short of CPU after it drove the limit down to that.
func TestAdaptiveLimitRemembersThroughIdleAndOutage(t *testing.T) {
	for _, outage := range []bool{false, true} {
		a := newAdaptiveLimit(newAdmission(5000, 0), 5000, 20*time.Millisecond, nil)
		window := func(calls int, took time.Duration) {
			for i := range calls {
				a.pace.ObserveGateway("payment status", 200, took+time.Duration(i))
			}
		}
		for range 20 { // warm and short of CPU: 10000/s of 100 ms calls
			window(1000, 100*time.Millisecond)
			a.step(time.Second, 100*time.Millisecond)
		}
		require.Equal(t, 3000, int(a.limit.Load()), "10000/s × 100 ms × 3")
		for range 600 { // a minute without a reply served
			if outage {
				for range 100 { // the gateway's maintenance page, at once
					a.pace.ObserveGateway("payment status", 503, time.Millisecond)
				}
			}
			a.step(0, 100*time.Millisecond)
		}
		assert.Equal(t, 3000, a.need, "outage %v: the need is kept", outage)
		// The flood after it, short of CPU, its first calls still at the gateway.
		for range 10 {
			a.step(time.Second, 100*time.Millisecond)
		}
		assert.Equal(t, 3000, int(a.limit.Load()), "outage %v: the limit keeps what the calls needed", outage)
		window(200, 100*time.Millisecond)
		a.step(time.Second, 100*time.Millisecond)
		assert.GreaterOrEqual(t, int(a.limit.Load()), 2900, "outage %v: the first replies decay the peak by 0.5%%, no more", outage)
	}
}

// A limit under what the throughput needs goes back to it at once, over
// the target too (the calls it admits are what the CPU already serves, as
// fast as they come back: lower, it only refuses them), and under the
// target with calls waiting it then grows by a tenth a window. Held over
// the target instead, a limit that fell before the need was known (a
// cold start's first second, a flood after an outage) stayed there while
// the CPU was short, which a flood's refusals keep it: from a cold start
// at 1.5 × capacity the first 5 s made a quarter fewer calls
// (docs/performance.md, "The adaptive limit after idle").
func TestAdaptiveLimitGrowsBackToTheNeed(t *testing.T) {
	a := newAdaptiveLimit(newAdmission(5000, 0), 5000, 20*time.Millisecond, nil)
	settle(a) // 10 calls/s: a need of 3
	for a.limit.Load() > adaptiveFloor {
		a.step(time.Second, 0)
	}
	// The throughput rises to 10000/s of 100 ms calls: a need of 3000,
	// once the smoothed rate has caught up; short of CPU all along.
	for range 50 {
		for i := range 1000 {
			a.pace.add(int64(100*time.Millisecond) + int64(i))
		}
		got := a.step(time.Second, 100*time.Millisecond)
		assert.Equal(t, max(adaptiveFloor, a.need), got, "over the target: raised to the need")
	}
	assert.Equal(t, 3000, int(a.limit.Load()))
	a.busy.Add(1)
	assert.Equal(t, 3300, a.step(5*time.Millisecond, 0), "reached and under the target: then by a tenth")
}

// Only the gateway's replies pace the limit: requests the bridge answers
// without the gateway (a flood of forged calls turned away in
// microseconds, a WSDL) count in neither the rate nor the shortest
// exchange, however many; an exchange that got no reply (status 0: a
// timeout, a reset) says nothing of the gateway's time. Counted on each
// request's own time, such a flood read as a need of nothing, and a busy
// replica dropped its limit to the floor under the merchants' real calls.
func TestAdaptiveLimitCountsOnlyGatewayReplies(t *testing.T) {
	pace := &gatewayPace{}
	o := newOverloadLimiter(5000, 0, soapPath, zap.NewNop(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden) // turned away before the gateway
	}))
	o.adapt = newAdaptiveLimit(o.adm, 5000, 20*time.Millisecond, pace)
	for range 1000 {
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, soapPath, strings.NewReader("<x/>")))
		require.Equal(t, http.StatusForbidden, rec.Code)
	}
	pace.ObserveGateway("payment status", 0, time.Microsecond)
	assert.Zero(t, pace.completed.Load(), "no gateway reply, nothing counted")
	pace.ObserveGateway("payment status", 503, time.Microsecond)
	pace.ObserveGateway("payment status", 500, time.Microsecond)
	assert.Zero(t, pace.completed.Load(), "a failure at the gateway: nothing counted")
	assert.Zero(t, pace.shortest.Load())

	var obs restbackend.Observer = gatewayObservers{pace}
	for range 50 {
		for i := range 1000 {
			obs.ObserveGateway("payment status", 200, 100*time.Millisecond+time.Duration(i))
		}
		obs.ObserveGateway("payment status", 401, 150*time.Millisecond) // a reply all the same
		o.adapt.step(0, 100*time.Millisecond)
	}
	assert.Equal(t, 100*time.Millisecond, o.adapt.minCall)
	assert.InDelta(t, 3003, o.adapt.need, 1, "10010 replies/s of 100 ms, three times")
	for range 50 {
		for range 10000 {
			rec := httptest.NewRecorder()
			o.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, soapPath, strings.NewReader("<x/>")))
		}
		for i := range 1001 {
			obs.ObserveGateway("payment status", 200, 100*time.Millisecond+time.Duration(i))
		}
		o.adapt.step(time.Second, 100*time.Millisecond)
	}
	assert.Equal(t, 100*time.Millisecond, o.adapt.minCall, "the flood is not the shortest exchange")
	assert.InDelta(t, 3003, o.adapt.need, 1, "nor in the rate")
	assert.InDelta(t, 3003, int(o.adapt.limit.Load()), 1, "short of CPU, the limit keeps what the real calls need")
}

// A lowered limit is what admission enforces: with 100 of a maximum of 200
// in progress and the limit lowered to 100, the 101st call is refused;
// lowered under the calls in progress, the limit keeps the slots of the
// calls that end, and admits again only below it. Requests are held by
// the handler: the order is set, not timed.
func TestAdaptiveLimitIsEnforced(t *testing.T) {
	h := newHeldHandler()
	core, logs := observer.New(zap.WarnLevel)
	o := newOverloadLimiter(200, 0, soapPath, zap.New(core), h)
	o.adapt = newAdaptiveLimit(o.adm, 200, 20*time.Millisecond, nil)
	var wg sync.WaitGroup
	call := func() int {
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, soapPath, strings.NewReader("<x/>")))
		return rec.Code
	}
	codes := make(chan int, 300)
	hold := func(n int) {
		for range n {
			wg.Go(func() { codes <- call() })
		}
		for range n {
			<-h.held
		}
	}
	settle(o.adapt)
	for o.adapt.limit.Load() > 100 {
		o.adapt.step(time.Second, 0)
	}
	assert.Equal(t, 100, o.stats().Max, "the metric shows the limit in force")
	hold(100)
	assert.Equal(t, http.StatusServiceUnavailable, call(), "the 101st is refused")
	assert.Equal(t, int64(1), o.adapt.busy.Load())
	if warned := logs.FilterMessageSnippet("overloaded: refusing calls with 503").All(); assert.Len(t, warned, 1) {
		f := warned[0].ContextMap()
		assert.Equal(t, int64(200), f["max_calls_in_progress"])
		assert.Equal(t, int64(100), f["limit"], "the warning says the limit in force")
		assert.Equal(t, int64(100), f["in_progress"])
	}

	// Full, and the limit raised by a tenth: room for 10 more.
	o.adapt.busy.Add(1)
	assert.Equal(t, 110, o.adapt.step(0, 0))
	hold(10)
	assert.Equal(t, http.StatusServiceUnavailable, call())

	// Full, and the limit lowered to the floor again: 110 in progress
	// over a limit of 100, so the next 10 that end free no slot.
	assert.Equal(t, 100, o.adapt.step(time.Second, 0))
	limit, inUse, _ := o.adm.state()
	assert.Equal(t, [2]int{100, 110}, [2]int{limit, inUse})
	close(h.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		assert.Equal(t, http.StatusOK, c)
	}
	limit, inUse, _ = o.adm.state()
	assert.Equal(t, [2]int{100, 0}, [2]int{limit, inUse})
	assert.Equal(t, int64(0), o.stats().InProgress)
}

// The quantile of what a histogram gained since an earlier read.
func TestQuantileSince(t *testing.T) {
	h := &metrics.Float64Histogram{Buckets: []float64{0, 0.001, 0.01, 0.1, 1}, Counts: []uint64{100, 10, 5, 1}}
	assert.Equal(t, 100*time.Millisecond, quantileSince(h, nil, 0.99), "116 samples: the 115th is in [0.01, 0.1)")
	assert.Equal(t, time.Second, quantileSince(h, nil, 1), "the 116th in [0.1, 1)")
	assert.Equal(t, time.Millisecond, quantileSince(h, nil, 0.5))
	prev := []uint64{100, 10, 5, 0}
	assert.Equal(t, time.Second, quantileSince(h, prev, 0.5), "only the one new sample counts")
	assert.Zero(t, quantileSince(h, h.Counts, 0.99), "nothing new")
	inf := &metrics.Float64Histogram{Buckets: []float64{0, 0.5, math.Inf(1)}, Counts: []uint64{0, 3}}
	assert.Equal(t, 500*time.Millisecond, quantileSince(inf, nil, 0.99), "the last bucket's lower bound when unbounded")
	// The real histogram reads without error.
	var s schedLatency
	s.read()
	require.NotNil(t, s.prev)
}
