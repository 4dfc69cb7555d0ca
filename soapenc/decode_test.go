package soapenc

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/charmap"
)

// envelope wraps body entries in a SOAP 1.1 envelope with the usual prefixes.
func envelope(header, body string) string {
	h := ""
	if header != "" {
		h = "<soapenv:Header>" + header + "</soapenv:Header>"
	}
	return `<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"` +
		` xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"` +
		` xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:ns2="urn:AxisEPaymentProvider">` +
		h + "<soapenv:Body>" + body + "</soapenv:Body></soapenv:Envelope>"
}

// call wraps parts in an Axis-style call element of operation op.
func call(op, parts string) string {
	return `<ns1:` + op + ` soapenv:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/" xmlns:ns1="http://axis.web.gopay.cz">` + parts + `</ns1:` + op + `>`
}

func mustDecode(t *testing.T, doc string) *Call {
	t.Helper()
	c, err := Decode([]byte(doc), "text/xml; charset=utf-8", DefaultLimits())
	require.NoError(t, err)
	return c
}

func requireFault(t *testing.T, err error, code, contains string) *Fault {
	t.Helper()
	require.Error(t, err)
	f, ok := err.(*Fault)
	require.True(t, ok, "error is %T, want *Fault", err)
	require.Equal(t, code, f.Code, f.String)
	require.Contains(t, f.String, contains)
	for _, bad := range []string{"etree", ".go", "xml:", "goroutine"} {
		require.NotContains(t, f.String, bad, "fault leaks internals")
	}
	require.Less(t, len(f.String), 200, "fault string too long")
	return f
}

func decodeFault(t *testing.T, doc, code, contains string) *Fault {
	t.Helper()
	_, err := Decode([]byte(doc), "text/xml; charset=utf-8", DefaultLimits())
	return requireFault(t, err, code, contains)
}

func TestDecodeBooleansAnyCase(t *testing.T) {
	c := mustDecode(t, envelope("", call("op",
		`<a xsi:type="xsd:boolean">True</a><b xsi:type="soapenc:boolean">FALSE</b><c xsi:type="xsd:boolean">1</c><d xsi:type="xsd:boolean"> 0 </d><e xsi:type="xsd:boolean"/>`)))
	want := []struct {
		b, ok bool
	}{{true, true}, {false, true}, {true, true}, {false, true}, {false, false}}
	require.Len(t, c.Params, len(want))
	for i, w := range want {
		p := c.Params[i]
		require.Equal(t, KindBool, p.Kind)
		b, ok, err := p.Bool()
		require.NoError(t, err)
		require.Equal(t, w.ok, ok, p.Name)
		require.Equal(t, w.b, b, p.Name)
	}
	require.True(t, c.Param("e").Nil, "empty boolean means absent")
}

func TestDecodeEmptyNumericIsAbsent(t *testing.T) {
	c := mustDecode(t, envelope("", call("op",
		`<a xsi:type="xsd:long"/><b xsi:type="soapenc:long">  </b><c xsi:type="xsd:double"></c><d xsi:type="soapenc:string"/><e/>`)))
	for _, n := range []string{"a", "b", "c"} {
		require.True(t, c.Param(n).Nil, n)
		require.True(t, c.Param(n).IsAbsent(), n)
	}
	require.Equal(t, KindInt, c.Param("a").Kind)
	require.Equal(t, KindFloat, c.Param("c").Kind)
	s, ok := c.Param("d").String()
	require.True(t, ok, "an empty string is a value, not absent")
	require.Equal(t, "", s)
	s, ok = c.Param("e").String()
	require.True(t, ok)
	require.Equal(t, "", s)
}

