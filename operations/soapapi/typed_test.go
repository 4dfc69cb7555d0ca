package soapapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/soapenc"
)

// Clients that type every value themselves (Perl SOAP::Lite by default)
// send text that is not plain ASCII as xsd:base64Binary and numbers as
// whatever numeric type they chose: the bridge reads each by its type.

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// typedCommand is a createPayment in SOAP::Lite's shape: default namespace
// on the call, every member typed; fields overrides the typed elements by
// name (the whole element, e.g. `<totalPrice xsi:type="xsd:double">100.5</totalPrice>`).
func typedCommand(t *testing.T, product string, fields map[string]string) string {
	t.Helper()
	members := []struct{ name, elem string }{
		{"targetGoId", fmt.Sprintf(`<targetGoId xsi:type="xsd:long">%d</targetGoId>`, testGoID)},
		{"productName", `<productName xsi:type="xsd:base64Binary">` + b64(product) + `</productName>`},
		{"totalPrice", `<totalPrice xsi:type="xsd:int">12900</totalPrice>`},
		{"currency", `<currency xsi:type="xsd:string">CZK</currency>`},
		{"orderNumber", `<orderNumber xsi:type="xsd:int">1001</orderNumber>`},
		{"failedURL", `<failedURL xsi:type="xsd:anyURI">http://eshop.example/failed</failedURL>`},
		{"successURL", `<successURL xsi:type="xsd:anyURI">http://eshop.example/success</successURL>`},
		{"preAuthorization", `<preAuthorization xsi:type="xsd:boolean">false</preAuthorization>`},
		{"recurrentPayment", `<recurrentPayment xsi:type="xsd:boolean">false</recurrentPayment>`},
		{"paymentChannels", `<paymentChannels xsi:type="xsd:string">eu_gp_u,cz_kb</paymentChannels>`},
		{"lang", `<lang xsi:type="xsd:string">CS</lang>`},
		{"customerData", `<customerData><firstName xsi:type="xsd:base64Binary">` + b64("Jiří") + `</firstName>` +
			`<lastName xsi:type="xsd:base64Binary">` + b64("Novák") + `</lastName>` +
			`<email xsi:type="xsd:string">jiri@example.cz</email></customerData>`},
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"` +
		` xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:xsd="http://www.w3.org/2001/XMLSchema"` +
		` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" soap:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">` +
		`<soap:Body><createPayment xmlns="http://axis.web.gopay.cz"><paymentCommand>`)
	for _, m := range members {
		if e, ok := fields[m.name]; ok {
			b.WriteString(e)
			continue
		}
		b.WriteString(m.elem)
	}
	b.WriteString(`<encryptedSignature xsi:type="xsd:string">SIG</encryptedSignature></paymentCommand></createPayment></soap:Body></soap:Envelope>`)
	return b.String()
}

// signTyped signs the command as the shop did: over its own (decoded) values.
func signTyped(t *testing.T, doc, product string, price string) string {
	t.Helper()
	sig, err := operations.Sign(testSecureKey, operations.PaymentCommandFields{
		TargetGoID: fmt.Sprint(testGoID), ProductName: product, TotalPrice: price, Currency: "CZK", OrderNumber: "1001",
		FailedURL: "http://eshop.example/failed", SuccessURL: "http://eshop.example/success",
		PreAuthorization: "0", RecurrentPayment: "0", PaymentChannels: "eu_gp_u,cz_kb",
	}.Fields()...)
	require.NoError(t, err)
	return strings.Replace(doc, ">SIG<", ">"+sig+"<", 1)
}

func invokeDoc(t *testing.T, h *harness, doc string) *soapenc.Value {
	t.Helper()
	call, err := soapenc.Decode([]byte(doc), "text/xml; charset=utf-8", soapenc.DefaultLimits())
	require.NoError(t, err)
	resp, err := h.api.Invoke(context.Background(), call)
	require.NoError(t, err, "a typed value is never a fault")
	return resp.Return
}

