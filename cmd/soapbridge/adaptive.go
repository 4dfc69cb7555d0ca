package main

import (
	"context"
	"math"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/legacybridge/soapbridge/restbackend"
)

// The adaptive part of the admission limit (overload_sched_latency).
//
// max_calls_in_progress is a ceiling sized for the busiest normal hour; a
// replica short of CPU (a cold start under a retry storm, a noisy
// neighbour) cannot run that many at once in time: admitted calls then
// queue for the CPU, every one of them late. The signal used here is the
// Go scheduler's own: how long runnable goroutines waited for a CPU
// (runtime/metrics /sched/latencies:seconds), a quantile over each window.
// It rises when, and only when, the process has more runnable work than
// CPU: a slow gateway does not move it (a call waiting for the gateway is
// not runnable), so the limit does not shrink when the gateway slows, as
// a limit driven by call latency would (Netflix's gradient and Vegas
// limiters, and the Go ports of them, compare call latencies with a
// minimum and would read a slower gateway as overload; the limiters found
// for Go are also client-side and single-author). Hand-written, small:
//
//   - each window, the scheduler latency's q-quantile over that window
//     above the target: the limit drops by a fifth (multiplicative
//     decrease), never under the floor nor under what the best recent
//     throughput needs (Little's law: gateway replies per second times
//     the shortest exchange lately, three times that: adaptiveHeadroom;
//     see needed and gatewayPace), and goes up to that need at once when
//     it is under it: lower, it would cut the calls made, not only their
//     wait (a limit that fell before the need was known, or while it was
//     rising, stayed there as long as the CPU was short, and a flood's
//     refusals keep it short); while the need is not known yet, it holds;
//   - at or under the target, and the limit was reached in the window (a
//     request waited or was refused): the limit goes back up to the need
//     at once, and from there grows by a tenth (at least one), never over
//     max_calls_in_progress;
//   - otherwise it stays.
//
// The limit starts at max_calls_in_progress (what a fixed limit would
// allow), so a bridge that has the CPU never refuses more than before.
//
// On by default (overload_sched_latency 20ms) since 2026-11-29, with
// overload_wait 250ms: alternated with the fixed limit on the 2-core
// machine, the calls admitted from a cold start under a flood had a lower
// p99 in every pair, for as many calls made and the same CPU per call
// within the noise; with the shorter wait (50ms) clients that retry at
// once were refused far more often (docs/performance.md).

const (
	adaptiveWindow   = 100 * time.Millisecond
	adaptiveQuantile = 0.99
	adaptiveFloor    = 100 // the least the limit drops to (max_calls_in_progress when lower)
	// adaptiveHeadroom multiplies what the best recent throughput needs:
	// arrivals come in bursts, and calls take longer than the shortest
	// (they queue for the CPU): below the need of the calls as they take,
	// a lower limit admits fewer, their rate falls, and so does the need
	// read off it (1.2, then 2 did that on the 2-core machine:
	// docs/performance.md).
	adaptiveHeadroom = 3.0
	adaptiveSettle   = 5 // windows of gateway replies before the need is read
)

// adaptiveLimit moves the limit of an admission (adm).
type adaptiveLimit struct {
	max, floor int
	target     time.Duration
	limit      atomic.Int64 // what adm enforces, for the metrics
	adm        *admission
	busy       atomic.Int64  // requests that found the limit reached (waited or refused)
	lastBusy   int64         // step's only, as rate to settled below (one goroutine)
	pace       *gatewayPace  // the gateway's replies, counted on the request goroutines
	rate       float64       // gateway replies per second, smoothed
	peakRate   float64       // the best recent rate (decaying)
	minCall    time.Duration // the shortest exchange lately (rising 0.5% a window while every one is longer)
	need       int           // what needed last gave (0: unknown)
	settled    int           // windows counted since the first call ended, up to adaptiveSettle
}

// gatewayPace counts the gateway's replies for the adaptive limit: how
// many came in each window and the shortest exchange. What the limit needs
// is the slots calls hold while they wait for the gateway, so only
// exchanges with the gateway count: a call reaches it only once its access
// rules and signature are verified, so nothing a stranger sends (a flood
// of forged calls turned away in microseconds) moves the need. Counted
// before on every request's own time, such a flood read as a need of
// nothing and dropped a busy replica's limit to the floor under its
// merchants' real calls. A restbackend.Observer: told on the request's
// goroutine, so atomics only.
type gatewayPace struct {
	completed atomic.Int64
	shortest  atomic.Int64 // ns; 0: none in the window
}

// ObserveGateway counts an exchange that the gateway served: a reply
// below 500. None came (status 0: a timeout, a reset), or a failure (5xx:
// down for maintenance, a proxy before it answering at once) says
// nothing of the time the gateway takes to serve a call; counted, an
// outage's fast 503s made the shortest exchange a millisecond, the need a
// hundredth of what the calls needed once it was back, and the retries
// of every shop after it met a limit at the floor.
func (g *gatewayPace) ObserveGateway(_ string, status int, d time.Duration) {
	if status > 0 && status < 500 {
		g.add(max(int64(d), 1))
	}
}

func (g *gatewayPace) add(d int64) {
	g.completed.Add(1)
	for {
		s := g.shortest.Load()
		if s != 0 && s <= d || g.shortest.CompareAndSwap(s, d) {
			return
		}
	}
}

// gatewayObservers tells each of its observers of an exchange.
type gatewayObservers []restbackend.Observer

func (g gatewayObservers) ObserveGateway(endpoint string, status int, d time.Duration) {
	for _, o := range g {
		o.ObserveGateway(endpoint, status, d)
	}
}

