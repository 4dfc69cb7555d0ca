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
)

// The adaptive limit's steps, driven by given scheduler latencies (no
// clock, no load): over the target it drops by a fifth down to the floor;
// under it, it grows by a twentieth only in windows where the limit was
// reached, up to the maximum; otherwise it stays.
func TestAdaptiveLimitSteps(t *testing.T) {
	slots := make(chan struct{}, 1000)
	a := newAdaptiveLimit(slots, 1000, 20*time.Millisecond)
	assert.Equal(t, 1000, int(a.limit.Load()), "starts at max_calls_in_progress")
	assert.Equal(t, 800, a.step(50*time.Millisecond, 0))
	assert.Equal(t, 640, a.step(21*time.Millisecond, 0))
	assert.Equal(t, 640, a.step(20*time.Millisecond, 0), "at the target, not reached: stays")
	assert.Equal(t, 640, a.step(0, 0), "idle: stays")
	a.busy.Add(1)
	assert.Equal(t, 672, a.step(5*time.Millisecond, 0), "reached and under the target: grows")
	assert.Equal(t, 672, a.step(5*time.Millisecond, 0), "not reached since: stays")
	for range 30 {
		a.step(time.Second, 0)
	}
	assert.Equal(t, adaptiveFloor, int(a.limit.Load()), "never under the floor")
	for range 100 {
		a.busy.Add(1)
		a.step(0, 0)
	}
	assert.Equal(t, 1000, int(a.limit.Load()), "never over the maximum")
	assert.Zero(t, a.held.Load())
	assert.Zero(t, len(slots), "every held token given back")

	small := newAdaptiveLimit(make(chan struct{}, 2), 2, time.Millisecond)
	assert.Equal(t, 2, small.step(time.Second, 0), "a maximum under the floor is never lowered")
}

// Under pressure the limit drops no lower than what the best recent
// throughput needs: 1000 calls in a 100 ms window (10000/s), the shortest
// 100 ms, is 1000 in progress, twice that with the headroom; the best
// rate decays by 2% a window once the throughput falls.
func TestAdaptiveLimitKeepsWhatThroughputNeeds(t *testing.T) {
	a := newAdaptiveLimit(make(chan struct{}, 5000), 5000, 20*time.Millisecond)
	window := func(calls int, shortest time.Duration) {
		for i := range calls {
			a.finishAfter(int64(shortest) + int64(i))
		}
	}
	window(1000, 100*time.Millisecond)
	assert.Equal(t, 4000, a.step(time.Second, 100*time.Millisecond))
	for range 10 {
		window(1000, 100*time.Millisecond)
		a.step(time.Second, 100*time.Millisecond)
	}
	assert.Equal(t, 2000, int(a.limit.Load()), "10000/s × 100 ms × 2")
	// The throughput falls to a tenth: the floor follows the decaying best
	// rate, not at once.
	window(100, 100*time.Millisecond)
	assert.Equal(t, 1960, a.step(time.Second, 100*time.Millisecond), "0.98 × 10000/s × 0.1 s × 2, not a fifth less (1600)")
	for range 200 {
		window(100, 100*time.Millisecond)
		a.step(time.Second, 100*time.Millisecond)
	}
	assert.Equal(t, 200, int(a.limit.Load()), "1000/s × 100 ms × 2 once the old peak has decayed")
	// Nothing ended in a window: the fixed floor only.
	for range 50 {
		a.step(time.Second, 100*time.Millisecond)
	}
	assert.Equal(t, adaptiveFloor, int(a.limit.Load()))
}

// A lowered limit is what admission enforces: with 10 of a maximum of 200
// in progress and the limit lowered to 100 (held tokens), the 101st call
// is refused; lowered while the channel is full, the limit takes its
// tokens from the calls that end (debt), and admits again only below it.
// Requests are held by the handler: the order is set, not timed.
func TestAdaptiveLimitIsEnforced(t *testing.T) {
	h := newHeldHandler()
	o := newOverloadLimiter(200, 0, soapPath, zap.NewNop(), h)
	o.adapt = newAdaptiveLimit(o.slots, 200, 20*time.Millisecond)
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
	for o.adapt.limit.Load() > 100 {
		o.adapt.step(time.Second, 0)
	}
	assert.Equal(t, 100, o.stats().Max, "the metric shows the limit in force")
	hold(100)
	assert.Equal(t, http.StatusServiceUnavailable, call(), "the 101st is refused")
	assert.Equal(t, int64(1), o.adapt.busy.Load())

	// Full, and the limit raised: room for 5 more.
	o.adapt.busy.Add(1)
	assert.Equal(t, 105, o.adapt.step(0, 0))
	hold(5)
	assert.Equal(t, http.StatusServiceUnavailable, call())

	// Full, and the limit lowered to the floor again: no token can be
	// held now, so the next 5 that end keep theirs (debt).
	assert.Equal(t, 100, o.adapt.step(time.Second, 0))
	assert.Equal(t, int64(5), o.adapt.debt.Load())
	close(h.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		assert.Equal(t, http.StatusOK, c)
	}
	assert.Zero(t, o.adapt.debt.Load())
	assert.Equal(t, int64(100), o.adapt.held.Load())
	assert.Equal(t, 100, len(o.slots), "the held tokens only")
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
