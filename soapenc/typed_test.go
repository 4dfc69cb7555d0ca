package soapenc

import (
	"encoding/base64"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Values are read by the xsi:type on the wire, whatever the reader expects:
// what Perl SOAP::Lite and hand-written clients send.

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func decodeOne(t *testing.T, part string) *Value {
	t.Helper()
	c := mustDecode(t, envelope("", call("op", part)))
	require.Len(t, c.Params, 1)
	return c.Params[0]
}

func TestStrDecodesBinaryTypes(t *testing.T) {
	name := "Jiří Novák – Dárkový poukaz"
	// SOAP::Lite's MIME::Base64 breaks lines every 76 characters and ends with one.
	wrapped := b64(name + " " + name + " " + name)
	wrapped = wrapped[:76] + "\n" + wrapped[76:] + "\n"
	for _, tc := range []struct{ part, want string }{
		{`<a xsi:type="xsd:base64Binary">` + b64(name) + `</a>`, name},
		{`<a xsi:type="soapenc:base64">` + b64(name) + `</a>`, name},
		{`<a xsi:type="xsd:base64Binary">` + wrapped + `</a>`, name + " " + name + " " + name},
		{`<a xsi:type="xsd:hexBinary"> ` + hex.EncodeToString([]byte(name)) + ` </a>`, name},
		{`<a xsi:type="xsd:base64Binary"/>`, ""},
	} {
		v := decodeOne(t, tc.part)
		require.Equal(t, KindBinary, v.Kind, tc.part)
		s, ok, err := v.Str()
		require.NoError(t, err, tc.part)
		assert.True(t, ok)
		assert.Equal(t, tc.want, s, tc.part)
	}
}

func TestStrDecodesReferencedBinary(t *testing.T) {
	// A base64 value in a multiRef, as Axis-style clients send values.
	c := mustDecode(t, envelope("", call("op", `<a href="#i"/>`)+
		`<multiRef id="i" soapenc:root="0" xsi:type="xsd:base64Binary">`+b64("Šťastná žížala")+`</multiRef>`))
	s, ok, err := c.Param("a").Str()
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "Šťastná žížala", s)
}

func TestStrRefusesBadBinary(t *testing.T) {
	cp1250 := string([]byte{'J', 'i', 0xF8, 0xED}) // "Jiří" in windows-1250: not UTF-8
	for _, tc := range []struct{ part, want string }{
		{`<productName xsi:type="xsd:base64Binary">not*base64</productName>`, `value of 'productName' is base64Binary that does not decode: "not*base64"`},
		{`<productName xsi:type="xsd:base64Binary">` + b64(cp1250) + `</productName>`, `value of 'productName' is base64Binary whose bytes are not UTF-8 text`},
		{`<productName xsi:type="soapenc:base64">` + b64(cp1250) + `</productName>`, `value of 'productName' is base64 whose bytes are not UTF-8 text`},
		{`<productName xsi:type="xsd:hexBinary">4a6</productName>`, `value of 'productName' is hexBinary that does not decode: "4a6"`},
		{`<productName xsi:type="xsd:hexBinary">` + hex.EncodeToString([]byte(cp1250)) + `</productName>`, `value of 'productName' is hexBinary whose bytes are not UTF-8 text`},
	} {
		_, ok, err := decodeOne(t, tc.part).Str()
		require.EqualError(t, err, tc.want, tc.part)
		assert.False(t, ok)
	}
}

func TestUnknownTypesAreRefusedNamingThem(t *testing.T) {
	for _, tc := range []struct{ part, typ string }{
		{`<a xsi:type="xsd:gibberish">x</a>`, `'xsd:gibberish'`},
		{`<a xsi:type="soapenc:Whatever">x</a>`, `'SOAP-ENC:Whatever'`},
		{`<a xmlns:my="urn:my" xsi:type="my:Text">x</a>`, `'{urn:my}Text'`},
		{`<soapenc:gibberish>x</soapenc:gibberish>`, `'SOAP-ENC:gibberish'`},
	} {
		v := decodeOne(t, tc.part)
		require.Equal(t, KindUnknown, v.Kind, tc.part)
		assert.Equal(t, "x", v.Text, "kept, never read as a string")
		want := "has xsi:type " + tc.typ + ", which is not a type this service decodes"
		_, _, err := v.Str()
		require.ErrorContains(t, err, want)
		_, _, err = v.Int64()
		require.ErrorContains(t, err, want)
		_, _, err = v.Bool()
		require.ErrorContains(t, err, want)
	}
	// Absent is absent, whatever its type says.
	s, ok, err := decodeOne(t, `<a xmlns:my="urn:my" xsi:type="my:Text" xsi:nil="true"/>`).Str()
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Empty(t, s)
}

func TestStrOfTextualAndScalarTypes(t *testing.T) {
	for _, tc := range []struct{ part, want string }{
		{`<a xsi:type="xsd:string"> x </a>`, " x "},
		{`<a xsi:type="xsd:anyURI">https://eshop.example/ok?a=1</a>`, "https://eshop.example/ok?a=1"},
		{`<a xsi:type="xsd:date">2027-12-31</a>`, "2027-12-31"},
		{`<a xsi:type="xsd:dateTime">2027-12-31T10:00:00Z</a>`, "2027-12-31T10:00:00Z"},
		{`<a xsi:type="xsd:token">cz_ge,cz_vb</a>`, "cz_ge,cz_vb"},
		// SOAP::Lite types a numeric order number as int: the text as sent.
		{`<a xsi:type="xsd:int">1001</a>`, "1001"},
		{`<a xsi:type="xsd:double">100.0</a>`, "100.0"},
		{`<a xsi:type="xsd:boolean">true</a>`, "true"},
		{`<a xsi:type="xsd:anyType">free</a>`, "free"},
		{`<a>untyped</a>`, "untyped"},
	} {
		s, ok, err := decodeOne(t, tc.part).Str()
		require.NoError(t, err, tc.part)
		assert.True(t, ok)
		assert.Equal(t, tc.want, s, tc.part)
	}
	_, _, err := decodeOne(t, `<a><b>1</b></a>`).Str()
	require.EqualError(t, err, "value of 'a' is a compound value where text is expected")
}

