package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecentFailuresKeepsTheLastN(t *testing.T) {
	m := New(Options{Operations: []string{"paymentStatus"}, GoIDs: []int64{1}})
	assert.Empty(t, m.RecentFailures())
	for i := range maxFailures + 5 {
		m.OutboxFailed(OutboxFailure{PaymentID: int64(i), Target: "http://shop", Status: "HTTP 503"})
	}
	got := m.RecentFailures()
	require.Len(t, got, maxFailures)
	assert.Equal(t, int64(maxFailures+4), got[0].PaymentID, "most recent first")
	assert.Equal(t, int64(5), got[maxFailures-1].PaymentID, "the oldest kept")
}

func TestBadSignatureLabelsStayBounded(t *testing.T) {
	m := New(Options{Operations: []string{"paymentStatus"}, GoIDs: []int64{1}, MerchantLabels: true})
	m.BadSignature("paymentStatus", 1)
	m.BadSignature("paymentStatus", 1)
	for g := range int64(50) {
		m.BadSignature("paymentStatus", 1000+g) // unconfigured goids
	}
	m.BadSignature("noSuchOperation", 1)
	want := `
# HELP soapbridge_signature_failures_total SOAP calls refused because their encryptedSignature does not verify, by operation.
# TYPE soapbridge_signature_failures_total counter
soapbridge_signature_failures_total{operation="paymentStatus"} 52
soapbridge_signature_failures_total{operation="unknown"} 1
# HELP soapbridge_merchant_signature_failures_total SOAP calls refused because their encryptedSignature does not verify, by merchant (goid).
# TYPE soapbridge_merchant_signature_failures_total counter
soapbridge_merchant_signature_failures_total{goid="1"} 3
soapbridge_merchant_signature_failures_total{goid="other"} 50
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry, strings.NewReader(want),
		"soapbridge_signature_failures_total", "soapbridge_merchant_signature_failures_total"))
}

func TestUnmappedChannelLabelsStayBounded(t *testing.T) {
	m := New(Options{GoIDs: []int64{1}, MerchantLabels: true})
	m.UnmappedChannel(1, "eu_mb_w", "use_enabled")
	m.UnmappedChannel(1, "unknown", "dropped")
	m.UnmappedChannel(1, "unknown", "dropped")
	m.UnmappedChannel(77, "eu_mb_w", "refused") // an unconfigured goid
	want := `
# HELP soapbridge_unmapped_payment_channels_total paymentChannels and defaultPaymentChannel codes without a REST equivalent, by code (a legacy table code or unknown) and outcome (dropped, use_enabled, refused).
# TYPE soapbridge_unmapped_payment_channels_total counter
soapbridge_unmapped_payment_channels_total{code="eu_mb_w",outcome="refused"} 1
soapbridge_unmapped_payment_channels_total{code="eu_mb_w",outcome="use_enabled"} 1
soapbridge_unmapped_payment_channels_total{code="unknown",outcome="dropped"} 2
# HELP soapbridge_merchant_unmapped_payment_channels_total paymentChannels and defaultPaymentChannel codes without a REST equivalent, by merchant (goid).
# TYPE soapbridge_merchant_unmapped_payment_channels_total counter
soapbridge_merchant_unmapped_payment_channels_total{goid="1"} 3
soapbridge_merchant_unmapped_payment_channels_total{goid="other"} 1
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "soapbridge_unmapped_payment_channels_total",
		"soapbridge_merchant_unmapped_payment_channels_total"))
}
