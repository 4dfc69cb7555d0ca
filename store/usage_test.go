package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/store"
)

// usageStore is the part of the store the usage record and its report use
// (operations/usage declares its own).
type usageStore interface {
	AddUsage(ctx context.Context, counts []store.UsageCount, limits store.UsageLimits) error
	Usage(ctx context.Context, goids ...int64) ([]store.UsageCount, error)
	UsageMerchants(ctx context.Context) ([]store.UsageMerchant, error)
}

func openUsage(t *testing.T, dsn string) usageStore {
	t.Helper()
	us, ok := open(t, dsn).(usageStore)
	require.True(t, ok, "the store keeps no usage record")
	return us
}

func TestUsage(t *testing.T) {
	for name, fresh := range map[string]freshDSN{"sqlite": sqliteDSN, "postgres": testenv.PostgresSchema} {
		t.Run(name, func(t *testing.T) { usageSuite(t, fresh) })
	}
}

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

func usageSuite(t *testing.T, fresh freshDSN) {
	ctx := context.Background()

	// Calls refused before verification, and calls the access rules
	// denied (they run before verification): a stranger may have sent
	// them.
	for name, detail := range map[string]string{"UnverifiedMovesNoTotals": store.CallUnverified, "DeniedMovesNoTotals": store.CallDenied} {
		t.Run(name, func(t *testing.T) {
			s := openUsage(t, fresh(t))
			require.NoError(t, s.AddUsage(ctx, []store.UsageCount{
				{GoID: 7, Kind: store.UsageCall, Name: "paymentStatus", Detail: detail, Calls: 5, First: at(10), Last: at(40)},
			}, nil))
			totals, err := s.UsageMerchants(ctx)
			require.NoError(t, err)
			assert.Empty(t, totals, "calls of a stranger are in no merchant's totals")
			rows, err := s.Usage(ctx, 7)
			require.NoError(t, err)
			require.Len(t, rows, 1, "but counted in their own row")
			assert.Equal(t, int64(5), rows[0].Calls)

			require.NoError(t, s.AddUsage(ctx, []store.UsageCount{
				{GoID: 7, Kind: store.UsageCall, Name: "paymentStatus", Detail: "ok", Calls: 1, First: at(20), Last: at(20)},
				{GoID: 7, Kind: store.UsageCall, Name: "paymentStatus", Detail: detail, Calls: 1, First: at(50), Last: at(50)},
			}, nil))
			totals, err = s.UsageMerchants(ctx)
			require.NoError(t, err)
			require.Len(t, totals, 1)
			assert.Equal(t, int64(1), totals[0].Calls)
			assert.True(t, totals[0].Last.Equal(at(20)), "last seen is the merchant's own call's: %s", totals[0].Last)
		})
	}

	t.Run("AddsUp", func(t *testing.T) {
		s := openUsage(t, fresh(t))
		call := func(goid int64, op, res string, n int64, first, last int) store.UsageCount {
			return store.UsageCount{GoID: goid, Kind: store.UsageCall, Name: op, Detail: res, Calls: n, First: at(first), Last: at(last)}
		}
		require.NoError(t, s.AddUsage(ctx, []store.UsageCount{
			call(7, "paymentStatus", "ok", 3, 10, 20),
			call(7, "createPayment", "refused", 1, 15, 15),
			{GoID: 7, Kind: store.UsageClient, Name: "php-soapclient", Detail: "8.2.36", Calls: 4, First: at(10), Last: at(20)},
			{GoID: 7, Kind: store.UsageFeature, Name: "p1-p4", Calls: 1, First: at(15), Last: at(15)},
			call(0, "touch", "ok", 2, 5, 6),
		}, nil))
		// A second replica's flush: earlier first call, later last one.
		require.NoError(t, s.AddUsage(ctx, []store.UsageCount{
			call(7, "paymentStatus", "ok", 2, 5, 30),
			{GoID: 7, Kind: store.UsageFeature, Name: "p1-p4", Calls: 2, First: at(16), Last: at(25)},
		}, nil))

		rows, err := s.Usage(ctx, 7)
		require.NoError(t, err)
		assert.Equal(t, []store.UsageCount{
			call(7, "createPayment", "refused", 1, 15, 15),
			call(7, "paymentStatus", "ok", 5, 5, 30),
			{GoID: 7, Kind: store.UsageClient, Name: "php-soapclient", Detail: "8.2.36", Calls: 4, First: at(10), Last: at(20)},
			{GoID: 7, Kind: store.UsageFeature, Name: "p1-p4", Calls: 3, First: at(15), Last: at(25)},
		}, rows)

		all, err := s.Usage(ctx)
		require.NoError(t, err)
		require.Len(t, all, 5)
		assert.Equal(t, int64(0), all[0].GoID, "ordered by goid")

		ms, err := s.UsageMerchants(ctx)
		require.NoError(t, err)
		assert.Equal(t, []store.UsageMerchant{
			{GoID: 0, Calls: 2, First: at(5), Last: at(6)},
			{GoID: 7, Calls: 6, First: at(5), Last: at(30)},
		}, ms, "totals count calls only")

		none, err := s.Usage(ctx, 99)
		require.NoError(t, err)
		assert.Empty(t, none)
	})

	t.Run("Limits", func(t *testing.T) {
		s := openUsage(t, fresh(t))
		limits := store.UsageLimits{store.UsageClient: 2, store.UsageRetired: 1}
		client := func(v string) store.UsageCount {
			return store.UsageCount{GoID: 7, Kind: store.UsageClient, Name: "php-soapclient", Detail: v, Calls: 1, First: at(1), Last: at(1)}
		}
		retired := func(w string) store.UsageCount {
			return store.UsageCount{GoID: 7, Kind: store.UsageRetired, Name: w, Calls: 1, First: at(1), Last: at(1)}
		}
		require.NoError(t, s.AddUsage(ctx, []store.UsageCount{client("1"), client("2"), client("3"), retired("channel a"), retired("channel b")}, limits))
		require.NoError(t, s.AddUsage(ctx, []store.UsageCount{client("2"), client("4"), retired("channel a"), retired("channel c")}, limits))
		rows, err := s.Usage(ctx, 7)
		require.NoError(t, err)
		got := map[string]int64{}
		for _, r := range rows {
			got[string(r.Kind)+" "+r.Name+" "+r.Detail] = r.Calls
		}
		assert.Equal(t, map[string]int64{
			"client php-soapclient 1": 1, "client php-soapclient 2": 2, "client php-soapclient other": 2,
			"retired channel a ": 2, "retired other ": 2,
		}, got, "past the limit a new version counts as the family's other, a new retired thing as other")
	})

	t.Run("LongTextClipped", func(t *testing.T) {
		s := openUsage(t, fresh(t))
		long := ""
		for range 60 {
			long += "ž" // 2 bytes each
		}
		require.NoError(t, s.AddUsage(ctx, []store.UsageCount{{GoID: 1, Kind: store.UsageRetired, Name: long, Calls: 1, First: at(0), Last: at(0)}}, nil))
		rows, err := s.Usage(ctx, 1)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		assert.Len(t, rows[0].Name, 100)
	})
}

