package operations

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

func TestSelectChannels(t *testing.T) {
	cases := []struct {
		name, list, def string
		want            restbackend.Payer
		dropped         []string
		droppedDefault  string
	}{
		{name: "empty list allows everything", want: restbackend.Payer{}},
		{name: "comma-space separator", list: "cz_kb, eu_gp_u", def: "cz_kb", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"BANK_ACCOUNT", "PAYMENT_CARD"}, AllowedSwifts: []string{"KOMBCZPP"},
			DefaultPaymentInstrument: "BANK_ACCOUNT", DefaultSwift: "KOMBCZPP"}},
		{name: "unknown codes dropped, once each, in order", list: "cz_kb, xx_one,eu_bank ,xx_two,xx_one", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"BANK_ACCOUNT"}}, dropped: []string{"xx_one", "xx_two"}},
		{name: "Java library example code", list: "cz_gp_c,cz_rb", def: "cz_gp_c", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"PAYMENT_CARD", "BANK_ACCOUNT"}, AllowedSwifts: []string{"RZBCCZPP"},
			DefaultPaymentInstrument: "PAYMENT_CARD"}},
		{name: "WooCommerce code", list: "cz_cs_c, eu_gp_u, SUPERCASH", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"PAYMENT_CARD", "SUPERCASH"}}},
		{name: "case of codes is free", list: "CZ_KB,supercash", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"BANK_ACCOUNT", "SUPERCASH"}, AllowedSwifts: []string{"KOMBCZPP"}}},
		{name: "unknown default dropped", list: "eu_gp_u", def: "xx_def", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"PAYMENT_CARD"}}, droppedDefault: "xx_def"},
		{name: "default without list", def: "sk_tatrabank", want: restbackend.Payer{
			DefaultPaymentInstrument: "BANK_ACCOUNT", DefaultSwift: "TATRSKBX"}},
		{name: "only separators", list: " , ,", want: restbackend.Payer{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := selectChannels(tc.list, tc.def)
			require.NoError(t, err)
			assert.Equal(t, tc.want, *sel.Payer)
			assert.Equal(t, tc.dropped, sel.DroppedList)
			assert.Equal(t, tc.droppedDefault, sel.DroppedDefault)
			all := append(append([]string(nil), tc.dropped...), tc.droppedDefault)
			if tc.droppedDefault == "" {
				all = tc.dropped
			}
			assert.Equal(t, all, sel.Dropped())
		})
	}
}

func TestSelectChannelsNoneKnown(t *testing.T) {
	sel, err := selectChannels("xx_a, xx_b", "eu_gp_u")
	require.ErrorIs(t, err, ErrNoKnownChannel)
	assert.EqualError(t, err, "no known payment channel in paymentChannels (unknown: xx_a, xx_b)")
	assert.Nil(t, sel.Payer)
	assert.Equal(t, []string{"xx_a", "xx_b"}, sel.DroppedList)
}