// needed is the limit the best recent throughput needs with the shortest
// gateway exchange lately, times adaptiveHeadroom; 0 while unknown. Both are read so
// that an overloaded replica does not talk itself down (measured on the
// 2-core machine, docs/performance.md):
//
//   - the rate is smoothed over some five windows (a window's own count is
//     bursty, up to twice the rate) and its best value decays by 0.5% a
//     window;
//   - the shortest exchange is the least seen lately, rising by 0.5% a
//     window (5% a second: a slower gateway is followed within seconds)
//     while every one is longer; a window's own shortest is the gateway's
//     time plus what the exchange queued for a CPU, which is what an
//     overloaded replica has most of;
//   - the need is unknown until replies have come for adaptiveSettle
//     windows: a cold start's first windows see few (the calls are still
//     at the gateway), and a need read off them cut its calls to a fifth;
//   - a window without a reply changes nothing (see above).
func (a *adaptiveLimit) needed(elapsed time.Duration) int {
	n, short := a.pace.completed.Swap(0), a.pace.shortest.Swap(0)
	if elapsed <= 0 || n == 0 {
		// No reply (idle, or the gateway down): nothing is learnt of what
		// the calls need, and what was learnt under load is kept for the
		// flood that follows an outage or a night. Decayed here (0.5% a
		// window), the need was a fifth of it after 30 s idle and a
		// twentieth after a minute, and a flood short of CPU after it drove
		// the limit down to that (TestAdaptiveLimitRemembersThroughIdleAndOutage).
		return a.need
	}
	rate := float64(n) / elapsed.Seconds()
	if a.rate == 0 {
		a.rate = rate
	} else {
		a.rate += (rate - a.rate) / 5
	}
	a.peakRate = max(a.rate, a.peakRate*0.995)
	if short > 0 {
		if a.minCall == 0 || time.Duration(short) < a.minCall {
			a.minCall = time.Duration(short)
		} else {
			// At least a nanosecond: under 200 ns a two-hundredth is
			// 0, and the shortest lately would never rise again.
			a.minCall = min(time.Duration(short), a.minCall+max(1, a.minCall/200))
		}
	}
	if a.minCall == 0 {
		return 0
	}
	if a.settled < adaptiveSettle {
		a.settled++
		return 0
	}
	a.need = int(math.Ceil(a.peakRate * a.minCall.Seconds() * adaptiveHeadroom))
	return a.need
}

// newAdaptiveLimit adapts the limit of adm (at most max) from the
// gateway's replies that pace counts (a new one when nil).
func newAdaptiveLimit(adm *admission, max int, target time.Duration, pace *gatewayPace) *adaptiveLimit {
	if pace == nil {
		pace = &gatewayPace{}
	}
	a := &adaptiveLimit{max: max, floor: min(max, adaptiveFloor), target: target, adm: adm, pace: pace}
	a.limit.Store(int64(max))
	return a
}

// step applies one window (elapsed long) and its scheduler latency (the
// quantile) to the limit, and returns the new limit.
func (a *adaptiveLimit) step(sched, elapsed time.Duration) int {
	busy := a.busy.Load()
	reached := busy != a.lastBusy
	a.lastBusy = busy
	need := a.needed(elapsed)
	floor := min(a.max, max(a.floor, need))
	cur := int(a.limit.Load())
	next := cur
	switch {
	case sched > a.target && need == 0:
		// Short of CPU before any call ended: what the throughput needs
		// is unknown, so the limit holds.
	case sched > a.target:
		// Down by a fifth, never under the need; up to it at once.
		next = max(floor, cur-max(1, cur/5))
	case reached:
		// Under the target with calls waiting: back to what the
		// throughput needs at once, then by a tenth a window.
		next = min(a.max, max(floor, cur+max(1, cur/10)))
	}
	if next != cur {
		a.adm.setLimit(next)
		a.limit.Store(int64(next))
	}
	return next
}

// run steps the limit every adaptiveWindow from the scheduler latency
// until ctx ends.
//
// A window's length is taken when its counts are read, not from the
// ticker's value: that is the time the tick was due, and on a replica
// short of CPU (the case this is for) this goroutine runs some scheduler
// latency after it, so the calls counted (up to the read) and the
// elapsed time (between ticks) would cover different spans, and the
// best rate would take every window that ran late as a burst.
func (a *adaptiveLimit) run(ctx context.Context) {
	s := &schedLatency{}
	s.read() // the baseline: what happened before
	t := time.NewTicker(adaptiveWindow)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now()
			a.step(s.read(), now.Sub(last))
			last = now
		}
	}
}

// schedLatency reads the scheduler latency histogram and gives the
// quantile of what was added since the last read.
type schedLatency struct {
	sample []metrics.Sample
	prev   []uint64
}

func (s *schedLatency) read() time.Duration {
	if s.sample == nil {
		s.sample = []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	}
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := s.sample[0].Value.Float64Histogram()
	d := quantileSince(h, s.prev, adaptiveQuantile)
	s.prev = append(s.prev[:0], h.Counts...)
	return d
}

// quantileSince is the q-quantile of the counts h added since prev (the
// counts of an earlier read; nil: none), the upper bound of its bucket; 0
// when nothing was added.
func quantileSince(h *metrics.Float64Histogram, prev []uint64, q float64) time.Duration {
	var total uint64
	for i, c := range h.Counts {
		if i < len(prev) {
			c -= prev[i]
		}
		total += c
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range h.Counts {
		if i < len(prev) {
			c -= prev[i]
		}
		seen += c
		if seen >= want {
			up := h.Buckets[i+1]
			if math.IsInf(up, 1) {
				up = h.Buckets[i]
			}
			return time.Duration(up * float64(time.Second))
		}
	}
	return 0
}