// TestUsageReplicasShareLimits: replicas flushing the same merchant at once
// (separate connection pools on one PostgreSQL schema) add up every call,
// and together keep no more distinct client versions than the limit.
func TestUsageReplicasShareLimits(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	const replicas, flushes, limit = 4, 5, 3
	stores := make([]usageStore, replicas)
	for i := range stores {
		stores[i] = openUsage(t, dsn)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			for f := range flushes {
				v := fmt.Sprintf("r%d-f%d", i, f) // a new version in every flush
				assert.NoError(t, s.AddUsage(ctx, []store.UsageCount{
					{GoID: 42, Kind: store.UsageCall, Name: "paymentStatus", Detail: "ok", Calls: 10, First: at(f), Last: at(f)},
					{GoID: 42, Kind: store.UsageClient, Name: "axis", Detail: v, Calls: 10, First: at(f), Last: at(f)},
				}, store.UsageLimits{store.UsageClient: limit}))
			}
		})
	}
	wg.Wait()
	rows, err := stores[0].Usage(ctx, 42)
	require.NoError(t, err)
	versions, clientCalls, calls := 0, int64(0), int64(0)
	for _, r := range rows {
		switch {
		case r.Kind == store.UsageCall:
			calls += r.Calls
		case r.Kind == store.UsageClient:
			clientCalls += r.Calls
			if r.Detail != store.UsageOther {
				versions++
			}
		}
	}
	assert.Equal(t, limit, versions, "distinct versions kept across replicas")
	assert.Equal(t, int64(replicas*flushes*10), calls)
	assert.Equal(t, int64(replicas*flushes*10), clientCalls, "nothing lost to the overflow row")
	ms, err := stores[0].UsageMerchants(ctx)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, int64(replicas*flushes*10), ms[0].Calls)
}
