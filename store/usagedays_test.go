package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/store"
)

// The usage record's days add up across flushes (replicas), stay out of
// the usage rows and totals, and a flush keeps a merchant's last
// DaysKept days before its latest: days × merchants stay bounded.
func TestUsageDays(t *testing.T) {
	for name, fresh := range map[string]freshDSN{"sqlite": sqliteDSN, "postgres": testenv.PostgresSchema} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, fresh(t))
			us := s.(interface {
				usageStore
				UsageDays(ctx context.Context, goids ...int64) ([]store.UsageDayCount, error)
			})
			day := func(goid int64, d time.Time, detail string, n int64) store.UsageCount {
				return store.UsageCount{GoID: goid, Kind: store.UsageDay, Name: d.Format(time.DateOnly), Detail: detail, Calls: n, First: d, Last: d}
			}
			d0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			require.NoError(t, us.AddUsage(ctx, []store.UsageCount{
				day(7, d0, store.DayCalls, 3), day(7, d0, store.DayRefused, 2), day(8, d0, store.DayCalls, 1),
				{GoID: 7, Kind: store.UsageCall, Name: "paymentStatus", Detail: "ok", Calls: 3, First: d0, Last: d0},
			}, store.UsageLimits{store.UsageCall: 10}))
			require.NoError(t, us.AddUsage(ctx, []store.UsageCount{day(7, d0, store.DayCalls, 4), day(7, d0.AddDate(0, 0, 1), store.DayRefused, 1)}, nil))
			days, err := us.UsageDays(ctx, 7)
			require.NoError(t, err)
			assert.Equal(t, []store.UsageDayCount{{GoID: 7, Day: "2026-11-01", Calls: 7, Refused: 2}, {GoID: 7, Day: "2026-11-02", Refused: 1}}, days)
			rows, err := us.Usage(ctx, 7)
			require.NoError(t, err)
			require.Len(t, rows, 1, "days are not usage rows")
			totals, err := us.UsageMerchants(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(3), totals[0].Calls, "days add nothing to the totals")

			// A flush 31 days after the first day drops it, not the second.
			require.NoError(t, us.AddUsage(ctx, []store.UsageCount{day(7, d0.AddDate(0, 0, store.DaysKept+1), store.DayCalls, 1)}, nil))
			days, err = us.UsageDays(ctx)
			require.NoError(t, err)
			assert.Equal(t, []store.UsageDayCount{{GoID: 7, Day: "2026-11-02", Refused: 1}, {GoID: 7, Day: "2026-12-02", Calls: 1},
				{GoID: 8, Day: "2026-11-01", Calls: 1}}, days)
		})
	}
}
