// Package soapenc reads and writes SOAP 1.1 envelopes whose bodies use the
// RPC style with section-5 ("encoded") values, the way Apache Axis 1.4, PHP
// ext/soap and suds put them on the wire. It knows XML and SOAP, nothing of
// payments: a request becomes a Call holding a tree of Values, and a reply is
// written from a tree of Values.
package soapenc

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Namespaces of SOAP 1.1 and the XML Schema it relies on.
const (
	NSEnvelope   = "http://schemas.xmlsoap.org/soap/envelope/"
	NSEncoding   = "http://schemas.xmlsoap.org/soap/encoding/"
	NSXSI        = "http://www.w3.org/2001/XMLSchema-instance"
	NSXSD        = "http://www.w3.org/2001/XMLSchema"
	NSEnvelope12 = "http://www.w3.org/2003/05/soap-envelope"
)

// QName is a namespace-qualified name, e.g. the value of xsi:type.
type QName struct {
	Space string
	Local string
}

// Kind says how a Value is to be read.
type Kind int

const (
	KindString Kind = iota // untyped, or a textual XSD type (string, token, dateTime, anyURI, …)
	KindInt                // long, int, short, byte, integer and their unsigned kin
	KindBool               // boolean
	KindFloat              // double, float, decimal
	KindStruct             // a compound value with named members
	KindArray              // a soapenc:Array
	KindBinary             // base64Binary, SOAP-ENC:base64, hexBinary: Text is the lexical form
	// KindUnknown is a simple value whose xsi:type the decoder does not
	// know; its text is kept, but every accessor refuses it, naming the
	// type: reading it as a string would be a guess.
	KindUnknown
)

// Value is one encoded value after multi-references are resolved. A nil
// *Value means "absent" and every accessor accepts it.
//
// Text is the character content as sent (trimmed for numbers and booleans).
// What it means depends on the type on the wire, not on what the reader
// expects: read values with Str, Int64 and Bool, which decode them by their
// xsi:type and report a *ValueError for content that contradicts it.
type Value struct {
	Name   string   // accessor (element) local name; "item" style for array members
	Type   QName    // xsi:type as sent (resolved namespace); zero when untyped
	Kind   Kind     // how Text is to be read, derived from Type (or from the members)
	Nil    bool     // xsi:nil="true", or an empty numeric/boolean element
	Text   string   // the character content of a simple value
	Fields []*Value // struct members or array items, in document order
	// ItemType is the member type of an array (from soapenc:arrayType).
	ItemType QName
}