func TestInt64ByType(t *testing.T) {
	for _, tc := range []struct {
		part string
		want int64
	}{
		{`<n xsi:type="xsd:int">10000</n>`, 10000},
		{`<n xsi:type="xsd:long">8123456789</n>`, 8123456789},
		{`<n xsi:type="xsd:short">-7</n>`, -7},
		{`<n xsi:type="xsd:integer">+42</n>`, 42},
		{`<n xsi:type="xsd:unsignedInt">42</n>`, 42},
		{`<n xsi:type="xsd:decimal">100.0</n>`, 100},
		{`<n xsi:type="xsd:decimal">12900.000</n>`, 12900},
		{`<n xsi:type="xsd:double">100.0</n>`, 100},
		{`<n xsi:type="xsd:double">1.29E4</n>`, 12900},
		{`<n xsi:type="xsd:double">1e2</n>`, 100},
		{`<n xsi:type="xsd:float">-0.0</n>`, 0},
		{`<n xsi:type="xsd:double">0E999</n>`, 0},
		{`<n xsi:type="soapenc:double">8123456789</n>`, 8123456789},
		{`<n xsi:type="xsd:string">100</n>`, 100},
		{`<n>100.00</n>`, 100},
		{`<n xsi:type="xsd:base64Binary">` + b64("12900") + `</n>`, 12900},
	} {
		n, ok, err := decodeOne(t, tc.part).Int64()
		require.NoError(t, err, tc.part)
		assert.True(t, ok, tc.part)
		assert.Equal(t, tc.want, n, tc.part)
	}
}

func TestInt64RefusesFractionsAndNonNumbers(t *testing.T) {
	for _, tc := range []struct {
		part, want string
		fraction   bool
	}{
		{`<totalPrice xsi:type="xsd:double">100.5</totalPrice>`, `value of 'totalPrice' has a fraction: "100.5" is not a whole number`, true},
		{`<totalPrice xsi:type="xsd:decimal">129.90</totalPrice>`, `value of 'totalPrice' has a fraction: "129.90" is not a whole number`, true},
		{`<totalPrice xsi:type="xsd:float">1.5E-1</totalPrice>`, `has a fraction`, true},
		{`<totalPrice xsi:type="xsd:double">1E-50</totalPrice>`, `has a fraction`, true},
		{`<totalPrice xsi:type="xsd:string">99.5</totalPrice>`, `has a fraction`, true},
		{`<totalPrice>0.5</totalPrice>`, `has a fraction`, true},
		{`<totalPrice xsi:type="xsd:double">1E50</totalPrice>`, `value of 'totalPrice' is out of range: "1E50"`, false},
		{`<totalPrice xsi:type="xsd:double">99999999999999999999</totalPrice>`, `is out of range`, false},
		{`<totalPrice xsi:type="xsd:double">NaN</totalPrice>`, `value of 'totalPrice' is not a number: "NaN"`, false},
		{`<totalPrice xsi:type="xsd:double">-INF</totalPrice>`, `is not a number`, false},
		{`<totalPrice>12 900</totalPrice>`, `value of 'totalPrice' is not a number`, false},
		{`<totalPrice xsi:type="xsd:boolean">true</totalPrice>`, `value of 'totalPrice' is a boolean where a number is expected`, false},
		{`<totalPrice xsi:type="xsd:base64Binary">` + b64("12.5") + `</totalPrice>`, `has a fraction`, true},
	} {
		_, ok, err := decodeOne(t, tc.part).Int64()
		require.ErrorContains(t, err, tc.want, tc.part)
		assert.False(t, ok)
		var ve *ValueError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, tc.fraction, ve.Fraction, tc.part)
	}
}

func TestBoolByType(t *testing.T) {
	for _, tc := range []struct {
		part string
		want bool
	}{
		{`<b xsi:type="xsd:boolean">True</b>`, true},
		{`<b xsi:type="xsd:boolean">0</b>`, false},
		{`<b xsi:type="xsd:int">1</b>`, true},
		{`<b xsi:type="xsd:string">FALSE</b>`, false},
		{`<b>true</b>`, true},
		{`<b xsi:type="xsd:base64Binary">` + b64("false") + `</b>`, false},
	} {
		b, ok, err := decodeOne(t, tc.part).Bool()
		require.NoError(t, err, tc.part)
		assert.True(t, ok)
		assert.Equal(t, tc.want, b, tc.part)
	}
	for _, tc := range []struct{ part, want string }{
		{`<b xsi:type="xsd:int">2</b>`, `value of 'b' is not a boolean: "2"`},
		{`<b xsi:type="xsd:double">1.0</b>`, `value of 'b' is a double where a boolean is expected`},
		{`<b>yes</b>`, `value of 'b' is not a boolean: "yes"`},
	} {
		_, _, err := decodeOne(t, tc.part).Bool()
		require.EqualError(t, err, tc.want, tc.part)
	}
}
