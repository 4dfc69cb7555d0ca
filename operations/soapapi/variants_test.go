package soapapi

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/soapenc"
)

// The request files of testdata/clients/variants: requests of the Java 2.4
// stubs and the .NET proxy, signed for the demo merchant (testSecureKey)
// and naming payment 3000000001, the first the sandbox creates.
const variantsDir = "../../testdata/clients/variants"

// demoHarness is a harness whose merchant has the demo key of the variant
// files.
func demoHarness(t *testing.T, edit func(*operations.Merchant)) *harness {
	return newHarnessWith(t, func(c *operations.Config) {
		m := testMerchant()
		if edit != nil {
			edit(&m)
		}
		c.Merchants = []operations.Merchant{m}
	})
}

// createDemo creates a payment of 129.00 CZK for the demo merchant through
// the core; recurrent makes it an on-demand recurring payment.
func createDemo(t *testing.T, h *harness, recurrent bool) int64 {
	t.Helper()
	goid, price, no := int64(testGoID), int64(12900), false
	c := &operations.PaymentCommand{TargetGoID: &goid, ProductName: "Objednávka 42", TotalPrice: &price, Currency: "CZK",
		OrderNumber: "variant-1", FailedURL: "https://eshop.example/failed", SuccessURL: "https://eshop.example/success",
		PreAuthorization: &no, RecurrentPayment: &recurrent}
	if recurrent {
		c.RecurrenceCycle = "ON_DEMAND"
	}
	sig, err := operations.Sign(testSecureKey, c.SignatureFields()...)
	require.NoError(t, err)
	c.EncryptedSignature = sig
	st, err := invoke[*operations.PaymentStatus](t, h.svc, "createPayment", c)
	require.NoError(t, err)
	require.Equal(t, operations.CallCompleted, st.Result, st.ResultDescription)
	return *st.PaymentSessionID
}

// Every refund form refunds 5.00 of the paid payment: the part named
// "request" (Java 2.4, partiallyRefundPayment and refundPayment, all in
// http://gate.gopay.cz/ws) and the .NET struct sent beside the call and
// referenced by href. The overload of refundPayment is told by the part's
// type, not its name.
func TestVariantRefunds(t *testing.T) {
	for _, file := range []string{"java24-partiallyRefundPayment-request.xml", "java24-refundPayment-request.xml",
		"dotnet-refundPayment-refundRequest.xml"} {
		t.Run(file, func(t *testing.T) {
			h := demoHarness(t, nil)
			id := createDemo(t, h, false)
			require.Equal(t, int64(3000000001), id)
			h.act(id, payCard)
			h.rec.reset()
			resp, err := h.api.Invoke(context.Background(), decodeFile(t, filepath.Join(variantsDir, file)))
			require.NoError(t, err)
			r := resp.Return
			assert.Equal(t, operations.Finished, r.Field("result").Text, r.Field("resultDescription").Text)
			assert.True(t, operations.Verify(testSecureKey, r.Field("encryptedSignature").Text,
				operations.PaymentResultFields("3000000001", operations.Finished)...))
			assert.Contains(t, h.rec.String(), "amount=500", "a partial refund of 5.00, not the whole payment")
			p, err := h.gw.PaymentStatus(context.Background(), testCredentials(), id)
			require.NoError(t, err)
			assert.Equal(t, "PARTIALLY_REFUNDED", p.State)
		})
	}
}

// The overload is chosen by type or, untyped, by members, whatever the
// part is called.
func TestChooseOverloadByTypeAndMembers(t *testing.T) {
	h := demoHarness(t, nil)
	bs := h.api.ops["refundPayment"]
	require.Len(t, bs, 2)
	cases := []struct{ xml, want string }{
		{`<sessionInfo xsi:type="ns:ERefundRequest" xmlns:ns="http://gate.gopay.cz/ws"><paymentSessionId>1</paymentSessionId></sessionInfo>`, "refundRequest"},
		{`<refundRequest xsi:type="ns:EPaymentSessionInfo" xmlns:ns="urn:x"><paymentSessionId>1</paymentSessionId></refundRequest>`, "sessionInfo"},
		{`<request><amount>5</amount><paymentSessionId>1</paymentSessionId></request>`, "refundRequest"},
		{`<request><paymentSessionId>1</paymentSessionId><targetGoId>2</targetGoId></request>`, "sessionInfo"},
	}
	for _, tc := range cases {
		env := `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body><ns1:refundPayment xmlns:ns1="http://gate.gopay.cz/ws">` +
			tc.xml + `</ns1:refundPayment></soapenv:Body></soapenv:Envelope>`
		call := decodeString(t, env)
		got := chooseOverload(bs, inputPart(call, bs))
		assert.Equal(t, tc.want, got.op.Param.Name, tc.xml)
	}
}

func decodeString(t *testing.T, s string) *soapenc.Call {
	t.Helper()
	call, err := soapenc.Decode([]byte(strings.TrimSpace(s)), "text/xml; charset=utf-8", soapenc.DefaultLimits())
	require.NoError(t, err)
	return call
}

