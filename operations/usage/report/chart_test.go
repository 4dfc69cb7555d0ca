package report_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/operations/usage/report"
)

// The chart's days add up to the merchant's counts: every call of the
// known mix (all within 30 days) is a day's answered or refused call, the
// refused ones those the operations count as refused or denied; the page
// draws them as inline SVG (no script) labelled with the totals.
func TestReportChartsTheLast30Days(t *testing.T) {
	r, err := report.Build(context.Background(), knownMix(t), report.Options{Configured: []int64{shopPHP, shopIdle}, Now: now})
	require.NoError(t, err)
	m := r.Find(shopPHP)
	require.NotNil(t, m)
	require.Len(t, m.Days, 30)
	assert.Equal(t, now.UTC().Format("2006-01-02"), m.Days[29].Date, "the last day is today")
	var calls, refused, wantRefused int64
	for _, d := range m.Days {
		calls += d.Calls
		refused += d.Refused
	}
	for _, op := range m.Operations {
		wantRefused += op.FailuresByKind[string(usage.ResultRefused)] + op.FailuresByKind[string(usage.ResultDenied)]
	}
	assert.Equal(t, m.Calls, calls+refused, "the days add up to the merchant's calls")
	assert.Equal(t, wantRefused, refused)
	assert.Positive(t, refused)
	idle := r.Find(shopIdle)
	require.NotNil(t, idle)
	assert.Len(t, idle.Days, 30, "a merchant without calls has an empty chart")

	var page bytes.Buffer
	require.NoError(t, r.WriteHTML(&page, false))
	label := fmt.Sprintf(`aria-label="legacy calls per day, %s to %s: %d answered, %d refused"`, m.Days[0].Date, m.Days[29].Date, calls, refused)
	assert.Contains(t, page.String(), label)
	assert.NotContains(t, strings.ToLower(page.String()), "<script")
}
