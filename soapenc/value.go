// Package soapenc reads and writes SOAP 1.1 envelopes whose bodies use the
// RPC style with section-5 ("encoded") values, the way Apache Axis 1.4, PHP
// ext/soap and suds put them on the wire. It knows XML and SOAP, nothing of
// payments: a request becomes a Call holding a tree of Values, and a reply is
// written from a tree of Values.
package soapenc

import (
	"strconv"
	"strings"
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
	KindString Kind = iota // also any untyped or unknown simple type
	KindInt                // long, int, short, byte and their unsigned kin
	KindBool               // boolean
	KindFloat              // double, float, decimal
	KindStruct             // a compound value with named members
	KindArray              // a soapenc:Array
)

// Value is one encoded value after multi-references are resolved. A nil
// *Value means "absent" and every accessor accepts it.
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

// String returns the text of a simple value; ok is false when v is absent.
func (v *Value) String() (s string, ok bool) {
	if v.IsAbsent() {
		return "", false
	}
	return v.Text, true
}

// Int64 reads v as an integer. ok is false when v is absent or empty; err is
// set when the text is not an integer.
func (v *Value) Int64() (n int64, ok bool, err error) {
	if v.IsAbsent() {
		return 0, false, nil
	}
	t := strings.TrimSpace(v.Text)
	if t == "" {
		return 0, false, nil
	}
	n, err = strconv.ParseInt(strings.TrimPrefix(t, "+"), 10, 64)
	if err != nil {
		return 0, false, &ValueError{Name: v.Name, Want: "integer", Text: v.Text}
	}
	return n, true, nil
}

// Bool reads v as a boolean: true/false/1/0 in any letter case. ok is false
// when v is absent or empty.
func (v *Value) Bool() (b bool, ok bool, err error) {
	if v.IsAbsent() {
		return false, false, nil
	}
	switch strings.ToLower(strings.TrimSpace(v.Text)) {
	case "":
		return false, false, nil
	case "true", "1":
		return true, true, nil
	case "false", "0":
		return false, true, nil
	}
	return false, false, &ValueError{Name: v.Name, Want: "boolean", Text: v.Text}
}

// ValueError says that a value could not be read as the wanted type.
type ValueError struct {
	Name string
	Want string
	Text string
}

func (e *ValueError) Error() string {
	t := e.Text
	if len(t) > 40 {
		t = t[:40] + "…"
	}
	return "value of " + e.Name + " is not a valid " + e.Want + ": " + strconv.Quote(t)
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
