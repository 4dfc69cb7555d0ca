package main

import (
	"context"
	"math"
	"runtime/metrics"
	"sync/atomic"
	"time"
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
//     throughput needs (Little's law: the most calls per second completed
//     in a window lately, decaying by 2% a window, times the shortest call
//     of the window, twice that: adaptiveHeadroom): lowering the limit below that would
//     cut the calls made, not only their wait;
//   - at or under the target, and the limit was reached in the window (a
//     request waited or was refused): the limit grows by a twentieth
//     (at least one), never over max_calls_in_progress;
//   - otherwise it stays.
//
// The limit starts at max_calls_in_progress (what a fixed limit would
// allow), so a bridge that has the CPU never refuses more than before.
//
// Off by default (overload_sched_latency 0): on a loaded 2-core machine
// it did not make more calls from a cold start than the fixed limit
// (docs/performance.md); it is there to be measured again on a quiet one,
// by setting one variable on the same binary.

const (
	adaptiveWindow   = 100 * time.Millisecond
	adaptiveQuantile = 0.99
	adaptiveFloor    = 100 // the least the limit drops to (max_calls_in_progress when lower)
	// adaptiveHeadroom multiplies what the best recent throughput needs:
	// arrivals come in bursts, and a limit at exactly the need refuses
	// each burst (1.2 did, on a loaded machine: docs/performance.md).
	adaptiveHeadroom = 2.0
)

// adaptiveLimit holds the current limit; the tokens it keeps out of the
// admission channel (held, and debt: tokens to keep back from calls still
// in progress when the channel was full) make the channel of capacity max
// admit only limit at once.
type adaptiveLimit struct {
	max, floor int
	target     time.Duration
	limit      atomic.Int64
	held, debt atomic.Int64
	slots      chan struct{}
	busy       atomic.Int64 // requests that found the limit reached (waited or refused)
	lastBusy   int64
	// The window's completed calls and the shortest of them (ns; 0: none).
	completed atomic.Int64
	shortest  atomic.Int64
	peakRate  float64 // calls per second, the best recent window's (decaying)
}

// finish counts a call admitted at start that has ended.
func (a *adaptiveLimit) finish(start time.Time) {
	d := int64(time.Since(start))
	a.finishAfter(max(d, 1))
}

func (a *adaptiveLimit) finishAfter(d int64) {
	a.completed.Add(1)
	for {
		s := a.shortest.Load()
		if s != 0 && s <= d || a.shortest.CompareAndSwap(s, d) {
			return
		}
	}
}

// needed is the limit the best recent throughput needs with the window's
// shortest call, times adaptiveHeadroom (0 when nothing ended in the
// window).
func (a *adaptiveLimit) needed(elapsed time.Duration) int {
	n, short := a.completed.Swap(0), a.shortest.Swap(0)
	if elapsed <= 0 {
		return 0
	}
	a.peakRate = max(float64(n)/elapsed.Seconds(), a.peakRate*0.98)
	return int(math.Ceil(a.peakRate * time.Duration(short).Seconds() * adaptiveHeadroom))
}

func newAdaptiveLimit(slots chan struct{}, max int, target time.Duration) *adaptiveLimit {
	a := &adaptiveLimit{max: max, floor: min(max, adaptiveFloor), target: target, slots: slots}
	a.limit.Store(int64(max))
	return a
}

// step applies one window (elapsed long) and its scheduler latency (the
// quantile) to the limit, and returns the new limit.
func (a *adaptiveLimit) step(sched, elapsed time.Duration) int {
	busy := a.busy.Load()
	reached := busy != a.lastBusy
	a.lastBusy = busy
	floor := min(a.max, max(a.floor, a.needed(elapsed)))
	cur := int(a.limit.Load())
	next := cur
	switch {
	case sched > a.target:
		next = max(min(cur, floor), cur-max(1, cur/5))
	case reached:
		next = min(a.max, cur+max(1, cur/20))
	}
	a.resize(cur, next)
	return next
}

// resize moves the limit from cur to next by holding tokens back from the
// admission channel (lower) or giving held ones back (higher).
func (a *adaptiveLimit) resize(cur, next int) {
	for range cur - next { // lower
		select {
		case a.slots <- struct{}{}:
			a.held.Add(1)
		default:
			a.debt.Add(1) // taken from the next calls that end
		}
	}
	for range next - cur { // higher: first forgive debt, then free held tokens
		if d := a.debt.Load(); d > 0 && a.debt.CompareAndSwap(d, d-1) {
			continue
		}
		if a.held.Load() > 0 {
			select {
			case <-a.slots:
				a.held.Add(-1)
			default:
			}
		}
	}
	a.limit.Store(int64(next))
}

// release ends a call: its token goes back to the channel, unless the
// limit owes one, which it then keeps.
func (a *adaptiveLimit) release() {
	for {
		d := a.debt.Load()
		if d <= 0 {
			<-a.slots
			return
		}
		if a.debt.CompareAndSwap(d, d-1) {
			a.held.Add(1)
			return
		}
	}
}

// run steps the limit every adaptiveWindow from the scheduler latency
// until ctx ends.
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
		case now := <-t.C:
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