func TestDecodeXSDAndSOAPENCTypes(t *testing.T) {
	c := mustDecode(t, envelope("", call("op",
		`<a xsi:type="xsd:long">-5</a><b xsi:type="soapenc:long">+7</b><c xsi:type="xsd:int">3</c><d xsi:type="xsd:unsignedByte">255</d>`+
			`<e xsi:type="xsd:decimal">12.50</e><f xsi:type="soapenc:double">1e3</f><g xsi:type="xsd:float">-INF</g>`+
			`<h xsi:type="xsd:string">x</h><i xsi:type="xsd:dateTime">2024-01-02T03:04:05Z</i><j xsi:type="ns2:Currency">CZK</j><soapenc:int>9</soapenc:int>`)))
	kinds := map[string]Kind{"a": KindInt, "b": KindInt, "c": KindInt, "d": KindInt, "e": KindFloat, "f": KindFloat, "g": KindFloat,
		"h": KindString, "i": KindString, "j": KindUnknown, "int": KindInt}
	for n, k := range kinds {
		require.Equal(t, k, c.Param(n).Kind, n)
	}
	require.Equal(t, QName{NSXSD, "long"}, c.Param("a").Type)
	require.Equal(t, TypeLong, c.Param("b").Type)
	require.Equal(t, TypeInt, c.Param("int").Type, "element named after its SOAP-ENC type")
	n, ok, err := c.Param("b").Int64()
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 7, n)
	require.Equal(t, "CZK", c.Param("j").Text, "the text of an unknown type is kept")
	_, _, err = c.Param("j").Str()
	require.EqualError(t, err, `value of 'j' has xsi:type '{urn:AxisEPaymentProvider}Currency', which is not a type this service decodes`)
}

// A value contradicting its own xsi:type decodes (the call may never read
// it); the accessor that reads it reports it, naming the element.
func TestDecodeBadNumericNamesElement(t *testing.T) {
	for _, tc := range []struct{ part, name, problem string }{
		{`<totalPrice xsi:type="soapenc:long">12.5</totalPrice>`, "totalPrice", `is not a valid long: "12.5"`},
		{`<totalPrice xsi:type="xsd:long">9223372036854775808</totalPrice>`, "totalPrice", `is not a valid long`},
		{`<period xsi:type="soapenc:int">4294967296</period>`, "period", `is not a valid int`},
		{`<flag xsi:type="xsd:boolean">yes</flag>`, "flag", `is not a valid boolean: "yes"`},
		{`<amount xsi:type="xsd:double">1,5</amount>`, "amount", `is not a valid double`},
		{`<amount xsi:type="xsd:decimal">1e5</amount>`, "amount", `is not a valid decimal`},
		{`<u xsi:type="xsd:unsignedInt">-1</u>`, "u", `is not a valid unsignedInt`},
		{`<v xsi:type="xsd:long">0x10</v>`, "v", `is not a valid long`},
	} {
		c := mustDecode(t, envelope("", call("op", tc.part)))
		v := c.Params[0]
		var err error
		if v.Kind == KindBool {
			_, _, err = v.Bool()
		} else {
			_, _, err = v.Int64()
		}
		require.ErrorContains(t, err, "value of '"+tc.name+"' "+tc.problem)
		_, _, err = v.Str()
		require.ErrorContains(t, err, tc.problem, "read as text it still contradicts its type")
	}
	// Inside a multiRef, the error names the accessor that referenced it.
	c := mustDecode(t, envelope("", call("op", `<totalPrice href="#id0"/>`)+`<multiRef id="id0" soapenc:root="0" xsi:type="soapenc:long">abc</multiRef>`))
	_, _, err := c.Param("totalPrice").Int64()
	require.ErrorContains(t, err, "value of 'totalPrice' is not a valid long")
}

func TestDecodeHeaderKeptAndMustUnderstand(t *testing.T) {
	c := mustDecode(t, envelope(`<h:Trace xmlns:h="urn:x" soapenv:mustUnderstand="0">abc</h:Trace><h:Other xmlns:h="urn:x" soapenv:actor="urn:someone-else" soapenv:mustUnderstand="1"/>`,
		call("touch", "")))
	require.Len(t, c.Header, 2)
	require.Equal(t, "Trace", c.Header[0].Name)
	require.Equal(t, "abc", c.Header[0].Text)
	require.Equal(t, "touch", c.Operation.Local)

	for _, mu := range []string{"1", "true", " TRUE "} {
		f := decodeFault(t, envelope(`<wsse:Security xmlns:wsse="urn:sec" soapenv:mustUnderstand="`+mu+`"><x/></wsse:Security>`, call("touch", "")),
			FaultMustUnderstand, "'Security'")
		require.NotEmpty(t, f.String)
	}
}

