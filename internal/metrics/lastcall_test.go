package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cut-over gauge reports, per merchant, what the usage record knows at
// scrape time, and nothing for a merchant without a legacy call.
func TestLegacyLastCall(t *testing.T) {
	m := New(Options{MerchantLabels: true})
	last := map[int64]time.Time{8123456789: time.Unix(1900000000, 0)}
	m.LegacyLastCall(func() map[int64]time.Time { return last })
	want := `
# HELP soapbridge_legacy_last_call_timestamp_seconds Unix time of the merchant's last legacy SOAP call or browser flow on any replica (as of this replica's last usage flush, or later).
# TYPE soapbridge_legacy_last_call_timestamp_seconds gauge
soapbridge_legacy_last_call_timestamp_seconds{goid="8123456789"} 1.9e+09
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "soapbridge_legacy_last_call_timestamp_seconds"))
	last = map[int64]time.Time{}
	n, err := testutil.GatherAndCount(m.Registry, "soapbridge_legacy_last_call_timestamp_seconds")
	require.NoError(t, err)
	assert.Zero(t, n)
}

// With merchant labels off no series names a merchant, the cut-over
// gauge's neither.
func TestLegacyLastCallOffWithMerchantLabels(t *testing.T) {
	m := New(Options{})
	m.LegacyLastCall(func() map[int64]time.Time { return map[int64]time.Time{8123456789: time.Unix(1900000000, 0)} })
	n, err := testutil.GatherAndCount(m.Registry, "soapbridge_legacy_last_call_timestamp_seconds")
	require.NoError(t, err)
	require.Zero(t, n)
}
