package operations

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

func TestSelectChannelsMapping(t *testing.T) {
	cases := []struct {
		list, def string
		want      restbackend.Payer
		err       string
	}{
		{list: "", def: "", want: restbackend.Payer{}},
		{list: "cz_kb,eu_gp_u", def: "cz_kb", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"BANK_ACCOUNT", "PAYMENT_CARD"}, AllowedSwifts: []string{"KOMBCZPP"},
			DefaultPaymentInstrument: "BANK_ACCOUNT", DefaultSwift: "KOMBCZPP"}},
		// Three card codes are one instrument; eu_bank lifts the bank restriction.
		{list: " eu_gp_u , eu_gp_kb,eu_om,cz_rb,eu_bank", def: "eu_om", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"PAYMENT_CARD", "BANK_ACCOUNT"}, DefaultPaymentInstrument: "PAYMENT_CARD"}},
		{list: "SUPERCASH,eu_psc,eu_paypal,eu_gp_w,eu_pr_sms,cz_mp", want: restbackend.Payer{
			AllowedPaymentInstruments: []string{"SUPERCASH", "PAYSAFECARD", "PAYPAL", "GOPAY", "PRSMS", "MPAYMENT"}}},
		// Unknown codes are dropped; a list of nothing but unknown codes
		// offers the merchant's enabled methods (unmapped_channels).
		{list: "cz_kb,nope", want: restbackend.Payer{AllowedPaymentInstruments: []string{"BANK_ACCOUNT"}, AllowedSwifts: []string{"KOMBCZPP"}}},
		{def: "nope", want: restbackend.Payer{}},
		{list: "nope", want: restbackend.Payer{}},
	}
	for _, tc := range cases {
		sel, err := selectChannels(tc.list, tc.def, UnmappedUseEnabled)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, *sel.Payer, tc.list)
	}
}

func TestLegacyCode(t *testing.T) {
	cases := []struct{ in, swift, want string }{
		{"PAYMENT_CARD", "", "eu_gp_u"},
		{"BANK_ACCOUNT", "KOMBCZPP", "cz_kb"},
		{"BANK_ACCOUNT", "tatrskbx", "sk_tatrabank"},
		{"BANK_ACCOUNT", "CEKOCZPP", "eu_bank"}, // a bank without a legacy button
		{"BANK_ACCOUNT", "", "eu_bank"},
		{"GOPAY", "", "eu_gp_w"},
		{"SUPERCASH", "", "SUPERCASH"},
	}
	for _, tc := range cases {
		got, ok := legacyCode(tc.in, tc.swift)
		assert.True(t, ok)
		assert.Equal(t, tc.want, got, tc.in+" "+tc.swift)
	}
	for _, in := range []string{"", "APPLE_PAY", "BITCOIN"} {
		_, ok := legacyCode(in, "")
		assert.False(t, ok, in)
	}
	// Every current legacy code maps to REST and back to a code of the
	// same channel (codes of earlier years: see TestReportedChannel).
	for _, c := range channels {
		if c.Historic {
			continue
		}
		back, ok := legacyCode(c.Instrument, c.Swift)
		require.True(t, ok)
		bc, _ := channelByCode(back)
		assert.Equal(t, c.Instrument, bc.Instrument, c.Code)
		assert.Equal(t, c.Swift, bc.Swift, c.Code)
	}
}

func TestStatusFromPayment(t *testing.T) {
	p := &restbackend.Payment{
		ID: 3000000005, ParentID: 3000000001, OrderNumber: "7", State: "PAYMENT_METHOD_CHOSEN", SubState: "_101",
		Amount: 100, Currency: "EUR", PaymentInstrument: "BANK_ACCOUNT",
		Payer:            &restbackend.Payer{BankAccount: &restbackend.BankAccount{BIC: "SUBASKBX"}},
		AdditionalParams: []restbackend.AdditionalParam{{Name: "p2", Value: "two"}, {Name: "x", Value: "ignored"}},
		Recurrence:       &restbackend.Recurrence{RecurrenceCycle: "DAY"},
		Preauthorization: &restbackend.Preauthorization{Requested: true},
	}
	m := testMerchant()
	st := statusFromPayment(p, &m, nil)
	assert.Equal(t, "101", *st.SessionSubState)
	assert.Contains(t, *st.SessionSubStateDesc, "online")
	assert.Equal(t, "sk_vubbank", *st.PaymentChannel)
	assert.Nil(t, st.P1)
	assert.Equal(t, "two", *st.P2)
	assert.Equal(t, int64(3000000001), *st.ParentPaymentSessionID)
	assert.True(t, *st.PreAuthorization)
	assert.True(t, *st.RecurrentPayment)
	assert.Nil(t, st.ProductName, "no session: productName absent")
	assert.Equal(t, int64(testGoID), *st.TargetGoID)
	assert.Equal(t, "payment declined", subStateDesc("5099"))
	assert.Equal(t, "", subStateDesc("42"))
}

