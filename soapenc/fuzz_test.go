package soapenc

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/beevik/etree"
)

func countValues(vs []*Value) int {
	n := 0
	for _, v := range vs {
		if v != nil {
			n += 1 + countValues(v.Fields)
		}
	}
	return n
}

var faultCodes = map[string]bool{FaultClient: true, FaultServer: true, FaultVersionMismatch: true, FaultMustUnderstand: true}

func FuzzDecode(f *testing.F) {
	for _, p := range append(captureFiles(f), handmadeFiles(f)...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "text/xml; charset=utf-8")
	}
	for _, s := range []string{
		billionLaughs(4, 4),
		envelope(`<h:T xmlns:h="urn:x" soapenv:mustUnderstand="1"/>`, call("touch", "")),
		envelope("", call("op", `<a href="#id0"/>`)+`<multiRef id="id0" soapenc:root="0"><b href="#id0"/></multiRef>`),
		envelope("", call("op", `<m soapenc:arrayType="xsd:long[2]"><i>1</i><i href="#x"/></m>`)+`<x id="x" soapenc:root="0">2</x>`),
		envelope("", call("op", `<a xsi:type="xsd:boolean">True</a><b xsi:type="xsd:long"/><c xsi:nil="true"/>`)),
		`<!DOCTYPE a [<!ENTITY b "c">]><a>&b;</a>`,
		`<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body/></e:Envelope>`,
		envelope("", ""),
		strings.Repeat("<a>", 70),
	} {
		f.Add([]byte(s), "text/xml")
	}
	f.Add([]byte(strings.Replace(envelope("", call("op", "<a>\xe1\xe8</a>")), "UTF-8", "ISO-8859-2", 1)), "")
	f.Add([]byte(envelope("", call("op", "<a>\xe1\xe8</a>"))), "text/xml; charset=windows-1250")

	lim := Limits{MaxBytes: 64 << 10, MaxDepth: 32, MaxRefs: 100, MaxNodes: 2000}
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		c, err := Decode(body, contentType, lim)
		if err != nil {
			fault, ok := err.(*Fault)
			if !ok {
				t.Fatalf("error %T is not a *Fault", err)
			}
			if !faultCodes[fault.Code] || fault.String == "" || !utf8.ValidString(fault.String) || len(fault.String) > 300 {
				t.Fatalf("bad fault %+v", fault)
			}
			return
		}
		n := countValues(c.Params) + countValues(c.Header)
		if n != c.nodes || c.nodes > c.budget || c.budget > len(body)+lim.MaxNodes {
			t.Fatalf("resolved %d values (counted %d), budget %d, body %d", n, c.nodes, c.budget, len(body))
		}
		// Whatever was decoded must encode to well-formed UTF-8 XML that
		// decodes again to the same parts.
		for _, p := range c.Params {
			out := AppendResponse(nil, &Response{Namespace: "urn:x", Operation: "op", Return: p})
			if !utf8.Valid(out) {
				t.Fatalf("encoder wrote invalid UTF-8")
			}
			if err := etree.NewDocument().ReadFromBytes(out); err != nil {
				t.Fatalf("encoder wrote bad XML: %v\n%s", err, out)
			}
			back, err := Decode(out, "", Limits{MaxNodes: 1 << 20, MaxDepth: 1 << 10, MaxElements: 1 << 20})
			if err != nil {
				t.Fatalf("encoded reply does not decode: %v\n%s", err, out)
			}
			if len(back.Params) != 1 {
				t.Fatalf("encoded reply has %d parts\n%s", len(back.Params), out)
			}
			sameValue(t, p, back.Params[0])
		}
	})
}

// sameValue compares what a client would read: names, nil-ness, kinds and
// text of present values, members in order.
func sameValue(t *testing.T, want, got *Value) {
	t.Helper()
	if want.Name != got.Name || want.Nil != got.Nil {
		t.Fatalf("name/nil: want %q %v, got %q %v", want.Name, want.Nil, got.Name, got.Nil)
	}
	if want.Nil {
		return
	}
	if want.Kind != got.Kind || want.Text != got.Text || len(want.Fields) != len(got.Fields) {
		t.Fatalf("%s: want kind %d text %q fields %d, got kind %d text %q fields %d",
			want.Name, want.Kind, want.Text, len(want.Fields), got.Kind, got.Text, len(got.Fields))
	}
	for i := range want.Fields {
		sameValue(t, want.Fields[i], got.Fields[i])
	}
}
