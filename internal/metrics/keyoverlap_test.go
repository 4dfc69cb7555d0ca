package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The merchants in key overlap: a count always, the end per merchant only
// with merchant labels on; what the list says at scrape time.
func TestKeyOverlaps(t *testing.T) {
	var list []KeyOverlap
	for _, labelled := range []bool{true, false} {
		m := New(Options{MerchantLabels: labelled})
		assert.Empty(t, m.KeyOverlapList())
		m.KeyOverlaps(func() []KeyOverlap { return list })
		list = nil
		require.NoError(t, testutil.GatherAndCompare(m.Registry, strings.NewReader(`
# HELP soapbridge_key_overlap_merchants Merchants whose previous secure key or client secret is still accepted beside the current one (a rotation under way).
# TYPE soapbridge_key_overlap_merchants gauge
soapbridge_key_overlap_merchants 0
`), "soapbridge_key_overlap_merchants", "soapbridge_merchant_key_overlap_end_timestamp_seconds"))
		list = []KeyOverlap{{GoID: 8123456789, SecureKey: true, EndsAt: time.Unix(1900000000, 0), PreviousKeyUsed: time.Unix(1800000000, 0)},
			{GoID: 8123456790, ClientSecret: true, EndsAt: time.Unix(1900000001, 0)}}
		want := `
# HELP soapbridge_key_overlap_merchants Merchants whose previous secure key or client secret is still accepted beside the current one (a rotation under way).
# TYPE soapbridge_key_overlap_merchants gauge
soapbridge_key_overlap_merchants 2
`
		if labelled {
			want += `# HELP soapbridge_merchant_key_overlap_end_timestamp_seconds Unix time at which the merchant's previous secure key or client secret stops being accepted; merchants in overlap only.
# TYPE soapbridge_merchant_key_overlap_end_timestamp_seconds gauge
soapbridge_merchant_key_overlap_end_timestamp_seconds{goid="8123456789"} 1.9e+09
soapbridge_merchant_key_overlap_end_timestamp_seconds{goid="8123456790"} 1.900000001e+09
# HELP soapbridge_merchant_previous_key_last_use_timestamp_seconds Unix time at which this replica last accepted a request of the merchant signed with its previous secure key; merchants in overlap whose previous key was used since start only.
# TYPE soapbridge_merchant_previous_key_last_use_timestamp_seconds gauge
soapbridge_merchant_previous_key_last_use_timestamp_seconds{goid="8123456789"} 1.8e+09
`
		}
		require.NoError(t, testutil.GatherAndCompare(m.Registry, strings.NewReader(want),
			"soapbridge_key_overlap_merchants", "soapbridge_merchant_key_overlap_end_timestamp_seconds",
			"soapbridge_merchant_previous_key_last_use_timestamp_seconds"), "labelled %v", labelled)
		assert.Equal(t, list, m.KeyOverlapList())
	}
}