func TestDecodeArbitraryPrefixesAndDefaultNamespace(t *testing.T) {
	doc := `<E:Envelope xmlns:E="http://schemas.xmlsoap.org/soap/envelope/" xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns:s="http://www.w3.org/2001/XMLSchema">` +
		`<E:Body><op xmlns="http://axis.web.gopay.cz"><sessionInfo xmlns:T="urn:AxisEPaymentProvider" i:type="T:EPaymentSessionInfo">` +
		`<paymentSessionId i:type="s:long">3000000001</paymentSessionId><sig i:type="s:string" i:nil="1"/></sessionInfo></op></E:Body></E:Envelope>`
	c := mustDecode(t, doc)
	require.Equal(t, QName{"http://axis.web.gopay.cz", "op"}, c.Operation)
	si := c.Param("sessionInfo")
	require.Equal(t, QName{"urn:AxisEPaymentProvider", "EPaymentSessionInfo"}, si.Type)
	require.Equal(t, KindStruct, si.Kind)
	n, ok, err := si.Field("paymentSessionId").Int64()
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 3000000001, n)
	require.True(t, si.Field("sig").Nil)

	// Envelope in the default namespace, no prefixes at all.
	doc = `<Envelope xmlns="http://schemas.xmlsoap.org/soap/envelope/"><Body><touch xmlns="urn:op"/></Body></Envelope>`
	c = mustDecode(t, doc)
	require.Equal(t, QName{"urn:op", "touch"}, c.Operation)
}

func TestDecodeEncodingStyleOnBodyChildOnly(t *testing.T) {
	doc := `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>` +
		`<m:touch xmlns:m="http://axis.web.gopay.cz" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><x s:encodingStyle="">1</x></m:touch></s:Body></s:Envelope>`
	c := mustDecode(t, doc)
	require.Equal(t, "touch", c.Operation.Local)
	require.Equal(t, "1", c.Param("x").Text)
}

func TestDecodeNestedAndSharedHref(t *testing.T) {
	doc := envelope("", call("op", `<a href="#id0"/><b href="#id2"/>`)+
		`<multiRef id="id0" soapenc:root="0" xsi:type="ns2:Outer"><inner href="#id1"/><flag1 href="#id2"/><flag2 href="#id2"/></multiRef>`+
		`<multiRef id="id1" soapenc:root="0" xsi:type="ns2:Inner"><deep href="#id3"/></multiRef>`+
		`<multiRef id="id3" soapenc:root="0" xsi:type="soapenc:long">77</multiRef>`+
		`<multiRef id="id2" soapenc:root="0" xsi:type="soapenc:boolean">true</multiRef>`)
	c := mustDecode(t, doc)
	a := c.Param("a")
	require.Equal(t, KindStruct, a.Kind)
	require.Equal(t, "77", a.Field("inner").Field("deep").Text)
	require.Equal(t, KindInt, a.Field("inner").Field("deep").Kind)
	f1, f2, b := a.Field("flag1"), a.Field("flag2"), c.Param("b")
	for _, v := range []*Value{f1, f2, b} {
		got, ok, err := v.Bool()
		require.NoError(t, err)
		require.True(t, ok && got, v.Name)
	}
	require.Equal(t, "flag1", f1.Name, "a shared value takes the accessor's name")
	require.Equal(t, "flag2", f2.Name)
	require.NotSame(t, f1, f2, "each reference gets its own copy")
	require.Len(t, c.Params, 2, "multiRefs are not parts")
}

