package soapenc

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/soapenc")

const testdataDir = "../testdata/soapenc"

// golden compares got with the file at path (relative to testdata/soapenc),
// or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	p := filepath.Join(testdataDir, path)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
		return
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "golden file missing; run go test ./soapenc -update and review it")
	require.Equal(t, string(want), string(got), "differs from %s", p)
}

// dumpCall renders a Call as stable, reviewable text.
func dumpCall(c *Call) string {
	var b strings.Builder
	b.WriteString("operation " + qnameString(c.Operation) + "\n")
	if len(c.Header) > 0 {
		b.WriteString("header\n")
		for _, v := range c.Header {
			dumpValue(&b, v, 1)
		}
	}
	b.WriteString("params " + strconv.Itoa(len(c.Params)) + "\n")
	for _, v := range c.Params {
		dumpValue(&b, v, 1)
	}
	return b.String()
}

var kindNames = map[Kind]string{KindString: "string", KindInt: "int", KindBool: "bool", KindFloat: "float", KindStruct: "struct", KindArray: "array",
	KindBinary: "binary", KindUnknown: "unknown"}

func dumpValue(b *strings.Builder, v *Value, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
	if v == nil {
		b.WriteString("<nil pointer>\n")
		return
	}
	b.WriteString(v.Name + ": " + kindNames[v.Kind])
	if v.Type != (QName{}) {
		b.WriteString(" type=" + qnameString(v.Type))
	}
	if v.Kind == KindArray {
		b.WriteString(" items=" + qnameString(v.ItemType))
	}
	switch {
	case v.Nil:
		b.WriteString(" nil")
	case v.Kind != KindStruct && v.Kind != KindArray:
		b.WriteString(" " + strconv.Quote(v.Text))
		if bv, ok, err := v.Bool(); v.Kind == KindBool && ok && err == nil {
			b.WriteString(" = " + strconv.FormatBool(bv))
		}
	}
	b.WriteString("\n")
	for _, f := range v.Fields {
		dumpValue(b, f, depth+1)
	}
}

func qnameString(q QName) string {
	switch q.Space {
	case NSEncoding:
		return "soapenc:" + q.Local
	case NSXSD:
		return "xsd:" + q.Local
	case "":
		return q.Local
	}
	return "{" + q.Space + "}" + q.Local
}

func captureFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(testdataDir, "captures", "*", "*.xml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// handmadeFiles are requests written by hand after what the legacy
// protocol notes say other clients in the field send (not captures).
func handmadeFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(testdataDir, "handmade", "*", "*.xml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

func TestDecodeCapturesGolden(t *testing.T) {
	for _, f := range append(captureFiles(t), handmadeFiles(t)...) {
		client := filepath.Base(filepath.Dir(f))
		op := strings.TrimSuffix(filepath.Base(f), ".xml")
		t.Run(client+"/"+op, func(t *testing.T) {
			body, err := os.ReadFile(f)
			require.NoError(t, err)
			c, err := Decode(body, "text/xml; charset=utf-8", DefaultLimits())
			require.NoError(t, err)
			require.Equal(t, op, c.Operation.Local)
			require.Equal(t, "http://axis.web.gopay.cz", c.Operation.Space)
			golden(t, filepath.Join("decoded", client, op+".golden"), []byte(dumpCall(c)))
		})
	}
}

func strp(s string) *string { return &s }
func i64p(n int64) *int64   { return &n }
func boolp(b bool) *bool    { return &b }

const serviceNS = "https://testgw.gopay.cz/axis/EPaymentServiceV2"

var (
	typeEPaymentStatus = QName{"urn:AxisEPaymentProvider", "EPaymentStatus"}
	typeEPaymentMethod = QName{"urn:AxisEPaymentProvider", "EPaymentMethod"}
	typeEPaymentResult = QName{"http://gate.gopay.cz/ws", "EPaymentResult"}
)

// paymentStatusReply is an EPaymentStatus-like struct of about 20 fields
// with nils of each type.
func paymentStatusReply() *Response {
	return &Response{Namespace: serviceNS, Operation: "paymentStatus", Return: NewStruct("paymentStatusReturn", typeEPaymentStatus,
		NewString("currency", strp("CZK")),
		NewString("encryptedSignature", strp("6071597cb5bf77b8f9f62ed08dfcf9480318ee69f3ca3facf894ac437ca5b6a6343196a210185b69")),
		NewLong("eshopGoId", nil),
		NewString("failedURL", strp("https://eshop.example/failed?a=1&b=2")),
		NewString("orderNumber", strp("42")),
		NewString("p1", nil),
		NewString("p2", strp("")),
		NewString("p3", strp(`<"quoted"> & 'apos'`)),
		NewString("p4", strp("line1\r\nline2\tend")),
		NewLong("parentPaymentSessionId", nil),
		NewString("paymentChannel", strp("cz_kb")),
		NewLong("paymentSessionId", i64p(3000000001)),
		NewBool("preAuthorization", TypeXSDBool, nil),
		NewString("productName", strp("Objednávka č. 42 – žluťoučký kůň")),
		NewBool("recurrentPayment", TypeBoolean, boolp(false)),
		NewString("result", strp("CALL_COMPLETED")),
		NewString("resultDescription", nil),
		NewString("sessionState", strp("PAID")),
		NewString("sessionSubState", nil),
		NewLong("targetGoId", i64p(8123456789)),
		NewLong("totalPrice", i64p(12900)),
		NewString("successURL", strp("https://eshop.example/success")),
	)}
}

func paymentMethodListReply() *Response {
	method := func(code, name string, offline bool) *Value {
		return NewStruct("item", typeEPaymentMethod,
			NewString("code", strp(code)),
			NewString("logo", strp("https://gw.example/"+code+".png")),
			NewBool("offline", TypeBoolean, boolp(offline)),
			NewString("paymentMethod", strp(name)),
		)
	}
	return &Response{Namespace: serviceNS, Operation: "paymentMethodList", Return: NewArray("paymentMethodListReturn",
		QName{serviceNS, "ArrayOf_tns1_EPaymentMethod"}, typeEPaymentMethod,
		method("eu_gp_u", "Platební karta", false),
		method("cz_kb", "Komerční banka", false),
		method("SUPERCASH", "superCASH", true),
	)}
}

func TestEncodeGolden(t *testing.T) {
	cases := map[string]*Response{
		"touch":             {Namespace: serviceNS, Operation: "touch", Return: NewString("touchReturn", strp("OK"))},
		"empty":             {Namespace: serviceNS, Operation: "voidSomething"},
		"paymentStatus":     paymentStatusReply(),
		"paymentMethodList": paymentMethodListReply(),
		"nils": {Namespace: serviceNS, Operation: "paymentStatusWCust", Return: NewStruct("paymentStatusWCustReturn", QName{"urn:AxisEPaymentProvider", "EPaymentStatusWCust"},
			NewString("string", nil),
			NewLong("long", nil),
			&Value{Name: "int", Type: TypeInt, Kind: KindInt, Nil: true},
			NewBool("soapencBoolean", TypeBoolean, nil),
			NewBool("xsdBoolean", TypeXSDBool, nil),
			&Value{Name: "double", Type: QName{NSXSD, "double"}, Kind: KindFloat, Nil: true},
			&Value{Name: "customerData", Type: QName{"urn:AxisEPaymentProvider", "ECustomerData"}, Kind: KindStruct, Nil: true},
			&Value{Name: "methods", Type: QName{NSEncoding, "Array"}, Kind: KindArray, ItemType: typeEPaymentMethod, Nil: true},
			&Value{Name: "untypedString", Nil: true},
		)},
		"paymentMethodListEmpty": {Namespace: serviceNS, Operation: "paymentMethodList", Return: NewArray("paymentMethodListReturn", QName{NSEncoding, "Array"}, typeEPaymentMethod)},
		"capturePayment": {Namespace: serviceNS, Operation: "capturePayment", Return: NewStruct("capturePaymentReturn", typeEPaymentResult,
			NewString("result", strp("FAILED")), NewString("resultDescription", strp("PAYMENT_NOT_FOUND")), NewLong("paymentSessionId", i64p(1)), NewString("encryptedSignature", nil))},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, EncodeResponse(&buf, r))
			golden(t, filepath.Join("encoded", name+".xml"), buf.Bytes())
			requireRoundTrip(t, buf.Bytes(), r)
		})
	}
}

func TestEncodeFaultGolden(t *testing.T) {
	cases := map[string]*Fault{
		"fault-client":          {Code: FaultClient, String: "value of 'totalPrice' is not a valid long"},
		"fault-server":          {Code: FaultServer, String: "gateway unavailable", Detail: "retry later <soon> & again"},
		"fault-versionmismatch": {Code: FaultVersionMismatch, String: "SOAP 1.2 is not supported; send a SOAP 1.1 envelope"},
		"fault-mustunderstand":  {Code: FaultMustUnderstand, String: "header entry 'Security' was not understood", Actor: "http://schemas.xmlsoap.org/soap/actor/next"},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, EncodeFault(&buf, f))
			golden(t, filepath.Join("encoded", name+".xml"), buf.Bytes())
		})
	}
}

// requireRoundTrip decodes an encoded reply with our own decoder (it reads a
// response element like a call) and checks the values survived.
func requireRoundTrip(t *testing.T, out []byte, r *Response) {
	t.Helper()
	c, err := Decode(out, "", DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, QName{r.Namespace, r.Operation + "Response"}, c.Operation)
	if r.Return == nil {
		require.Empty(t, c.Params)
		return
	}
	require.Len(t, c.Params, 1)
	requireSameValue(t, r.Return, c.Params[0])
}

func requireSameValue(t *testing.T, want, got *Value) {
	t.Helper()
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, typeOf(want), got.Type, want.Name)
	require.Equal(t, want.Kind, got.Kind, want.Name)
	require.Equal(t, want.Nil, got.Nil, want.Name)
	if want.Nil {
		return
	}
	require.Equal(t, want.Text, got.Text, want.Name)
	require.Equal(t, want.ItemType, got.ItemType, want.Name)
	require.Len(t, got.Fields, len(want.Fields), want.Name)
	for i := range want.Fields {
		requireSameValue(t, want.Fields[i], got.Fields[i])
	}
}
