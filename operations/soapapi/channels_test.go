package soapapi

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
)

// createWithChannels creates a payment of the demo merchant whose
// paymentChannels is list, through the core; the reply's result and
// description are returned with its id.
func createWithChannels(t *testing.T, h *harness, list, def string) (id int64, st *operations.PaymentStatus) {
	t.Helper()
	goid, price, no := int64(testGoID), int64(12900), false
	c := &operations.PaymentCommand{TargetGoID: &goid, ProductName: "Objednávka 7", TotalPrice: &price, Currency: "CZK",
		OrderNumber: "channels-1", FailedURL: "https://eshop.example/failed", SuccessURL: "https://eshop.example/success",
		PreAuthorization: &no, RecurrentPayment: &no, PaymentChannels: list, DefaultPaymentChannel: def}
	sig, err := operations.Sign(testSecureKey, c.SignatureFields()...)
	require.NoError(t, err)
	c.EncryptedSignature = sig
	st, err = invoke[*operations.PaymentStatus](t, h.svc, "createPayment", c)
	require.NoError(t, err)
	if st.PaymentSessionID != nil {
		id = *st.PaymentSessionID
	}
	return id, st
}

func channelStatus(t *testing.T, h *harness, id int64) *operations.PaymentStatus {
	t.Helper()
	goid := int64(testGoID)
	sig, err := operations.Sign(testSecureKey, operations.PaymentSessionFields(fmt.Sprint(goid), fmt.Sprint(id))...)
	require.NoError(t, err)
	st, err := invoke[*operations.PaymentStatus](t, h.svc, "paymentStatus", &operations.SessionInfo{TargetGoID: &goid, PaymentSessionID: &id, EncryptedSignature: sig})
	require.NoError(t, err)
	require.Equal(t, operations.CallCompleted, st.Result, st.ResultDescription)
	return st
}

// A shop configured with codes of earlier years pays, and its status
// replies name the channel with its own code; the reply's signature covers
// that code.
func TestHistoricChannelsPaidAndReportedWithTheShopsCode(t *testing.T) {
	for _, tc := range []struct {
		name, list, def string
		pay             sandbox.Action
		allowed         string // what the gateway was asked to allow
		want            string
	}{
		{"Moneta button as cz_ge", "cz_ge,cz_vb,cz_sms", "cz_ge",
			sandbox.Action{Do: sandbox.ActPay, Instrument: restbackend.InstrumentBankAccount, Swift: "AGBACZPP"},
			`"allowed_payment_instruments": [
      "BANK_ACCOUNT",
      "PRSMS"
    ]`, "cz_ge"},
		{"another bank through cz_vb", "cz_ge,cz_vb,cz_sms", "",
			sandbox.Action{Do: sandbox.ActPay, Instrument: restbackend.InstrumentBankAccount, Swift: "FIOBCZPP"}, `"PRSMS"`, "cz_vb"},
		{"card through cz_gp_c", "cz_gp_c", "", payCard, `"PAYMENT_CARD"`, "cz_gp_c"},
		{"a current list still reports current codes", "eu_gp_u,cz_kb", "",
			sandbox.Action{Do: sandbox.ActPay, Instrument: restbackend.InstrumentBankAccount, Swift: "KOMBCZPP"}, `"KOMBCZPP"`, "cz_kb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := demoHarness(t, nil)
			id, st := createWithChannels(t, h, tc.list, tc.def)
			require.Equal(t, operations.CallCompleted, st.Result, st.ResultDescription)
			assert.Contains(t, h.rec.String(), tc.allowed)
			h.act(id, tc.pay)
			st = channelStatus(t, h, id)
			assert.Equal(t, "PAID", *st.SessionState)
			require.NotNil(t, st.PaymentChannel)
			assert.Equal(t, tc.want, *st.PaymentChannel)
			assert.True(t, operations.Verify(testSecureKey, *st.EncryptedSignature, st.SignatureFields()...))
		})
	}
}

// A list that leads nowhere: created without an instrument restriction
// (use_enabled, the default), or refused without a gateway call (refuse).
func TestUnmappedChannelListPolicies(t *testing.T) {
	h := demoHarness(t, nil)
	id, st := createWithChannels(t, h, "eu_mb_w, xx_gone", "")
	require.Equal(t, operations.CallCompleted, st.Result, st.ResultDescription)
	assert.NotContains(t, h.rec.String(), "allowed_payment_instruments")
	h.act(id, sandbox.Action{Do: sandbox.ActPay, Instrument: "GOPAY"})
	assert.Equal(t, "eu_gp_w", *channelStatus(t, h, id).PaymentChannel, "nothing of the shop's fits: the current code")

	h = demoHarness(t, func(m *operations.Merchant) { m.UnmappedChannels = operations.UnmappedRefuse })
	warmToken(h)
	h.rec.reset()
	_, st = createWithChannels(t, h, "eu_mb_w, xx_gone", "")
	assert.Equal(t, "CALL_FAILED", st.Result)
	assert.Equal(t, "no payment channel in paymentChannels has an equivalent at the payment gateway (eu_mb_w, xx_gone); this e-shop is set to refuse such lists",
		*st.ResultDescription)
	assert.Equal(t, "(no REST call)\n", h.rec.String())
}

func TestUnmappedChannelsSettingValidated(t *testing.T) {
	m := testMerchant()
	for in, want := range map[string]string{"": "", " Refuse ": operations.UnmappedRefuse, "USE_ENABLED": operations.UnmappedUseEnabled} {
		m.UnmappedChannels = in
		m.Normalize()
		assert.Equal(t, want, m.UnmappedChannels)
		assert.Empty(t, m.Problems())
	}
	m.UnmappedChannels = "drop"
	m.Normalize()
	assert.Equal(t, []operations.Problem{{Key: "unmapped_channels", Msg: `unmapped_channels "drop" must be use_enabled or refuse`}}, m.Problems())
}
