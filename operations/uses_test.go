package operations

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/legacybridge/soapbridge/operations/usage"
)

func TestLegacyUses(t *testing.T) {
	m := testMerchant()
	cases := []struct {
		name     string
		op       string
		req      any
		features []usage.Feature
		retired  []string
	}{
		{"plain command", "createPayment", &PaymentCommand{OrderNumber: "1", P3: " "}, nil, nil},
		{"every feature", "createPayment", &PaymentCommand{
			P1: "a", CustomerData: &CustomerData{Email: "jan@example.cz"},
			PaymentChannels: "cz_kb, EU_GP_U,eu_gp_u, cz_vb,nope", DefaultPaymentChannel: "cz_kb", Lang: "cs",
			PreAuthorization: ptr(true), RecurrentPayment: ptr(true), RecurrenceCycle: "month", PartnerGoID: ptr(int64(1)),
		}, []usage.Feature{usage.FeatureParams, usage.FeatureCustomerData, usage.FeaturePaymentChannels,
			usage.ChannelFeature("cz_kb"), usage.ChannelFeature("eu_gp_u"), usage.ChannelFeature("cz_vb"), usage.FeatureDefaultChannel,
			usage.FeatureLang, usage.FeaturePreauthorization, usage.FeatureRecurrenceMonth},
			[]string{"channel nope", "field partnerGoId"}},
		{"a channel mapped to nothing is retired", "createPayment", &PaymentCommand{PaymentChannels: "EU_MB_W, sk_sberbank"},
			[]usage.Feature{usage.FeaturePaymentChannels, usage.ChannelFeature("sk_sberbank")}, []string{"channel eu_mb_w"}},
		{"empty customer data and false flags", "createPayment", &PaymentCommand{CustomerData: &CustomerData{},
			PreAuthorization: ptr(false), RecurrentPayment: ptr(false), RecurrenceCycle: "DAY"}, nil, nil},
		{"recurrence with a cycle no table knows", "createPayment", &PaymentCommand{RecurrentPayment: ptr(true), RecurrenceCycle: "YEAR"}, nil, nil},
		{"refund with description", "partiallyRefundPayment", &RefundRequest{Description: "vráceno"}, []usage.Feature{usage.FeatureRefundDescription}, nil},
		{"createBuyer", "createBuyer", &BuyerCreate{}, nil, []string{"operation createBuyer"}},
		{"Java statement", usage.FlowStatement, &StatementRequest{ContentType: "TYPE_XLS"},
			[]usage.Feature{usage.FeatureStatementNoCurrency, usage.FeatureStatementXLS}, nil},
		{"PHP statement", usage.FlowStatement, &StatementRequest{Currency: "CZK"}, []usage.Feature{usage.FeatureStatementCSV}, nil},
		{"REST format", usage.FlowStatement, &StatementRequest{Currency: "CZK", ContentType: "csv_b"}, []usage.Feature{usage.FeatureStatementREST}, nil},
		{"status", "paymentStatus", &SessionInfo{}, nil, nil},
		{"touch", "touch", nil, nil, nil},
	}
	for _, tc := range cases {
		f, r := m.LegacyUses(tc.op, tc.req)
		assert.Equal(t, tc.features, f, tc.name)
		assert.Equal(t, tc.retired, r, tc.name)
	}

	m.VoidRecurrentReply = ReplyPaymentSession
	f, _ := m.LegacyUses("voidRecurrentPayment", &SessionInfo{})
	assert.Equal(t, []usage.Feature{usage.FeatureVoidRecurrentReply}, f, "the merchant's .NET reply setting")
	f, _ = m.LegacyUses("paymentStatus", &SessionInfo{})
	assert.Empty(t, f, "the setting matters to voidRecurrentPayment only")
}

func TestChannelREST(t *testing.T) {
	in, swift, ok := ChannelREST("CZ_KB")
	assert.True(t, ok)
	assert.Equal(t, "BANK_ACCOUNT", in)
	assert.Equal(t, "KOMBCZPP", swift)
	_, _, ok = ChannelREST("nope")
	assert.False(t, ok)
	assert.Contains(t, ChannelCodes(), "eu_gp_u")
}
