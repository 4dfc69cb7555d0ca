package usage

import (
	"testing"
	"time"
)

// TestDayTextIsDateOnly: the kept day's text is the one time.DateOnly
// writes, in UTC, whatever the zone asked in and across days, back and
// forth (two replicas' clocks, a record's own time).
func TestDayTextIsDateOnly(t *testing.T) {
	prague, err := time.LoadLocation("Europe/Prague")
	if err != nil {
		prague = time.FixedZone("CET", 3600)
	}
	base := time.Date(2026, 12, 31, 22, 59, 59, 0, time.UTC)
	for _, at := range []time.Time{
		base, base.Add(time.Second), base.Add(time.Hour + time.Second), base,
		base.In(prague), base.Add(time.Hour).In(prague), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC), time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, want := dayText(at), at.UTC().Format(time.DateOnly); got != want {
			t.Errorf("dayText(%v) = %s, want %s", at, got, want)
		}
	}
}