// voidRecurrentPayment from the .NET proxy (href form): the reply is
// signed with the scheme the merchant's setting names, paymentResult by
// default (PHP), paymentSession for a .NET shop.
func TestVariantVoidRecurrentReplyScheme(t *testing.T) {
	for _, scheme := range []string{"", operations.ReplyPaymentSession} {
		t.Run("scheme="+scheme, func(t *testing.T) {
			h := demoHarness(t, func(m *operations.Merchant) { m.VoidRecurrentReply = scheme })
			id := createDemo(t, h, true)
			require.Equal(t, int64(3000000001), id)
			h.act(id, payCard)
			resp, err := h.api.Invoke(context.Background(), decodeFile(t, filepath.Join(variantsDir, "dotnet-voidRecurrentPayment.xml")))
			require.NoError(t, err)
			r := resp.Return
			require.Equal(t, operations.Finished, r.Field("result").Text, r.Field("resultDescription").Text)
			sig := r.Field("encryptedSignature").Text
			asResult := operations.Verify(testSecureKey, sig, operations.PaymentResultFields("3000000001", operations.Finished)...)
			asSession := operations.Verify(testSecureKey, sig, operations.PaymentSessionFields("8123456789", "3000000001")...)
			assert.Equal(t, scheme == "", asResult, "paymentResult scheme")
			assert.Equal(t, scheme != "", asSession, "paymentSession scheme")
			p, err := h.gw.PaymentStatus(context.Background(), testCredentials(), id)
			require.NoError(t, err)
			require.NotNil(t, p.Recurrence)
			assert.Equal(t, "STOPPED", p.Recurrence.RecurrenceState)
		})
	}
}

// createPayment of the .NET proxy (signed over untrimmed values, channels
// joined with ", ", lang "cs", countryCode SVK, customer by href) and of the
// Java stubs on a Czech Windows server (signed over windows-1250 bytes,
// 96 hex): both create the payment with clean values.
func TestVariantCreatePayments(t *testing.T) {
	cases := []struct {
		file, product, order, country string
	}{
		{"dotnet-createPayment-untrimmed.xml", "Objednávka 42", "net-42", "SVK"},
		{"java24-createPayment-cp1250.xml", "Objednávka č. 42 – žluťoučký kůň", "java-1250-42", "CZE"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			h := demoHarness(t, nil)
			resp, err := h.api.Invoke(context.Background(), decodeFile(t, filepath.Join(variantsDir, tc.file)))
			require.NoError(t, err)
			r := resp.Return
			require.Equal(t, operations.CallCompleted, r.Field("result").Text, r.Field("resultDescription").Text)
			rest := h.rec.String()
			assert.Contains(t, rest, `"lang": "CS"`)
			assert.Contains(t, rest, `"country_code": "`+tc.country+`"`)
			assert.Contains(t, rest, `"PAYMENT_CARD"`)
			assert.Contains(t, rest, `"KOMBCZPP"`)
			p, err := h.gw.PaymentStatus(context.Background(), testCredentials(), 3000000001)
			require.NoError(t, err)
			assert.Equal(t, tc.order, p.OrderNumber)
			assert.Contains(t, rest, `"name": "`+tc.product+`"`)
		})
	}
}

// createBuyer signed as the Java 2.4 library signs it (with buyerUsername,
// a member beyond the WSDL): still FAILED, as REST has no buyers, but a
// wrong signature is named as such.
func TestCreateBuyerSignature(t *testing.T) {
	h := demoHarness(t, nil)
	sig, err := operations.Sign(testSecureKey, operations.CreateBuyerFields("8123456789", "jan.novak", "jan@example.cz")...)
	require.NoError(t, err)
	call := func(user, sig string) *soapenc.Value {
		env := `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>` +
			`<ns1:createBuyer xmlns:ns1="http://gate.gopay.cz/ws"><request xsi:type="ns1:EBuyerCreate"><buyerEmail>jan@example.cz</buyerEmail>` +
			`<buyerUsername>` + user + `</buyerUsername><encryptedSignature>` + sig + `</encryptedSignature><eshopGoId>8123456789</eshopGoId></request>` +
			`</ns1:createBuyer></soapenv:Body></soapenv:Envelope>`
		resp, err := h.api.Invoke(context.Background(), decodeString(t, env))
		require.NoError(t, err)
		return resp.Return
	}
	r := call("jan.novak", sig)
	assert.Equal(t, operations.Failed, r.Field("result").Text)
	assert.Equal(t, "createBuyer is not supported: the payment gateway's REST interface has no buyer accounts", r.Field("resultDescription").Text)
	assert.True(t, r.Field("encryptedSignature").IsAbsent(), "no reply scheme is published")
	assert.Equal(t, "(no REST call)\n", h.rec.String())

	r = call("someone.else", sig)
	assert.Equal(t, operations.Failed, r.Field("result").Text)
	assert.Contains(t, r.Field("resultDescription").Text, "invalid encryptedSignature of buyerCreate")
}
