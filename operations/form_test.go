package operations

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPaymentCommandFromForm: every member the base-integration form
// carries, read as sent (numbers and booleans as SOAP reads them), the
// customer only when one of its fields is sent, partnerGoId never.
func TestPaymentCommandFromForm(t *testing.T) {
	form := url.Values{}
	for k, v := range map[string]string{
		"targetGoId": "+8123456789", "productName": " Kniha ", "totalPrice": "12900", "currency": "CZK",
		"orderNumber": "42", "failedURL": "https://shop/f", "successURL": "https://shop/s", "paymentChannels": "eu_gp_u",
		"defaultPaymentChannel": "eu_gp_u", "encryptedSignature": "ab", "preAuthorization": "TRUE", "recurrentPayment": "0",
		"recurrenceDateTo": "2030-01-01", "recurrenceCycle": "MONTH", "recurrencePeriod": " 1 ", "lang": "cs",
		"p1": "a", "p2": "b", "p3": "c", "p4": "d", "partnerGoId": "x", "customerData.email": "jan@example.cz",
	} {
		form.Set("paymentCommand."+k, v)
	}
	assert.Equal(t, &PaymentCommand{
		TargetGoID: ptr(int64(8123456789)), ProductName: " Kniha ", TotalPrice: ptr(int64(12900)), Currency: "CZK",
		OrderNumber: "42", FailedURL: "https://shop/f", SuccessURL: "https://shop/s", PaymentChannels: "eu_gp_u",
		DefaultPaymentChannel: "eu_gp_u", EncryptedSignature: "ab", PreAuthorization: ptr(true), RecurrentPayment: ptr(false),
		RecurrenceDateTo: "2030-01-01", RecurrenceCycle: "MONTH", RecurrencePeriod: ptr(int64(1)), Lang: "cs",
		P1: "a", P2: "b", P3: "c", P4: "d", CustomerData: &CustomerData{Email: "jan@example.cz"},
	}, PaymentCommandFromForm(form))

	c := PaymentCommandFromForm(url.Values{"paymentCommand.totalPrice": {"12.5"}, "paymentCommand.preAuthorization": {"yes"}})
	assert.Nil(t, c.CustomerData)
	assert.Nil(t, c.TotalPrice)
	assert.Equal(t, "paymentCommand.preAuthorization is not a boolean", c.Invalid, "the first in the table's order")
}