func TestDecodeHrefToNonMultiRefElement(t *testing.T) {
	// An id may sit on any element in the Body, even inside the call.
	doc := envelope("", call("op", `<a id="x" xsi:type="xsd:string">shared</a><b href="#x"/>`))
	c := mustDecode(t, doc)
	require.Equal(t, "shared", c.Param("a").Text)
	require.Equal(t, "shared", c.Param("b").Text)
	// root="0" elements before the call are skipped when finding the call.
	doc = envelope("", `<v id="v" soapenc:root="0" xsi:type="xsd:long">5</v>`+call("op", `<n href="#v"/>`))
	c = mustDecode(t, doc)
	require.Equal(t, "op", c.Operation.Local)
	require.Equal(t, "5", c.Param("n").Text)
}

func TestDecodeArrayOfStructs(t *testing.T) {
	doc := envelope("", call("op",
		`<methods xsi:type="soapenc:Array" soapenc:arrayType="ns2:EPaymentMethod[2]">`+
			`<item xsi:type="ns2:EPaymentMethod"><code xsi:type="xsd:string">cz_kb</code><offline xsi:type="xsd:boolean">false</offline></item>`+
			`<item href="#m2"/></methods>`+
			`<ids soapenc:arrayType="xsd:long[3]"><n>1</n><n>2</n><n xsi:nil="true"/></ids>`)+
		`<multiRef id="m2" soapenc:root="0"><code xsi:type="xsd:string">SUPERCASH</code><offline xsi:type="xsd:boolean">true</offline></multiRef>`)
	c := mustDecode(t, doc)
	m := c.Param("methods")
	require.Equal(t, KindArray, m.Kind)
	require.Equal(t, QName{NSEncoding, "Array"}, m.Type)
	require.Equal(t, typeEPaymentMethod, m.ItemType)
	require.Len(t, m.Fields, 2)
	require.Equal(t, "cz_kb", m.Fields[0].Field("code").Text)
	require.Equal(t, "SUPERCASH", m.Fields[1].Field("code").Text)
	require.Equal(t, typeEPaymentMethod, m.Fields[1].Type, "an untyped item takes the arrayType")
	require.Equal(t, KindStruct, m.Fields[1].Kind)

	ids := c.Param("ids")
	require.Equal(t, KindArray, ids.Kind)
	require.Len(t, ids.Fields, 3)
	require.Equal(t, KindInt, ids.Fields[0].Kind, "untyped items read as the item type")
	require.True(t, ids.Fields[2].Nil)
	bad := mustDecode(t, envelope("", call("op", `<ids soapenc:arrayType="xsd:long[2]"><n>1</n><n>x</n></ids>`)))
	_, _, err := bad.Param("ids").Fields[1].Int64()
	require.ErrorContains(t, err, "value of 'n' is not a valid long")
	decodeFault(t, envelope("", call("op", `<ids soapenc:arrayType="xsd:long"/>`)), FaultClient, "arrayType")
}

func TestDecodeCharsets(t *testing.T) {
	text := "Příliš žluťoučký kůň úpěl ďábelské ódy"
	for _, tc := range []struct {
		name, decl, contentType string
		enc                     *charmap.Charmap
	}{
		{"iso-8859-2 declared", "ISO-8859-2", "text/xml", charmap.ISO8859_2},
		{"windows-1250 declared", "windows-1250", "text/xml; charset=utf-8", charmap.Windows1250},
		{"windows-1250 in content type", "", `text/xml; charset="windows-1250"`, charmap.Windows1250},
		{"content type wins over declaration", "UTF-8", "text/xml; charset=ISO-8859-2", charmap.ISO8859_2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := envelope("", call("op", `<productName xsi:type="xsd:string">`+text+`</productName>`))
			doc = strings.Replace(doc, `encoding="UTF-8"`, `encoding="`+tc.decl+`"`, 1)
			if tc.decl == "" {
				doc = strings.Replace(doc, ` encoding="UTF-8"`, "", 1)
				doc = strings.Replace(doc, ` encoding=""`, "", 1)
			}
			raw, err := tc.enc.NewEncoder().Bytes([]byte(doc))
			require.NoError(t, err)
			c, err := Decode(raw, tc.contentType, DefaultLimits())
			require.NoError(t, err)
			require.Equal(t, text, c.Param("productName").Text)
		})
	}
	_, err := Decode([]byte(strings.Replace(envelope("", call("op", "")), "UTF-8", "x-no-such-charset", 1)), "", DefaultLimits())
	requireFault(t, err, FaultClient, "unsupported charset")
}

