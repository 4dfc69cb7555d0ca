package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecentFailuresKeepsTheLastN(t *testing.T) {
	m := New([]string{"paymentStatus"}, []int64{1}, nil)
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
	m := New([]string{"paymentStatus"}, []int64{1}, nil)
	m.BadSignature("paymentStatus", 1)
	m.BadSignature("paymentStatus", 1)
	for g := range int64(50) {
		m.BadSignature("paymentStatus", 1000+g) // unconfigured goids
	}
	want := fmt.Sprintf(`
# HELP soapbridge_signature_failures_total %s
# TYPE soapbridge_signature_failures_total counter
soapbridge_signature_failures_total{merchant="1",operation="paymentStatus"} 2
soapbridge_signature_failures_total{merchant="other",operation="paymentStatus"} 50
`, "SOAP calls refused because their encryptedSignature does not verify, by operation and merchant.")
	require.NoError(t, testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "soapbridge_signature_failures_total"))
}

func TestUnmappedChannelLabelsStayBounded(t *testing.T) {
	m := New(nil, []int64{1}, nil)
	m.UnmappedChannel(1, "eu_mb_w", "use_enabled")
	m.UnmappedChannel(1, "unknown", "dropped")
	m.UnmappedChannel(1, "unknown", "dropped")
	m.UnmappedChannel(77, "eu_mb_w", "refused") // an unconfigured goid
	want := fmt.Sprintf(`
# HELP soapbridge_unmapped_payment_channels_total %s
# TYPE soapbridge_unmapped_payment_channels_total counter
soapbridge_unmapped_payment_channels_total{code="eu_mb_w",merchant="1",outcome="use_enabled"} 1
soapbridge_unmapped_payment_channels_total{code="eu_mb_w",merchant="other",outcome="refused"} 1
soapbridge_unmapped_payment_channels_total{code="unknown",merchant="1",outcome="dropped"} 2
`, "paymentChannels and defaultPaymentChannel codes without a REST equivalent, by merchant, code (a legacy table code or unknown) and outcome (dropped, use_enabled, refused).")
	require.NoError(t, testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "soapbridge_unmapped_payment_channels_total"))
}