func TestTypedValuesDecodedBeforeSignatureAndGateway(t *testing.T) {
	const product = "Dárkový poukaz – čaj Šťastná žížala"
	for name, price := range map[string]string{
		"int":            `<totalPrice xsi:type="xsd:int">12900</totalPrice>`,
		"double 12900.0": `<totalPrice xsi:type="xsd:double">12900.0</totalPrice>`,
		"decimal":        `<totalPrice xsi:type="xsd:decimal">12900.00</totalPrice>`,
		"long":           `<totalPrice xsi:type="soapenc:long">12900</totalPrice>`,
	} {
		t.Run(name, func(t *testing.T) {
			h := demoHarness(t, nil)
			doc := signTyped(t, typedCommand(t, product, map[string]string{"totalPrice": price}), product, "12900")
			r := invokeDoc(t, h, doc)
			require.Equal(t, operations.CallCompleted, r.Field("result").Text, r.Field("resultDescription").Text)
			assert.Equal(t, product, r.Field("productName").Text, "the reply carries the decoded text")
			rest := h.rec.String()
			assert.Contains(t, rest, `"first_name": "Jiří"`)
			assert.Contains(t, rest, `"last_name": "Novák"`)
			assert.Contains(t, rest, `"order_description": "`+product+`"`)
			assert.Contains(t, rest, `"amount": 12900,`)
			assert.Contains(t, rest, `"order_number": "1001"`)
			assert.NotContains(t, rest, b64("Jiří"), "never the base64 letters")
			id, _, err := r.Field("paymentSessionId").Int64()
			require.NoError(t, err)
			sess, err := h.st.Session(context.Background(), id)
			require.NoError(t, err)
			assert.Equal(t, product, sess.ProductName)
		})
	}
}

// Bad typed input is an invalid request: CALL_FAILED naming the field and
// what was wrong, signed (the goid is known), nothing sent to the gateway.
func TestTypedValuesRefusedNamingTheField(t *testing.T) {
	const product = "Čaj"
	cp1250 := string([]byte{'J', 'i', 0xF8, 0xED})
	for _, tc := range []struct {
		name   string
		fields map[string]string
		want   string
	}{
		{"base64 that does not decode", map[string]string{"productName": `<productName xsi:type="xsd:base64Binary">Q2F%q</productName>`},
			`paymentCommand.productName is base64Binary that does not decode: "Q2F%q"`},
		{"bytes that are not UTF-8", map[string]string{"customerData": `<customerData><firstName xsi:type="xsd:base64Binary">` + b64(cp1250) + `</firstName></customerData>`},
			`paymentCommand.customerData.firstName is base64Binary whose bytes are not UTF-8 text`},
		{"a fraction of minor units", map[string]string{"totalPrice": `<totalPrice xsi:type="xsd:double">129.5</totalPrice>`},
			`paymentCommand.totalPrice has a fraction: "129.5" is not a whole number (amounts are whole minor units: 10050 for 100.50)`},
		{"an unknown type", map[string]string{"currency": `<currency xmlns:x="urn:x" xsi:type="x:Currency">CZK</currency>`},
			`paymentCommand.currency has xsi:type '{urn:x}Currency', which is not a type this service decodes`},
		{"an unknown XSD type", map[string]string{"lang": `<lang xsi:type="xsd:language2">CS</lang>`},
			`paymentCommand.lang has xsi:type 'xsd:language2', which is not a type this service decodes`},
		{"a value contradicting its type", map[string]string{"targetGoId": `<targetGoId xsi:type="xsd:long">81234x</targetGoId>`},
			`paymentCommand.targetGoId is not a valid long: "81234x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := demoHarness(t, nil)
			warmToken(h)
			h.rec.reset()
			r := invokeDoc(t, h, signTyped(t, typedCommand(t, product, tc.fields), product, "12900"))
			assert.Equal(t, "CALL_FAILED", r.Field("result").Text)
			assert.Equal(t, tc.want, r.Field("resultDescription").Text)
			assert.Equal(t, "(no REST call)\n", h.rec.String())
			if r.Field("targetGoId").Text != "" {
				assert.NotEmpty(t, r.Field("encryptedSignature").Text, "signed: the merchant is known")
			}
		})
	}
}

// A shop that signed the letters it meant, but whose product name reached
// the bridge as base64, verifies: the signature is over the decoded text.
// One signed over the base64 letters does not.
func TestTypedSignatureIsOverDecodedText(t *testing.T) {
	const product = "Šála"
	h := demoHarness(t, nil)
	doc := typedCommand(t, product, nil)
	r := invokeDoc(t, h, signTyped(t, doc, b64(product), "12900"))
	assert.Equal(t, "CALL_FAILED", r.Field("result").Text)
	assert.Contains(t, r.Field("resultDescription").Text, "invalid encryptedSignature")
	r = invokeDoc(t, h, signTyped(t, doc, product, "12900"))
	assert.Equal(t, operations.CallCompleted, r.Field("result").Text, r.Field("resultDescription").Text)
}