// --- hostile input ---

func TestHostileOversize(t *testing.T) {
	doc := envelope("", call("op", `<a>`+strings.Repeat("x", 2000)+`</a>`))
	_, err := Decode([]byte(doc), "text/xml", Limits{MaxBytes: 1000})
	requireFault(t, err, FaultClient, "request too large")
}

func TestHostileDepth(t *testing.T) {
	deep := strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100)
	decodeFault(t, envelope("", call("op", deep)), FaultClient, "nested too deeply")
	// Just inside the parser's limit, but href chains make the value tree deeper.
	var b strings.Builder
	b.WriteString(call("op", `<a href="#r0"/>`))
	for i := 0; i < 80; i++ {
		fmt.Fprintf(&b, `<multiRef id="r%d" soapenc:root="0"><n href="#r%d"/></multiRef>`, i, i+1)
	}
	b.WriteString(`<multiRef id="r80" soapenc:root="0">end</multiRef>`)
	decodeFault(t, envelope("", b.String()), FaultClient, "nested too deeply")
}

func TestHostileTooManyIDs(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, `<multiRef id="id%d" soapenc:root="0">x</multiRef>`, i)
	}
	_, err := Decode([]byte(envelope("", call("op", "")+b.String())), "", Limits{MaxRefs: 10})
	requireFault(t, err, FaultClient, "too many multi-reference")
}

// Many tiny elements cost the parser far more than their bytes (about 200
// bytes of memory per byte of "<p>x</p>"): the element count is capped
// before parsing.
func TestHostileTooManyElements(t *testing.T) {
	parts := strings.Repeat("<p>x</p>", 20000)
	decodeFault(t, envelope("", call("op", parts)), FaultClient, "too many elements")
	_, err := Decode([]byte(envelope("", call("op", strings.Repeat("<p>x</p>", 20)))), "", Limits{MaxElements: 10})
	requireFault(t, err, FaultClient, "too many elements")
	c, err := Decode([]byte(envelope("", call("op", strings.Repeat("<p>x</p>", 20)))), "", Limits{MaxElements: 30})
	require.NoError(t, err)
	require.Len(t, c.Params, 20)
}

func TestHostileReferenceCycles(t *testing.T) {
	decodeFault(t, envelope("", call("op", `<a href="#id0"/>`)+
		`<multiRef id="id0" soapenc:root="0"><b href="#id1"/></multiRef><multiRef id="id1" soapenc:root="0"><c href="#id0"/></multiRef>`),
		FaultClient, "reference cycle")
	decodeFault(t, envelope("", call("op", `<a href="#self"/>`)+`<multiRef id="self" soapenc:root="0"><b href="#self"/></multiRef>`),
		FaultClient, "reference cycle")
	// A part referencing its own ancestor inside the call.
	decodeFault(t, envelope("", call("op", `<a id="p"><b href="#p"/></a>`)), FaultClient, "reference cycle")
}

// billionLaughs builds levels of multiRefs each referencing the next one
// fan times: fan^levels values if expanded.
func billionLaughs(levels, fan int) string {
	var b strings.Builder
	b.WriteString(call("op", `<a href="#l0"/>`))
	for l := 0; l < levels; l++ {
		fmt.Fprintf(&b, `<multiRef id="l%d" soapenc:root="0">`, l)
		for i := 0; i < fan; i++ {
			fmt.Fprintf(&b, `<x href="#l%d"/>`, l+1)
		}
		b.WriteString(`</multiRef>`)
	}
	fmt.Fprintf(&b, `<multiRef id="l%d" soapenc:root="0" xsi:type="xsd:string">lol</multiRef>`, levels)
	return envelope("", b.String())
}

