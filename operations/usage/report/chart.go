package report

import (
	"context"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/legacybridge/soapbridge/store"
)

// Day is one day of a merchant's chart: the legacy calls answered and
// refused (UTC).
type Day struct {
	Date           string // 2006-01-02
	Calls, Refused int64
}

// DayStore is a Store that also keeps the usage record's days (the SQL
// store does); Build charts them when it can.
type DayStore interface {
	UsageDays(ctx context.Context, goids ...int64) ([]store.UsageDayCount, error)
}

// LastDays are the store.DaysKept days up to now's (UTC), oldest first,
// with the counts of rows that fall in them (goid's rows; the others are
// skipped).
func LastDays(rows []store.UsageDayCount, goid int64, now time.Time) []Day {
	now = now.UTC()
	days := make([]Day, store.DaysKept)
	at := map[string]int{}
	for i := range days {
		d := now.AddDate(0, 0, i-store.DaysKept+1).Format(time.DateOnly)
		days[i].Date = d
		at[d] = i
	}
	for _, r := range rows {
		if i, ok := at[r.Day]; ok && r.GoID == goid {
			days[i].Calls += r.Calls
			days[i].Refused += r.Refused
		}
	}
	return days
}

// addDays charts every merchant of r from st's days, when st keeps them.
func addDays(ctx context.Context, st Store, r *Report, goid int64, now time.Time) error {
	ds, ok := st.(DayStore)
	if !ok {
		return nil
	}
	var goids []int64
	if goid != 0 {
		goids = []int64{goid}
	}
	rows, err := ds.UsageDays(ctx, goids...)
	if err != nil {
		return fmt.Errorf("read the usage record's days: %w", err)
	}
	for i := range r.Merchants {
		if r.Merchants[i].GoID != 0 {
			r.Merchants[i].Days = LastDays(rows, r.Merchants[i].GoID, now)
		}
	}
	return nil
}

// Chart draws days as an inline SVG bar chart, no script: per day a grey
// bar of the calls answered with the refusals in red on top, each day's
// counts in its tooltip (title). Empty for no days.
func Chart(days []Day) template.HTML {
	if len(days) == 0 {
		return ""
	}
	const barW, gap, h = 8, 2, 48
	var top, calls, refused int64
	for _, d := range days {
		top = max(top, d.Calls+d.Refused)
		calls += d.Calls
		refused += d.Refused
	}
	w := len(days) * (barW + gap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="legacy calls per day, %s to %s: %d answered, %d refused">`,
		w, h+2, w, h+2, days[0].Date, days[len(days)-1].Date, calls, refused)
	fmt.Fprintf(&b, `<line x1="0" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, h+1, w, h+1)
	for i, d := range days {
		x := i * (barW + gap)
		ch, rh := scale(d.Calls, top, h), scale(d.Refused, top, h)
		fmt.Fprintf(&b, `<g><title>%s: %d answered, %d refused</title><rect x="%d" y="0" width="%d" height="%d" fill="transparent"/>`,
			d.Date, d.Calls, d.Refused, x, barW, h+1)
		if ch > 0 {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#777"/>`, x, h+1-ch, barW, ch)
		}
		if rh > 0 {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#c00"/>`, x, h+1-ch-rh, barW, rh)
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built here from numbers and dates only
}

// scale is n's bar height of h for the tallest top; at least 1 for n > 0.
func scale(n, top int64, h int) int {
	if n <= 0 || top <= 0 {
		return 0
	}
	return max(1, int(n*int64(h)/top))
}
