package operations

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/legacybridge/soapbridge/restbackend"
)

func TestSelectChannels(t *testing.T) {
	cases := []struct {
		name, list, def string
		want            restbackend.Payer
		unmapped        []string
		unmappedDefault string
		wholeList       bool
	}{
		{name: "empty list allows everything", want: restbackend.Payer{}},
		{name: "comma-space separator", list: "cz_kb, eu_gp_u", def: "cz_kb", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"BANK_ACCOUNT", "PAYMENT_CARD"}, AllowedSwifts: []string{"KOMBCZPP"},
			DefaultPaymentInstrument: "BANK_ACCOUNT", DefaultSwift: "KOMBCZPP"}},
		{name: "unknown codes dropped, once each, in order", list: "cz_kb, xx_one,eu_bank ,xx_two,xx_one", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"BANK_ACCOUNT"}}, unmapped: []string{"xx_one", "xx_two"}},
		{name: "Java library example code", list: "cz_gp_c,cz_rb", def: "cz_gp_c", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"PAYMENT_CARD", "BANK_ACCOUNT"}, AllowedSwifts: []string{"RZBCCZPP"},
			DefaultPaymentInstrument: "PAYMENT_CARD"}},
		{name: "WooCommerce code", list: "cz_cs_c, eu_gp_u, SUPERCASH", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"PAYMENT_CARD", "SUPERCASH"}}},
		{name: "case of codes is free", list: "CZ_KB,supercash", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"BANK_ACCOUNT", "SUPERCASH"}, AllowedSwifts: []string{"KOMBCZPP"}}},
		{name: "unknown default dropped", list: "eu_gp_u", def: "xx_def", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"PAYMENT_CARD"}}, unmappedDefault: "xx_def"},
		{name: "default without list", def: "sk_tatrabank", want: restbackend.Payer{
			DefaultPaymentInstrument: "BANK_ACCOUNT", DefaultSwift: "TATRSKBX"}},
		{name: "only separators", list: " , ,", want: restbackend.Payer{}},

		// Codes of earlier years.
		{name: "a Ruby gem's list: Moneta button, a bank gone (any bank), premium SMS", list: "cz_ge,cz_vb,cz_sms", def: "cz_ge",
			want: restbackend.Payer{AllowedPaymentInstruments: []string{"BANK_ACCOUNT", "PRSMS"},
				DefaultPaymentInstrument: "BANK_ACCOUNT", DefaultSwift: "AGBACZPP"}},
		{name: "bank buttons of earlier years", list: "cz_ge, cz_fio, sk_csob, sk_otpbank", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"BANK_ACCOUNT"}, AllowedSwifts: []string{"AGBACZPP", "FIOBCZPP", "CEKOSKBX", "OTPVSKBX"}}},
		{name: "Moneybookers cards are cards; its wallet is gone", list: "eu_mb_a,eu_mb_b,eu_mb_w", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"PAYMENT_CARD"}}, unmapped: []string{"eu_mb_w"}},
		{name: "older codes of current channels", list: "cz_gp_w,cz_bank,cs_sms", def: "cz_gp_w", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"GOPAY", "BANK_ACCOUNT", "PRSMS"}, DefaultPaymentInstrument: "GOPAY"}},
		{name: "sk_sberbank allows any bank", list: "sk_sberbank,sk_tatrabank", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"BANK_ACCOUNT"}}},
		{name: "a default without a REST equivalent is dropped", list: "eu_mb_a", def: "eu_mb_w", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"PAYMENT_CARD"}}, unmappedDefault: "eu_mb_w"},

		// Lists none of whose codes leads anywhere: the merchant's enabled methods.
		{name: "only a gone wallet", list: "eu_mb_w", want: restbackend.Payer{}, unmapped: []string{"eu_mb_w"}, wholeList: true},
		{name: "only unknown codes, a default kept", list: "xx_a, xx_b", def: "cz_kb", want: restbackend.Payer{
			DefaultPaymentInstrument: "BANK_ACCOUNT", DefaultSwift: "KOMBCZPP"}, unmapped: []string{"xx_a", "xx_b"}, wholeList: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, policy := range []string{"", UnmappedUseEnabled} {
				sel, err := selectChannels(tc.list, tc.def, policy)
				require.NoError(t, err)
				assert.Equal(t, tc.want, *sel.Payer)
				assert.Equal(t, tc.unmapped, sel.Unmapped)
				assert.Equal(t, tc.unmappedDefault, sel.UnmappedDefault)
				assert.Equal(t, tc.wholeList, sel.WholeList)
			}
			if !tc.wholeList {
				_, err := selectChannels(tc.list, tc.def, UnmappedRefuse)
				assert.NoError(t, err, "refuse applies to lists that lead nowhere only")
			}
		})
	}
}