func TestHostileBillionLaughs(t *testing.T) {
	f := decodeFault(t, billionLaughs(9, 10), FaultClient, "too many values")
	require.NotNil(t, f)
	// A small, legitimate amount of sharing stays within the budget.
	c := mustDecode(t, billionLaughs(2, 10))
	require.Len(t, c.Param("a").Fields, 10)
	require.LessOrEqual(t, c.nodes, c.budget)
}

func TestHostileDoctypeAndEntities(t *testing.T) {
	xxe := `<?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>` +
		strings.TrimPrefix(envelope("", call("op", `<a>&xxe;</a>`)), `<?xml version="1.0" encoding="UTF-8"?>`)
	decodeFault(t, xxe, FaultClient, "DOCTYPE")
	lol := `<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>` + envelope("", call("op", `<a>&lol2;</a>`))
	decodeFault(t, lol, FaultClient, "")
	// A declaration hidden inside the envelope.
	decodeFault(t, envelope("", call("op", `<!ENTITY x "y"><a/>`)), FaultClient, "not allowed")
	// An undeclared entity is not well-formed.
	decodeFault(t, envelope("", call("op", `<a>&nbsp;</a>`)), FaultClient, "not well-formed")
}

func TestHostileInvalidUTF8(t *testing.T) {
	decodeFault(t, envelope("", call("op", "<a>\xff\xfe</a>")), FaultClient, "UTF-8")
	decodeFault(t, envelope("", call("op", "<a>\x01</a>")), FaultClient, "not well-formed")
}

func TestHostileEnvelopeShape(t *testing.T) {
	for _, tc := range []struct{ name, doc, code, msg string }{
		{"soap12", `<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><touch/></e:Body></e:Envelope>`, FaultVersionMismatch, "SOAP 1.2"},
		{"other ns", `<e:Envelope xmlns:e="urn:other"><e:Body/></e:Envelope>`, FaultVersionMismatch, "namespace"},
		{"not an envelope", `<html><body/></html>`, FaultClient, "not a SOAP envelope"},
		{"undeclared prefix", `<soapenv:Envelope><soapenv:Body/></soapenv:Envelope>`, FaultClient, "not a SOAP envelope"},
		{"not well-formed", envelope("", call("op", "<a></b>")), FaultClient, "not well-formed"},
		{"truncated", envelope("", call("op", "<a>"))[:120], FaultClient, "not well-formed"},
		{"garbage", "not xml at all", FaultClient, "not well-formed"},
		{"empty", "", FaultClient, "no root element"},
		{"two roots", envelope("", call("op", "")) + "<x/>", FaultClient, "more than one root"},
		{"missing body", strings.Replace(strings.Replace(envelope("", ""), "<soapenv:Body>", "", 1), "</soapenv:Body>", "", 1), FaultClient, "Body is missing"},
		{"empty body", envelope("", ""), FaultClient, "Body is empty"},
		{"only multiRefs", envelope("", `<multiRef id="a" soapenc:root="0">x</multiRef>`), FaultClient, "no RPC call"},
		{"unresolved href", envelope("", call("op", `<a href="#nope"/>`)), FaultClient, "points to no element"},
		{"external href", envelope("", call("op", `<a href="http://evil/x"/>`)), FaultClient, "not a local"},
		{"duplicate id", envelope("", call("op", `<a id="x"/><b id="x"/>`)), FaultClient, "duplicate id"},
		{"undeclared type prefix", envelope("", call("op", `<a xsi:type="zz:long">1</a>`)), FaultClient, "undeclared prefix"},
		{"simple type with children", envelope("", call("op", `<a xsi:type="xsd:long"><b/></a>`)), FaultClient, "child elements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decodeFault(t, tc.doc, tc.code, tc.msg)
		})
	}
}

