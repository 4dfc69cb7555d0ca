package soapenc

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beevik/etree"
)

func readCapture(b *testing.B, client, op string) []byte {
	body, err := os.ReadFile(filepath.Join(testdataDir, "captures", client, op+".xml"))
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func benchDecode(b *testing.B, client string) { benchDecodeOp(b, client, "createPayment") }

func benchDecodeOp(b *testing.B, client, op string) {
	body := readCapture(b, client, op)
	lim := DefaultLimits()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(body, "text/xml; charset=utf-8", lim); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeAxisCreatePayment(b *testing.B) { benchDecode(b, "axis-1.4") }
func BenchmarkDecodePHPCreatePayment(b *testing.B)  { benchDecode(b, "php-soapclient") }

// The smallest call, where a fixed cost per request shows most.
func BenchmarkDecodePHPTouch(b *testing.B) { benchDecodeOp(b, "php-soapclient", "touch") }

// Baseline: etree parsing the same body, nothing else.
func BenchmarkBaselineEtreeParsePHPCreatePayment(b *testing.B) {
	body := readCapture(b, "php-soapclient", "createPayment")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := etree.NewDocument().ReadFromBytes(body); err != nil {
			b.Fatal(err)
		}
	}
}

// xmlNode is a generic tree for the encoding/xml baseline.
type xmlNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []xmlNode  `xml:",any"`
}

// Baseline: encoding/xml unmarshalling the same body into a generic tree.
func BenchmarkBaselineEncodingXMLPHPCreatePayment(b *testing.B) {
	body := readCapture(b, "php-soapclient", "createPayment")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var n xmlNode
		if err := xml.Unmarshal(body, &n); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodePaymentStatus(b *testing.B) {
	r := paymentStatusReply()
	b.ReportAllocs()
	for b.Loop() {
		if err := EncodeResponse(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// The same reply built as an etree document, to justify the hand-written
// encoder.
func BenchmarkEncodePaymentStatusEtree(b *testing.B) {
	r := paymentStatusReply()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeWithEtree(r).WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func encodeWithEtree(r *Response) *etree.Document {
	doc := etree.NewDocument()
	doc.CreateProcInst("xml", `version="1.0" encoding="UTF-8"`)
	env := doc.CreateElement("soapenv:Envelope")
	env.CreateAttr("xmlns:soapenv", NSEnvelope)
	env.CreateAttr("xmlns:xsd", NSXSD)
	env.CreateAttr("xmlns:xsi", NSXSI)
	op := env.CreateElement("soapenv:Body").CreateElement("ns1:" + r.Operation + "Response")
	op.CreateAttr("soapenv:encodingStyle", NSEncoding)
	op.CreateAttr("xmlns:ns1", r.Namespace)
	e := encoder{}
	e.prefixes[0] = nsPrefix{r.Namespace, "ns1"}
	e.n, e.next = 1, 2
	e.collect(r.Return)
	for _, p := range e.prefixes[1:e.n] {
		op.CreateAttr("xmlns:"+p.prefix, p.ns)
	}
	var add func(parent *etree.Element, v *Value)
	add = func(parent *etree.Element, v *Value) {
		el := parent.CreateElement(v.Name)
		t := typeOf(v)
		el.CreateAttr("xsi:type", e.prefix(t.Space)+":"+t.Local)
		if v.Nil {
			el.CreateAttr("xsi:nil", "true")
			return
		}
		for _, f := range v.Fields {
			add(el, f)
		}
		if v.Kind != KindStruct && v.Kind != KindArray {
			el.SetText(v.Text)
		}
	}
	add(op, r.Return)
	return doc
}

// Hostile inputs: the cost of refusing them must stay proportional to the
// body size.
func benchHostile(b *testing.B, doc string, wantFault bool) {
	body := []byte(doc)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_, err := Decode(body, "text/xml", DefaultLimits())
		if (err != nil) != wantFault {
			b.Fatalf("fault = %v", err)
		}
	}
}

func BenchmarkDecodeHostileBillionLaughs(b *testing.B) {
	benchHostile(b, billionLaughs(30, 10), true)
}

func BenchmarkDecodeHostileAttributeFlood(b *testing.B) {
	var attrs strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&attrs, ` xmlns:p%d="urn:p%d" p%d:type="p%d:x"`, i, i, i, i)
	}
	benchHostile(b, envelope("", call("op", `<a`+attrs.String()+`>1</a>`)), false)
}

func BenchmarkDecodeLargeBody(b *testing.B) {
	var parts strings.Builder
	for parts.Len() < 900<<10 {
		// Long values: 900 KB in fewer elements than the default limit.
		parts.WriteString(`<p xsi:type="xsd:string">` + strings.Repeat("Objednávka č. 42 – žluťoučký kůň ", 4) + `</p>`)
	}
	benchHostile(b, envelope("", call("op", parts.String())), false)
}