func TestGatewayErrorClassification(t *testing.T) {
	refusal409 := &restbackend.APIError{Status: 409, Body: restbackend.ErrorBody{Errors: []restbackend.ErrorItem{
		{Scope: "F", Field: "amount", ErrorCode: 111, ErrorName: "WRONG_FORMAT", Message: "bad"}}}}
	var r *refusal
	require.ErrorAs(t, gatewayError(refusal409), &r)
	assert.Equal(t, "payment gateway refused the request (HTTP 409 Conflict); error 111 WRONG_FORMAT field amount: bad", r.desc)

	for _, err := range []error{
		&restbackend.APIError{Status: 500},
		&restbackend.APIError{Status: 503},
		&restbackend.TransportError{Op: "refund", Timeout: true, Err: errors.New("deadline exceeded at 10.0.0.1")},
		&restbackend.MalformedError{Op: "status", Status: 200, Err: errors.New("bad json")},
		context.Canceled,
	} {
		var f *ServerError
		require.ErrorAs(t, gatewayError(err), &f, "%v", err)
		assert.Equal(t, "payment gateway unavailable", f.Msg)
	}
}

func TestCreatePaymentValidation(t *testing.T) {
	s, err := New(unitConfig(t))
	require.NoError(t, err)
	base := func() *PaymentCommand {
		return &PaymentCommand{TotalPrice: ptr(int64(100)), Currency: "CZK", OrderNumber: "1", ProductName: "x",
			SuccessURL: "https://e/s", FailedURL: "https://e/f"}
	}
	cases := map[string]struct {
		edit func(*PaymentCommand)
		want string
	}{
		"price":      {func(c *PaymentCommand) { c.TotalPrice = ptr(int64(0)) }, "totalPrice must be a positive"},
		"currency":   {func(c *PaymentCommand) { c.Currency = " " }, "missing paymentCommand.currency"},
		"successURL": {func(c *PaymentCommand) { c.SuccessURL = "/s" }, "successURL must be an absolute"},
		"no cycle":   {func(c *PaymentCommand) { c.RecurrentPayment = ptr(true) }, "recurrenceCycle is missing"},
		"bad cycle":  {func(c *PaymentCommand) { c.RecurrentPayment = ptr(true); c.RecurrenceCycle = "YEAR" }, "DAY, WEEK, MONTH or ON_DEMAND"},
		"no period":  {func(c *PaymentCommand) { c.RecurrentPayment = ptr(true); c.RecurrenceCycle = "MONTH" }, "recurrencePeriod is required"},
		"bad date to": {func(c *PaymentCommand) {
			c.RecurrentPayment = ptr(true)
			c.RecurrenceCycle = "ON_DEMAND"
			c.RecurrenceDateTo = "31.12.2027"
		}, "yyyy-MM-dd"},
	}
	for name, tc := range cases {
		c := base()
		tc.edit(c)
		_, r := s.paymentRequest(context.Background(), c, s.merchants.Load().byGoID[testGoID], "tok")
		require.NotNil(t, r, name)
		assert.Contains(t, r.desc, tc.want, name)
	}
	c := base()
	c.RecurrentPayment, c.RecurrenceCycle, c.RecurrencePeriod = ptr(true), "month", ptr(int64(1))
	req, r := s.paymentRequest(context.Background(), c, s.merchants.Load().byGoID[testGoID], "tok")
	require.Nil(t, r)
	assert.Equal(t, &restbackend.Recurrence{RecurrenceCycle: "MONTH", RecurrencePeriod: 1}, req.Recurrence)
	assert.Nil(t, req.Payer, "no channels and no customer: no payer")
}
