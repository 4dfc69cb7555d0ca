package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/operations"
)

// Requests pin and unpin while reloads replace the snapshot: every
// replaced snapshot is retired exactly once, never while a request still
// pins it, and a request always counts in the series it pinned.
func TestSnapshotsRetireUnderConcurrentReloads(t *testing.T) {
	met := metrics.New(metrics.Options{Operations: []string{"paymentStatus"}, GoIDs: []int64{1}})
	var mu sync.Mutex
	owner := map[*metrics.MerchantSeries]*snapshot{}
	retired := map[*snapshot]int{}
	var early atomic.Int64
	snaps := &snapshots{}
	snaps.retire = func(old *metrics.MerchantSeries, _ ...*metrics.MerchantSeries) {
		mu.Lock()
		defer mu.Unlock()
		retired[owner[old]]++
	}
	snap := func() *snapshot {
		sn := &snapshot{merchants: new(operations.MerchantSet), series: met.Series([]int64{1})}
		mu.Lock()
		owner[sn.series] = sn
		mu.Unlock()
		return sn
	}
	snaps.swap(snap())

	var wrong atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, sn := snaps.pin(context.Background())
				if snaps.seriesOf(ctx) != sn.series {
					wrong.Add(1)
				}
				mu.Lock()
				if retired[sn] > 0 {
					early.Add(1)
				}
				mu.Unlock()
				snaps.unpin(sn)
			}
		})
	}
	const reloads = 2000
	for range reloads {
		snaps.replace(snap)
	}
	close(stop)
	wg.Wait()

	assert.Zero(t, early.Load(), "retired while pinned")
	assert.Zero(t, wrong.Load(), "a request counted outside the series it pinned")
	assert.Empty(t, snaps.pending, "every replaced snapshot retired")
	assert.Len(t, retired, reloads)
	for _, n := range retired {
		if n != 1 {
			t.Fatalf("a snapshot retired %d times", n)
		}
	}
}
