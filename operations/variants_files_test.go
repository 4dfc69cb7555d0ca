package operations

import (
	"bufio"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/charmap"
)

// The request files of testdata/clients/variants (written by make.py beside
// them) carry signatures made the way each client makes them. These tests
// read the signed fields out of the bytes and check that the signature
// pieces accept every file, in the charset the client used, so that the
// files are consistent before the e2e tests replay them.

const (
	variantsDir = "../testdata/clients/variants"
	demoKey     = "DemoSecureKey-0123456789" // the embedded sandbox's demo merchant
)

// encodedStruct reads the struct a call's only part refers to, following
// href references to multiRef values, as the legacy joined-string values.
type encodedStruct struct {
	el  *etree.Element
	ids map[string]*etree.Element
}

func readVariantCall(t *testing.T, name string) (op string, part string, s encodedStruct) {
	t.Helper()
	doc := etree.NewDocument()
	require.NoError(t, doc.ReadFromFile(filepath.Join(variantsDir, name)))
	body := doc.Root().SelectElement("Body")
	require.NotNil(t, body)
	ids := map[string]*etree.Element{}
	for _, e := range body.ChildElements() {
		if id := e.SelectAttrValue("id", ""); id != "" {
			ids[id] = e
		}
	}
	call := body.ChildElements()[0]
	require.Len(t, call.ChildElements(), 1)
	p := call.ChildElements()[0]
	target := ids[strings.TrimPrefix(p.SelectAttrValue("href", ""), "#")]
	require.NotNil(t, target, "part %s refers to no struct", p.Tag)
	return call.Tag, p.Tag, encodedStruct{target, ids}
}

func (s encodedStruct) get(t *testing.T, name string) string {
	t.Helper()
	e := s.el.SelectElement(name)
	require.NotNil(t, e, "no %s", name)
	if href := e.SelectAttrValue("href", ""); href != "" {
		e = s.ids[strings.TrimPrefix(href, "#")]
		require.NotNil(t, e, "dangling href of %s", name)
	}
	if e.SelectAttrValue("xsi:nil", "") == "true" {
		return ""
	}
	switch v := e.Text(); v {
	case "true":
		return "1"
	case "false":
		return "0"
	default:
		return v
	}
}

func (s encodedStruct) command(t *testing.T) PaymentCommandFields {
	return PaymentCommandFields{TargetGoID: s.get(t, "targetGoId"), ProductName: s.get(t, "productName"),
		TotalPrice: s.get(t, "totalPrice"), Currency: s.get(t, "currency"), OrderNumber: s.get(t, "orderNumber"),
		FailedURL: s.get(t, "failedURL"), SuccessURL: s.get(t, "successURL"),
		PreAuthorization: s.get(t, "preAuthorization"), RecurrentPayment: s.get(t, "recurrentPayment"),
		RecurrenceDateTo: s.get(t, "recurrenceDateTo"), RecurrenceCycle: s.get(t, "recurrenceCycle"),
		RecurrencePeriod: s.get(t, "recurrencePeriod"), PaymentChannels: s.get(t, "paymentChannels")}
}

