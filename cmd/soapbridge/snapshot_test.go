package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/operations"
)

// A replaced snapshot's series are retired once no request pins it, and
// kept for its requests meanwhile: a request counts in the series of the
// snapshot it pinned, whatever is in force when it ends.
func TestReplacedSnapshotRetiredWhenUnpinned(t *testing.T) {
	met := metrics.New(metrics.Options{Operations: []string{"paymentStatus"}, GoIDs: []int64{1, 2}})
	snap := func(goids ...int64) *snapshot {
		return &snapshot{merchants: new(operations.MerchantSet), series: met.Series(goids)}
	}
	type retired struct {
		old  *metrics.MerchantSeries
		keep []*metrics.MerchantSeries
	}
	var got []retired
	snaps := &snapshots{retire: func(old *metrics.MerchantSeries, keep ...*metrics.MerchantSeries) {
		got = append(got, retired{old, keep})
	}}
	first := snap(1, 2)
	snaps.swap(first)

	ctx, pinned := snaps.pin(context.Background())
	require.Same(t, first, pinned)
	second := snaps.replace(func() *snapshot { return snap(1) })
	assert.Empty(t, got, "not retired while a request pins it")
	assert.Same(t, first.series, snaps.seriesOf(ctx), "the request counts in the series it pinned")
	assert.Same(t, second.series, snaps.seriesOf(context.Background()), "the rest in those in force")

	ctx2, pinned2 := snaps.pin(context.Background())
	require.Same(t, second, pinned2, "a new request pins the snapshot in force")
	third := snaps.replace(func() *snapshot { return snap(1, 3) })
	assert.Empty(t, got)
	assert.Same(t, second.series, snaps.seriesOf(ctx2))

	snaps.unpin(pinned)
	require.Len(t, got, 1, "the first's last request ended")
	assert.Same(t, first.series, got[0].old)
	assert.Equal(t, []*metrics.MerchantSeries{third.series, second.series}, got[0].keep,
		"keeping the series in force and those still pinned")
	snaps.unpin(pinned2)
	require.Len(t, got, 2)
	assert.Same(t, second.series, got[1].old)
	assert.Equal(t, []*metrics.MerchantSeries{third.series}, got[1].keep)
	assert.Empty(t, snaps.pending, "nothing left to retire")

	snaps.replace(func() *snapshot { return snap(1) })
	require.Len(t, got, 3, "a snapshot no request pins is retired at once")
	assert.Same(t, third.series, got[2].old)
}