// Field returns the first member called name, or nil.
func (v *Value) Field(name string) *Value {
	if v == nil {
		return nil
	}
	for _, f := range v.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// IsAbsent reports whether v is missing or nil.
func (v *Value) IsAbsent() bool { return v == nil || v.Nil }

// String returns the character content of a simple value as sent (the
// base64 letters of a binary value); ok is false when v is absent. Str is
// what a reader of a string wants.
func (v *Value) String() (s string, ok bool) {
	if v.IsAbsent() {
		return "", false
	}
	return v.Text, true
}

// Str reads v as text, by its xsi:type: the content of a textual, numeric or
// boolean value as sent; the decoded bytes of a base64Binary, SOAP-ENC:base64
// or hexBinary value, which must be UTF-8 text. ok is false when v is
// absent. err is a *ValueError when the content contradicts its type, does
// not decode, is not UTF-8, is of an unknown type or is compound.
func (v *Value) Str() (s string, ok bool, err error) {
	if v.IsAbsent() {
		return "", false, nil
	}
	switch v.Kind {
	case KindString:
		return v.Text, true, nil
	case KindInt, KindBool, KindFloat:
		if !validSimple(v.Type.Local, v.Text) {
			return "", false, v.invalid()
		}
		return v.Text, true, nil
	case KindBinary:
		b, err := v.bytes()
		if err != nil {
			return "", false, err
		}
		if !utf8.Valid(b) {
			return "", false, &ValueError{Name: v.Name, Problem: "is " + v.Type.Local + " whose bytes are not UTF-8 text"}
		}
		return string(b), true, nil
	}
	return "", false, v.unreadable("text")
}

// Int64 reads v as a whole number. An integer type must hold a valid
// literal of its type; decimal, double and float values, and untyped or
// textual ones, are accepted when their value is whole ("100.0", "1E2"),
// and a fraction is an error, never rounded (ValueError.Fraction). ok is
// false when v is absent or empty.
func (v *Value) Int64() (n int64, ok bool, err error) {
	if v.IsAbsent() {
		return 0, false, nil
	}
	t := strings.TrimSpace(v.Text)
	switch v.Kind {
	case KindInt, KindFloat:
		if !validSimple(v.Type.Local, t) {
			return 0, false, v.invalid()
		}
	case KindString:
	case KindBinary:
		s, _, err := v.Str()
		if err != nil {
			return 0, false, err
		}
		t = strings.TrimSpace(s)
	default:
		return 0, false, v.unreadable("number")
	}
	switch {
	case t == "":
		return 0, false, nil
	case isInteger(t):
		n, err := strconv.ParseInt(strings.TrimPrefix(t, "+"), 10, 64)
		if err != nil {
			return 0, false, &ValueError{Name: v.Name, Problem: "is out of range: " + quoteText(t)}
		}
		return n, true, nil
	case isDecimal(t, true) || t == "NaN" || strings.HasSuffix(t, "INF"):
		return wholeNumber(v.Name, t)
	}
	return 0, false, &ValueError{Name: v.Name, Problem: "is not a number"}
}

// wholeNumber reads a valid decimal or double lexical form t exactly (no
// floating point): "100.0" and "1.5E2" are whole, "100.5" has a fraction.
func wholeNumber(name, t string) (int64, bool, error) {
	fraction := &ValueError{Name: name, Problem: "has a fraction: " + quoteText(t) + " is not a whole number", Fraction: true}
	big := &ValueError{Name: name, Problem: "is out of range: " + quoteText(t)}
	s := t
	neg := false
	switch {
	case s == "NaN" || strings.HasSuffix(s, "INF"):
		return 0, false, &ValueError{Name: name, Problem: "is not a number: " + quoteText(t)}
	case s[0] == '-':
		neg, s = true, s[1:]
	case s[0] == '+':
		s = s[1:]
	}
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		mantissa := s[:i]
		switch {
		case allZero(strings.Replace(mantissa, ".", "", 1)):
			return 0, true, nil // zero whatever the exponent
		case err != nil || e > 40:
			// No whole int64 needs more; the bound keeps the shifting below small.
			return 0, false, big
		case e < -40:
			return 0, false, fraction
		}
		exp, s = e, s[:i]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	point := len(intPart) + exp // the decimal point's place in digits
	whole, rest := "", ""
	switch {
	case point <= 0:
		rest = digits
	case point >= len(digits):
		whole = digits + strings.Repeat("0", point-len(digits))
	default:
		whole, rest = digits[:point], digits[point:]
	}
	if !allZero(rest) {
		return 0, false, fraction
	}
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		return 0, true, nil
	}
	if neg {
		whole = "-" + whole
	}
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, false, big
	}
	return n, true, nil
}

// Bool reads v as a boolean: true/false/1/0 in any letter case, from a
// boolean, an integer (1 or 0) or an untyped or textual value. ok is false
// when v is absent or empty.
func (v *Value) Bool() (b bool, ok bool, err error) {
	if v.IsAbsent() {
		return false, false, nil
	}
	t := v.Text
	switch v.Kind {
	case KindString:
	case KindBool, KindInt:
		if !validSimple(v.Type.Local, t) {
			return false, false, v.invalid()
		}
	case KindBinary:
		if t, _, err = v.Str(); err != nil {
			return false, false, err
		}
	default:
		return false, false, v.unreadable("boolean")
	}
	switch strings.ToLower(strings.TrimSpace(t)) {
	case "":
		return false, false, nil
	case "true", "1":
		return true, true, nil
	case "false", "0":
		return false, true, nil
	}
	return false, false, &ValueError{Name: v.Name, Problem: "is not a boolean: " + quoteText(t)}
}

// bytes decodes a binary value. XML Schema lets base64 carry whitespace
// (encoders break lines every 76 characters); hexBinary is trimmed.
func (v *Value) bytes() ([]byte, error) {
	if v.Type.Local == "hexBinary" {
		b, err := hex.DecodeString(strings.TrimSpace(v.Text))
		if err != nil {
			return nil, &ValueError{Name: v.Name, Problem: "is hexBinary that does not decode: " + quoteText(v.Text)}
		}
		return b, nil
	}
	s := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, v.Text)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, &ValueError{Name: v.Name, Problem: "is " + v.Type.Local + " that does not decode: " + quoteText(v.Text)}
	}
	return b, nil
}