func TestHostileContentType(t *testing.T) {
	doc := []byte(envelope("", call("touch", "")))
	_, err := Decode(doc, "application/json", DefaultLimits())
	requireFault(t, err, FaultClient, "text/xml")
	_, err = Decode(doc, "application/soap+xml; charset=utf-8", DefaultLimits())
	requireFault(t, err, FaultVersionMismatch, "SOAP 1.2")
	_, err = Decode(doc, "text/xml; charset", DefaultLimits())
	requireFault(t, err, FaultClient, "Content-Type")
}

func TestValueErrorNeverEchoesHugeInput(t *testing.T) {
	name := strings.Repeat("n", 5000)
	c := mustDecode(t, envelope("", call("op", `<`+name+` xsi:type="xsd:long">`+strings.Repeat("x", 5000)+`</`+name+`>`)))
	_, _, err := c.Params[0].Int64()
	require.ErrorContains(t, err, "not a valid long")
	require.Less(t, len(err.Error()), 200)
}

func TestHostileSharedHugeTextIsNotCopied(t *testing.T) {
	// A large text value split by a comment (so the parser gives two text
	// tokens) referenced many times must be joined once and then shared.
	big := strings.Repeat("A", 64<<10)
	var parts strings.Builder
	for i := 0; i < 200; i++ {
		parts.WriteString(`<s href="#t"/>`)
	}
	doc := envelope("", call("op", parts.String())+`<multiRef id="t" soapenc:root="0" xsi:type="xsd:string">`+big+`<!-- -->B</multiRef>`)
	c := mustDecode(t, doc)
	require.Len(t, c.Params, 200)
	require.Equal(t, big+"B", c.Params[0].Text)
	require.Same(t, unsafe.StringData(c.Params[0].Text), unsafe.StringData(c.Params[199].Text))
}

func TestHostileManyAttributesAndDeclarations(t *testing.T) {
	// Thousands of namespace declarations in scope and thousands of prefixed
	// "type" attributes on each of many elements: prefix resolution must
	// stay linear (it was O(declarations) per attribute when resolved by
	// walking up the tree).
	var decls, attrs strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&decls, ` xmlns:p%d="urn:p%d"`, i, i)
		fmt.Fprintf(&attrs, ` p%d:type="p%d:x"`, i, i)
	}
	var parts strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&parts, `<a%d%s xsi:type="xsd:long">%d</a%d>`, i, attrs.String(), i, i)
	}
	doc := strings.Replace(envelope("", call("op", parts.String())), `<soapenv:Envelope `, `<soapenv:Envelope`+decls.String()+` `, 1)
	c, err := Decode([]byte(doc), "text/xml", Limits{MaxBytes: 8 << 20})
	require.NoError(t, err)
	require.Len(t, c.Params, 30)
	require.Equal(t, KindInt, c.Params[29].Kind)
	require.Equal(t, "29", c.Params[29].Text)
}

func TestDecodeXMLSchema1999Draft(t *testing.T) {
	// SOAP::Lite style: 1999 XSD/XSI namespaces, xsi:null.
	doc := `<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/1999/XMLSchema-instance" xmlns:xsd="http://www.w3.org/1999/XMLSchema">` +
		`<SOAP-ENV:Body><namesp1:paymentStatus xmlns:namesp1="http://axis.web.gopay.cz"><paymentSessionInfo>` +
		`<paymentSessionId xsi:type="xsd:long">3000000001</paymentSessionId><targetGoId xsi:type="xsd:long" xsi:null="1"/><flag xsi:type="xsd:boolean">1</flag>` +
		`</paymentSessionInfo></namesp1:paymentStatus></SOAP-ENV:Body></SOAP-ENV:Envelope>`
	c := mustDecode(t, doc)
	si := c.Param("paymentSessionInfo")
	require.Equal(t, KindStruct, si.Kind)
	require.Equal(t, KindInt, si.Field("paymentSessionId").Kind)
	require.True(t, si.Field("targetGoId").Nil)
	require.Equal(t, KindBool, si.Field("flag").Kind)
}
