package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// GC defaults, applied when the environment does not set GOGC or
// GOMEMLIMIT (the Go runtime has then already applied those).
//
// GOGC sets the collector's headroom (what the heap may grow by before the
// next collection) as a share of what it scans: live heap, goroutine
// stacks and globals. One value fits the bridge badly at both ends. With
// tens of clients the heap is a few MB, so Go's 100 collects every few MB
// of request garbage, a fixed cost per collection paid very often; with a
// thousand calls held by a slow gateway, live heap and stacks are near
// 100 MB, and 200 (the default until issue 28) let the process fill its
// memory limit whatever the load. So the headroom is what Go's 100 gives
// (as much as is scanned: memory grows with load as any Go service's) but
// never less than gcHeadroomFloor: re-set after every collection from
// what it scanned. The memory limit bounds both: near it the collector
// runs more often whatever GOGC says.
const (
	gcHeadroomFloor   = 32 << 20
	gcPercentMax      = 800 // the idle heap: a few MB, never a headroom past the floor's order
	defaultMemLimitMB = 192
)

func applyGCDefaults(getenv func(string) string) {
	if getenv("GOGC") == "" {
		startGCPacing(gcHeadroomFloor)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemLimitMB << 20)
	}
}

// gcPercentFor is the GOGC whose headroom over a live heap is
// max(scanned, floor), within 100..gcPercentMax. scanned is what the
// runtime applies GOGC to: the heap marked live by the last collection
// plus the stacks and globals it scanned.
func gcPercentFor(scanned, floor uint64) int {
	if scanned == 0 {
		return gcPercentMax
	}
	p := 100 * floor / scanned
	switch {
	case p < 100:
		return 100
	case p > gcPercentMax:
		return gcPercentMax
	}
	return int(p)
}

// gcPacing re-sets GOGC after each collection.
type gcPacing struct {
	floor   uint64
	samples []metrics.Sample
	percent int
	stopped atomic.Bool // tests only: the process paces until it exits
}

// gcSentinel is allocated unreachable once per cycle: its cleanup runs
// after the collection that freed it. Not tiny (16 bytes): the tiny
// allocator would keep it alive with its neighbours.
type gcSentinel [16]byte

func startGCPacing(floor uint64) *gcPacing {
	p := &gcPacing{floor: floor, samples: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
	}}
	p.adjust()
	p.arm()
	return p
}

func (p *gcPacing) arm() {
	if p.stopped.Load() {
		return
	}
	runtime.AddCleanup(new(gcSentinel), func(p *gcPacing) {
		if p.stopped.Load() {
			return
		}
		p.adjust()
		p.arm()
	}, p)
}

func (p *gcPacing) stop() { p.stopped.Store(true) }

// adjust runs on one goroutine at a time: at start, then in the cleanup
// of each cycle's sentinel, which arms the next only when done.
func (p *gcPacing) adjust() {
	metrics.Read(p.samples)
	var scanned uint64
	for _, s := range p.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			scanned += s.Value.Uint64()
		}
	}
	want := gcPercentFor(scanned, p.floor)
	// Re-set only on a change past a twentieth: SetGCPercent takes the
	// heap lock.
	if p.percent == 0 || want*20 > p.percent*21 || want*21 < p.percent*20 {
		debug.SetGCPercent(want)
		p.percent = want
	}
}