// invalid: the content contradicts the value's own simple type.
func (v *Value) invalid() *ValueError {
	return &ValueError{Name: v.Name, Problem: "is not a valid " + v.Type.Local + ": " + quoteText(v.Text)}
}

// unreadable: v's kind cannot be read as want.
func (v *Value) unreadable(want string) *ValueError {
	switch v.Kind {
	case KindUnknown:
		return &ValueError{Name: v.Name, Problem: "has xsi:type " + typeName(v.Type) + ", which is not a type this service decodes"}
	case KindStruct, KindArray:
		return &ValueError{Name: v.Name, Problem: "is a compound value where " + want + " is expected"}
	case KindBool:
		return &ValueError{Name: v.Name, Problem: "is a boolean where a " + want + " is expected"}
	case KindFloat:
		return &ValueError{Name: v.Name, Problem: "is a " + v.Type.Local + " where a " + want + " is expected"}
	}
	return &ValueError{Name: v.Name, Problem: "cannot be read as " + want}
}

// typeName renders a type for a message: "xsd:foo", "SOAP-ENC:foo" for the
// standard namespaces, else "{namespace}local".
func typeName(q QName) string {
	switch {
	case isXSD(q.Space):
		return QuoteName("xsd:" + q.Local)
	case q.Space == NSEncoding:
		return QuoteName("SOAP-ENC:" + q.Local)
	}
	return QuoteName("{" + q.Space + "}" + q.Local)
}

// ValueError says that a value could not be read: Name is its accessor,
// Problem what was wrong ("is base64Binary that does not decode: …"),
// without the name, so that a caller can name the field its own way.
type ValueError struct {
	Name    string
	Problem string
	// Fraction: a decimal or double with a fraction where a whole number
	// was read.
	Fraction bool
}

func (e *ValueError) Error() string {
	return "value of " + QuoteName(e.Name) + " " + e.Problem
}

// quoteText quotes at most 40 bytes of a value for a message.
func quoteText(t string) string {
	if len(t) > 40 {
		i := 40
		for i > 0 && !utf8.RuneStart(t[i]) {
			i--
		}
		t = t[:i] + "…"
	}
	return strconv.Quote(strings.ToValidUTF8(t, "\uFFFD"))
}

// Constructors for replies. Each writes xsi:type; a nil pointer becomes
// xsi:nil="true".

// XSD and SOAP-ENC simple types used by replies.
var (
	TypeString    = QName{NSEncoding, "string"}
	TypeLong      = QName{NSEncoding, "long"}
	TypeInt       = QName{NSEncoding, "int"}
	TypeBoolean   = QName{NSEncoding, "boolean"}
	TypeXSDBool   = QName{NSXSD, "boolean"}
	TypeXSDString = QName{NSXSD, "string"}
)

// NewString builds a soapenc:string member; nil means xsi:nil.
func NewString(name string, s *string) *Value {
	if s == nil {
		return &Value{Name: name, Type: TypeString, Kind: KindString, Nil: true}
	}
	return &Value{Name: name, Type: TypeString, Kind: KindString, Text: *s}
}

// NewLong builds a soapenc:long member; nil means xsi:nil.
func NewLong(name string, n *int64) *Value {
	if n == nil {
		return &Value{Name: name, Type: TypeLong, Kind: KindInt, Nil: true}
	}
	return &Value{Name: name, Type: TypeLong, Kind: KindInt, Text: strconv.FormatInt(*n, 10)}
}

// NewBool builds a boolean member of the given type (soapenc:boolean or
// xsd:boolean); nil means xsi:nil.
func NewBool(name string, typ QName, b *bool) *Value {
	if b == nil {
		return &Value{Name: name, Type: typ, Kind: KindBool, Nil: true}
	}
	return &Value{Name: name, Type: typ, Kind: KindBool, Text: strconv.FormatBool(*b)}
}

// NewStruct builds a compound value of type typ.
func NewStruct(name string, typ QName, fields ...*Value) *Value {
	return &Value{Name: name, Type: typ, Kind: KindStruct, Fields: fields}
}

// NewArray builds a soapenc:Array of items of type itemType; typ is the
// array's own type (e.g. ArrayOf_tns1_EPaymentMethod).
func NewArray(name string, typ QName, itemType QName, items ...*Value) *Value {
	return &Value{Name: name, Type: typ, Kind: KindArray, Fields: items, ItemType: itemType}
}
