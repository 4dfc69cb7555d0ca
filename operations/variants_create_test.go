package operations

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// What other client libraries send and the gateway would refuse goes ahead
// mapped or dropped, each with a warning naming the value and the goid:
// three-letter and unknown lang, three-letter and unknown countryCode,
// unknown channel codes next to known ones.
func TestPaymentRequestClientVariants(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	cfg := unitConfig(t)
	cfg.Logger = zap.New(core)
	s, err := New(cfg)
	require.NoError(t, err)
	m := s.merchants.Load().byGoID[testGoID]
	base := func() *PaymentCommand {
		return &PaymentCommand{TotalPrice: ptr(int64(100)), Currency: "CZK", OrderNumber: "1", ProductName: "x",
			SuccessURL: "https://e/s", FailedURL: "https://e/f"}
	}
	cases := []struct {
		name                string
		edit                func(c *PaymentCommand)
		lang, country, warn string
		instruments         []string
	}{
		{name: "Django CZE", edit: func(c *PaymentCommand) { c.Lang = "CZE" }, lang: "CS"},
		{name: "lower two-letter", edit: func(c *PaymentCommand) { c.Lang = "sk" }, lang: "SK"},
		{name: "GER", edit: func(c *PaymentCommand) { c.Lang = "GER" }, lang: "DE"},
		{name: "unknown lang", edit: func(c *PaymentCommand) { c.Lang = "XQZ" }, lang: m.Lang, warn: "unknown lang replaced by the merchant's default"},
		{name: "country SVK", edit: func(c *PaymentCommand) { c.CustomerData = &CustomerData{FirstName: "Ján", CountryCode: "SVK"} }, country: "SVK"},
		{name: "country sk", edit: func(c *PaymentCommand) { c.CustomerData = &CustomerData{FirstName: "Ján", CountryCode: "sk"} }, country: "SVK"},
		{name: "country unknown", edit: func(c *PaymentCommand) { c.CustomerData = &CustomerData{FirstName: "Ján", CountryCode: "Q1"} },
			warn: "unknown customerData.countryCode left out"},
		{name: "unknown channels", edit: func(c *PaymentCommand) { c.PaymentChannels = "eu_gp_u, xx_old,cz_kb" },
			instruments: []string{"PAYMENT_CARD", "BANK_ACCOUNT"}, warn: "unknown payment channel codes dropped"},
		{name: "Java example card code", edit: func(c *PaymentCommand) { c.PaymentChannels = "cz_gp_c" }, instruments: []string{"PAYMENT_CARD"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs.TakeAll()
			c := base()
			tc.edit(c)
			req, r := s.paymentRequest(context.Background(), c, m, "tok")
			require.Nil(t, r)
			assert.Equal(t, tc.lang, req.Lang)
			if tc.country != "" {
				require.NotNil(t, req.Payer)
				assert.Equal(t, tc.country, req.Payer.Contact.CountryCode)
			}
			if tc.instruments != nil {
				assert.Equal(t, tc.instruments, req.Payer.AllowedPaymentInstruments)
			}
			got := logs.TakeAll()
			if tc.warn == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, tc.warn, got[0].Message)
			assert.Equal(t, int64(testGoID), got[0].ContextMap()["goid"])
		})
	}
	// Only unknown codes: the payment goes ahead with the merchant's
	// enabled methods (unmapped_channels: use_enabled, the default).
	c := base()
	c.PaymentChannels = "xx_a, xx_b"
	req, r := s.paymentRequest(context.Background(), c, m, "tok")
	require.Nil(t, r)
	assert.Nil(t, req.Payer, "no restriction sent")
	whole := logs.FilterMessageSnippet("no payment channel has a REST equivalent").All()
	require.Len(t, whole, 1)
	assert.Equal(t, []any{"xx_a", "xx_b"}, whole[0].ContextMap()["codes"])
}
