package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Refusals are counted by a reason from the fixed set (per merchant only
// for configured merchants, with merchant labels on), and the status page
// keeps each merchant's last MaxRefusalsPerMerchant, the most recent first.
func TestRefusalsCountedAndKept(t *testing.T) {
	m := New(Options{Operations: legacyOps, GoIDs: []int64{1, 2}, MerchantLabels: true,
		RefusalReasons: []string{"key_unknown", "value_amount_units"}})
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for i := range MaxRefusalsPerMerchant + 5 {
		m.Refused(Refusal{At: at.Add(time.Duration(i) * time.Second), GoID: 1, Operation: "paymentStatus", Reason: "key_unknown",
			RequestID: "r" + string(rune('a'+i))})
	}
	m.Refused(Refusal{GoID: 2, Operation: "createPayment", Reason: "value_amount_units", Field: "totalPrice"})
	m.Refused(Refusal{GoID: 2, Operation: "createPayment", Reason: "chosen-by-a-client"})
	m.Refused(Refusal{GoID: 77, Operation: "paymentStatus", Reason: "key_unknown"}) // no such merchant
	m.Refused(Refusal{GoID: 0, Operation: "paymentStatus", Reason: "key_unknown"})

	last := m.LastRefusals(1)
	require.Len(t, last, MaxRefusalsPerMerchant)
	assert.Equal(t, at.Add(time.Duration(MaxRefusalsPerMerchant+4)*time.Second), last[0].At, "the most recent first")
	assert.Equal(t, at.Add(5*time.Second), last[len(last)-1].At)
	assert.Equal(t, []Refusal{{GoID: 2, Operation: "createPayment", Reason: "unlisted"},
		{GoID: 2, Operation: "createPayment", Reason: "value_amount_units", Field: "totalPrice"}}, m.LastRefusals(2))
	assert.Empty(t, m.LastRefusals(77))

	want := `
# HELP soapbridge_merchant_refusals_total Calls refused by merchant (goid) and reason code; a series appears with the merchant's first refusal of that reason.
# TYPE soapbridge_merchant_refusals_total counter
soapbridge_merchant_refusals_total{goid="1",reason="key_unknown"} 15
soapbridge_merchant_refusals_total{goid="2",reason="unlisted"} 1
soapbridge_merchant_refusals_total{goid="2",reason="value_amount_units"} 1
# HELP soapbridge_refusals_total Calls refused (signature, access, validation, rate, gateway) by reason code.
# TYPE soapbridge_refusals_total counter
soapbridge_refusals_total{reason="key_unknown"} 17
soapbridge_refusals_total{reason="unlisted"} 1
soapbridge_refusals_total{reason="value_amount_units"} 1
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "soapbridge_refusals_total", "soapbridge_merchant_refusals_total"))

	// A reload without merchant 2 drops its series and its list.
	m.SetMerchants([]int64{1})
	assert.Empty(t, m.LastRefusals(2))
	assert.Len(t, m.LastRefusals(1), MaxRefusalsPerMerchant)
	n, err := testutil.GatherAndCount(m.Registry, "soapbridge_merchant_refusals_total")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}