func TestSelectChannelsRefusePolicy(t *testing.T) {
	sel, err := selectChannels("xx_a, eu_mb_w", "eu_gp_u", UnmappedRefuse)
	require.ErrorIs(t, err, ErrNoKnownChannel)
	assert.EqualError(t, err, "no payment channel in paymentChannels has an equivalent at the payment gateway (xx_a, eu_mb_w); this e-shop is set to refuse such lists")
	assert.Nil(t, sel.Payer)
	assert.Equal(t, []string{"xx_a", "eu_mb_w"}, sel.Unmapped)
	_, err = selectChannels("", "", UnmappedRefuse)
	assert.NoError(t, err, "an empty list is 'every method', never refused")
}

// Every code of both tables is read: a code of earlier years never fails a
// payment, and only eu_mb_w lacks a REST equivalent.
func TestEveryHistoricCodeIsRead(t *testing.T) {
	for _, code := range []string{"cz_cs_c", "cz_gp_c", "eu_mb_a", "eu_mb_b", "cz_gp_w", "cz_ge", "cz_vb", "cz_fio", "cz_bank",
		"cs_sms", "cz_sms", "sk_csob", "sk_otpbank", "sk_sberbank"} {
		sel, err := selectChannels(code, code, UnmappedRefuse)
		require.NoError(t, err, code)
		assert.NotEmpty(t, sel.Payer.AllowedPaymentInstruments, code)
		assert.Equal(t, sel.Payer.AllowedPaymentInstruments[0], sel.Payer.DefaultPaymentInstrument, code)
		assert.Empty(t, sel.Unmapped, code)
		assert.Equal(t, code, ChannelCodeLabel(code))
	}
	assert.Equal(t, "eu_mb_w", ChannelCodeLabel("EU_MB_W"))
	assert.Equal(t, UnknownChannelCode, ChannelCodeLabel("xx_whatever"))
	assert.Equal(t, UnknownChannelCode, ChannelCodeLabel(""))
}