func TestVariantFilesVerify(t *testing.T) {
	t.Run("java24 createPayment signed in windows-1250", func(t *testing.T) {
		op, part, s := readVariantCall(t, "java24-createPayment-cp1250.xml")
		assert.Equal(t, "createPayment", op)
		assert.Equal(t, "paymentCommand", part)
		sig := s.get(t, "encryptedSignature")
		assert.Len(t, sig, 96, "the Java library's extra block")
		cs, ok := VerifyCompat(demoKey, sig, s.command(t).Fields())
		assert.True(t, ok)
		assert.Equal(t, CharsetWindows1250, cs)
	})
	for _, f := range []struct{ file, op string }{
		{"java24-partiallyRefundPayment-request.xml", "partiallyRefundPayment"},
		{"java24-refundPayment-request.xml", "refundPayment"},
	} {
		t.Run(f.file, func(t *testing.T) {
			op, part, s := readVariantCall(t, f.file)
			assert.Equal(t, f.op, op)
			assert.Equal(t, "request", part, "the Java 2.4 stubs' part name")
			assert.Equal(t, "ERefundRequest", strings.TrimPrefix(s.el.SelectAttrValue("xsi:type", ""), "ns2:"))
			assert.True(t, Verify(demoKey, s.get(t, "encryptedSignature"), RefundRequestFields(s.get(t, "targetGoId"),
				s.get(t, "paymentSessionId"), s.get(t, "amount"), s.get(t, "currency"), s.get(t, "description"))...))
		})
	}
	t.Run(".NET refundPayment, refundRequest form", func(t *testing.T) {
		op, part, s := readVariantCall(t, "dotnet-refundPayment-refundRequest.xml")
		assert.Equal(t, "refundPayment", op)
		assert.Equal(t, "refundRequest", part)
		assert.Equal(t, "ERefundRequest", s.el.Tag, "the struct is an element named after its type")
		assert.True(t, Verify(demoKey, s.get(t, "encryptedSignature"), RefundRequestFields(s.get(t, "targetGoId"),
			s.get(t, "paymentSessionId"), s.get(t, "amount"), s.get(t, "currency"), s.get(t, "description"))...))
	})
	t.Run(".NET voidRecurrentPayment", func(t *testing.T) {
		op, part, s := readVariantCall(t, "dotnet-voidRecurrentPayment.xml")
		assert.Equal(t, "voidRecurrentPayment", op)
		assert.Equal(t, "sessionInfo", part)
		assert.True(t, Verify(demoKey, s.get(t, "encryptedSignature"),
			PaymentSessionFields(s.get(t, "targetGoId"), s.get(t, "paymentSessionId"))...))
	})
	t.Run(".NET createPayment, nothing trimmed", func(t *testing.T) {
		_, _, s := readVariantCall(t, "dotnet-createPayment-untrimmed.xml")
		c := s.command(t)
		sig := s.get(t, "encryptedSignature")
		assert.Empty(t, c.PreAuthorization, "unset boolean joins as empty")
		assert.False(t, Verify(demoKey, sig, c.Fields()...), "the trimmed fields are not what .NET signed")
		cs, ok := VerifyCompat(demoKey, sig, c.Fields(), c.Untrimmed())
		assert.True(t, ok)
		assert.Equal(t, CharsetUTF8, cs)
		sel, err := selectChannels(c.PaymentChannels, "", UnmappedRefuse)
		require.NoError(t, err)
		assert.Equal(t, []string{"PAYMENT_CARD", "BANK_ACCOUNT"}, sel.Payer.AllowedPaymentInstruments)
		lang, known := GatewayLang(s.get(t, "lang"), "CS")
		assert.True(t, known)
		assert.Equal(t, "CS", lang)
	})
	for _, f := range []struct {
		file string
		hex  int
	}{{"java24-statement-no-currency.http", 96}, {"dotnet-statement-no-currency.http", 80}} {
		t.Run(f.file, func(t *testing.T) {
			fh, err := os.Open(filepath.Join(variantsDir, f.file))
			require.NoError(t, err)
			defer fh.Close()
			r, err := http.ReadRequest(bufio.NewReader(fh))
			require.NoError(t, err)
			assert.Equal(t, http.MethodGet, r.Method)
			q := r.URL.Query()
			assert.False(t, q.Has("statementRequest.currency"))
			assert.True(t, strings.HasPrefix(q.Get("statementRequest.contentType"), "TYPE_"))
			sig := q.Get("statementRequest.encryptedSignature")
			assert.Len(t, sig, f.hex)
			assert.True(t, Verify(demoKey, sig, StatementRequestFieldsNoCurrency(q.Get("statementRequest.dateFrom"),
				q.Get("statementRequest.dateTo"), q.Get("statementRequest.targetGoId"))...))
		})
	}
}

// The windows-1250 base-integration form: decoded from windows-1250 into
// clean UTF-8 (what the flow must store and send), it verifies in
// windows-1250; the raw bytes as they arrive verify too (today's path).
func TestVariantFileCP1250Form(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(variantsDir, "pay-base-v2-cp1250.form"))
	require.NoError(t, err)
	q, err := url.ParseQuery(string(raw))
	require.NoError(t, err)
	dec := charmap.Windows1250.NewDecoder()
	get := func(name string, decode bool) string {
		v := q.Get("paymentCommand." + name)
		if decode {
			v, err = dec.String(v)
			require.NoError(t, err)
		}
		return v
	}
	for _, decode := range []bool{true, false} {
		f := PaymentCommandFields{TargetGoID: get("targetGoId", decode), ProductName: get("productName", decode),
			TotalPrice: get("totalPrice", decode), Currency: get("currency", decode), OrderNumber: get("orderNumber", decode),
			FailedURL: get("failedURL", decode), SuccessURL: get("successURL", decode), PreAuthorization: "0", RecurrentPayment: "0"}
		cs, ok := VerifyCompat(demoKey, get("encryptedSignature", false), f.Fields())
		assert.True(t, ok, "decoded %v", decode)
		if decode {
			assert.Equal(t, "Objednávka č. 1250 – žluťoučký kůň", f.ProductName)
			assert.Equal(t, CharsetWindows1250, cs)
		} else {
			assert.Equal(t, CharsetUTF8, cs, "raw bytes hash as they are")
		}
	}
	lang, known := GatewayLang(q.Get("paymentCommand.lang"), "EN")
	assert.True(t, known)
	assert.Equal(t, "CS", lang)
}