func TestReportedChannel(t *testing.T) {
	cases := []struct{ instrument, swift, list, want string }{
		// The shop listed a code of earlier years for exactly that bank.
		{"BANK_ACCOUNT", "AGBACZPP", "cz_ge,cz_vb,cz_sms", "cz_ge"},
		{"BANK_ACCOUNT", "FIOBCZPP", "cz_fio", "cz_fio"},
		{"BANK_ACCOUNT", "CEKOSKBX", "sk_csob,sk_tatrabank", "sk_csob"},
		// A bank the shop had no button for, through its any-bank code.
		{"BANK_ACCOUNT", "FIOBCZPP", "cz_ge,cz_vb,cz_sms", "cz_vb"},
		{"BANK_ACCOUNT", "", "cz_bank", "cz_bank"},
		{"BANK_ACCOUNT", "CEKOCZPP", "cz_kb,eu_bank", "eu_bank"},
		// The current code wins where the shop listed it.
		{"BANK_ACCOUNT", "FIOBCZPP", "cz_fb,cz_fio", "cz_fb"},
		{"BANK_ACCOUNT", "KOMBCZPP", "eu_bank,cz_kb", "cz_kb"},
		{"PAYMENT_CARD", "", "cz_gp_c,eu_gp_u", "eu_gp_u"},
		// Other instruments: the shop's code.
		{"PAYMENT_CARD", "", "cz_gp_c,cz_rb", "cz_gp_c"},
		{"PAYMENT_CARD", "", "eu_gp_kb", "eu_gp_kb"},
		{"PRSMS", "", "cz_ge,cz_vb,cz_sms", "cz_sms"},
		{"GOPAY", "", "cz_gp_w", "cz_gp_w"},
		// The shop's spelling, as it sent it.
		{"SUPERCASH", "", "supercash", "supercash"},
		// Nothing of the shop's fits: the current code.
		{"PAYMENT_CARD", "", "cz_ge", "eu_gp_u"},
		{"BANK_ACCOUNT", "AGBACZPP", "", "eu_bank"},
		{"BANK_ACCOUNT", "AGBACZPP", "cz_kb", "eu_bank"},
		{"BANK_ACCOUNT", "KOMBCZPP", "xx_unknown", "cz_kb"},
		{"BANK_ACCOUNT", "KOMBCZPP", "eu_mb_w", "cz_kb"},
	}
	for _, tc := range cases {
		got, ok := reportedChannel(tc.instrument, tc.swift, tc.list)
		assert.True(t, ok)
		assert.Equal(t, tc.want, got, "%s %s, list %q", tc.instrument, tc.swift, tc.list)
	}
	for _, in := range []string{"", "APPLE_PAY"} {
		_, ok := reportedChannel(in, "", "cz_ge,eu_gp_u")
		assert.False(t, ok, in)
	}
}

// A list that leads nowhere is logged with its codes and counted per
// merchant with bounded labels; under unmapped_channels: refuse it is
// refused.
func TestChannelsOfLogsAndCounts(t *testing.T) {
	type event struct{ code, outcome string }
	for _, policy := range []string{UnmappedUseEnabled, UnmappedRefuse} {
		t.Run(policy, func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			var events []event
			cfg := unitConfig(t)
			cfg.Logger = zap.New(core)
			cfg.OnUnmappedChannel = func(goid int64, code, outcome string) {
				assert.Equal(t, int64(testGoID), goid)
				events = append(events, event{code, outcome})
			}
			cfg.Merchants[0].UnmappedChannels = policy
			s, err := New(cfg)
			require.NoError(t, err)
			m, _ := s.merchant(bg, testGoID)
			c := &PaymentCommand{PaymentChannels: "eu_mb_w, Fancy-<script>", DefaultPaymentChannel: "cz_ge"}
			payer, r := s.channelsOf(context.Background(), c, m)
			want := []event{{"eu_mb_w", ChannelUseEnabled}, {UnknownChannelCode, ChannelUseEnabled}}
			if policy == UnmappedRefuse {
				require.NotNil(t, r)
				assert.Contains(t, r.desc, "(eu_mb_w, Fancy-<script>)")
				want = []event{{"eu_mb_w", ChannelRefused}, {UnknownChannelCode, ChannelRefused}}
			} else {
				require.Nil(t, r)
				assert.Empty(t, payer.AllowedPaymentInstruments, "the merchant's enabled methods")
				assert.Equal(t, "AGBACZPP", payer.DefaultSwift)
			}
			assert.Equal(t, want, events)
			got := logs.TakeAll()
			require.Len(t, got, 1)
			assert.Contains(t, got[0].Message, "no payment channel has a REST equivalent")
			assert.Equal(t, []any{"eu_mb_w", "Fancy-<script>"}, got[0].ContextMap()["codes"])
			assert.Equal(t, int64(testGoID), got[0].ContextMap()["goid"])
		})
	}
}
