package soapenc

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Response is an RPC reply: element <Operation+"Response"> in Namespace
// holding one return part. Return.Name is the part name (e.g. "touchReturn");
// a nil Return writes an empty response element.
type Response struct {
	Namespace string
	Operation string
	Return    *Value
}

const (
	envelopeStart = `<?xml version="1.0" encoding="UTF-8"?>` +
		`<soapenv:Envelope xmlns:soapenv="` + NSEnvelope + `" xmlns:xsd="` + NSXSD + `" xmlns:xsi="` + NSXSI + `">` +
		`<soapenv:Body>`
	envelopeEnd = `</soapenv:Body></soapenv:Envelope>`
)

// The encoder appends to a pooled byte slice and writes it once: replies are
// small, and this is several times cheaper than building an etree document
// (see BenchmarkEncode*).
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// putBuf hands back to bufPool the buffer bp was taken as, now grown to b,
// unless it grew past 1 MiB (one huge request should not pin its memory).
func putBuf(bp *[]byte, b []byte) {
	if cap(b) <= 1<<20 {
		*bp = b[:0]
		bufPool.Put(bp)
	}
}

// EncodeResponse writes r as a SOAP 1.1 RPC/encoded envelope, the way Axis
// 1.4 wrote it, with the values inline (no multiRefs) and xsi:type on every
// value.
func EncodeResponse(w io.Writer, r *Response) error {
	bp := bufPool.Get().(*[]byte)
	b := appendResponse((*bp)[:0], r)
	_, err := w.Write(b)
	putBuf(bp, b)
	return err
}

// AppendResponse appends the encoding of r to b.
func AppendResponse(b []byte, r *Response) []byte { return appendResponse(b, r) }

func appendResponse(b []byte, r *Response) []byte {
	e := encoder{}
	e.prefixes[0] = nsPrefix{r.Namespace, "ns1"}
	e.n = 1
	e.next = 2
	if r.Return != nil {
		e.collect(r.Return)
	}
	b = append(b, envelopeStart...)
	b = append(b, "<ns1:"...)
	b = append(b, r.Operation...)
	b = append(b, `Response soapenv:encodingStyle="`+NSEncoding+`"`...)
	for _, p := range e.prefixes[:e.n] {
		b = append(b, " xmlns:"...)
		b = append(b, p.prefix...)
		b = append(b, `="`...)
		b = appendEscaped(b, p.ns, true)
		b = append(b, '"')
	}
	for _, p := range e.extra {
		b = append(b, " xmlns:"...)
		b = append(b, p.prefix...)
		b = append(b, `="`...)
		b = appendEscaped(b, p.ns, true)
		b = append(b, '"')
	}
	b = append(b, '>')
	if r.Return != nil {
		b = e.value(b, r.Return, r.Return.Name)
	}
	b = append(b, "</ns1:"...)
	b = append(b, r.Operation...)
	b = append(b, "Response>"...)
	b = append(b, envelopeEnd...)
	return b
}

type nsPrefix struct{ ns, prefix string }

// encoder assigns prefixes: xsd and soapenc for the builtin namespaces, ns1
// for the service namespace, ns2, ns3... for other type namespaces in the
// order they first appear. All are declared on the response element.
type encoder struct {
	prefixes [6]nsPrefix // inline storage: replies use few namespaces
	n        int
	extra    []nsPrefix
	next     int // number of the next nsN prefix
}

var nsNames = [...]string{"ns0", "ns1", "ns2", "ns3", "ns4", "ns5", "ns6", "ns7", "ns8", "ns9"}

func (e *encoder) prefix(ns string) string {
	switch ns {
	case NSXSD:
		return "xsd"
	case NSXSI:
		return "xsi"
	case NSEnvelope:
		return "soapenv"
	}
	for _, p := range e.prefixes[:e.n] {
		if p.ns == ns {
			return p.prefix
		}
	}
	for _, p := range e.extra {
		if p.ns == ns {
			return p.prefix
		}
	}
	return ""
}

func (e *encoder) declare(ns string) {
	if ns == "" || e.prefix(ns) != "" {
		return
	}
	p := "soapenc"
	if ns != NSEncoding {
		if e.next < len(nsNames) {
			p = nsNames[e.next]
		} else {
			p = "ns" + strconv.Itoa(e.next)
		}
		e.next++
	}
	if e.n < len(e.prefixes) {
		e.prefixes[e.n] = nsPrefix{ns, p}
		e.n++
	} else {
		e.extra = append(e.extra, nsPrefix{ns, p})
	}
}

func (e *encoder) collect(v *Value) {
	t := typeOf(v)
	e.declare(t.Space)
	if v.Kind == KindArray && !v.Nil { // soapenc:arrayType="itemType[N]"
		e.declare(NSEncoding)
		e.declare(itemTypeOf(v).Space)
	}
	for _, f := range v.Fields {
		if f != nil {
			e.collect(f)
		}
	}
}

// typeOf is v's xsi:type; untyped values get one from their Kind.
func typeOf(v *Value) QName {
	if v.Type != (QName{}) {
		return v.Type
	}
	switch v.Kind {
	case KindInt:
		return TypeLong
	case KindBool:
		return TypeBoolean
	case KindFloat:
		return QName{NSEncoding, "double"}
	case KindArray:
		return QName{NSEncoding, "Array"}
	case KindStruct:
		return QName{}
	}
	return TypeString
}

func itemTypeOf(v *Value) QName {
	if v.ItemType != (QName{}) {
		return v.ItemType
	}
	return QName{NSXSD, "anyType"}
}

func (e *encoder) appendQName(b []byte, q QName) []byte {
	if p := e.prefix(q.Space); p != "" {
		b = append(b, p...)
		b = append(b, ':')
	}
	// Local comes from the caller or from decoded input: escape it.
	return appendEscaped(b, q.Local, true)
}

func (e *encoder) value(b []byte, v *Value, name string) []byte {
	if name == "" {
		name = "item"
	}
	b = append(b, '<')
	b = append(b, name...)
	if t := typeOf(v); t != (QName{}) {
		b = append(b, ` xsi:type="`...)
		b = e.appendQName(b, t)
		b = append(b, '"')
	}
	if v.Kind == KindArray && !v.Nil {
		b = append(b, ` soapenc:arrayType="`...)
		b = e.appendQName(b, itemTypeOf(v))
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(countItems(v)), 10)
		b = append(b, `]"`...)
	}
	if v.Nil {
		return append(b, ` xsi:nil="true"/>`...)
	}
	b = append(b, '>')
	switch v.Kind {
	case KindStruct, KindArray:
		for _, f := range v.Fields {
			if f == nil {
				continue
			}
			n := f.Name
			if v.Kind == KindArray && n == "" {
				n = "item"
			}
			b = e.value(b, f, n)
		}
	default:
		b = appendEscaped(b, v.Text, false)
	}
	b = append(b, "</"...)
	b = append(b, name...)
	return append(b, '>')
}

func countItems(v *Value) int {
	n := 0
	for _, f := range v.Fields {
		if f != nil {
			n++
		}
	}
	return n
}

// EncodeFault writes f as a SOAP 1.1 fault envelope.
func EncodeFault(w io.Writer, f *Fault) error {
	bp := bufPool.Get().(*[]byte)
	b := appendFault((*bp)[:0], f)
	_, err := w.Write(b)
	putBuf(bp, b)
	return err
}

func appendFault(b []byte, f *Fault) []byte {
	code := f.Code
	if code == "" {
		code = FaultServer
	}
	b = append(b, envelopeStart...)
	b = append(b, "<soapenv:Fault><faultcode>"...)
	if !strings.Contains(code, ":") {
		b = append(b, "soapenv:"...)
	}
	b = appendEscaped(b, code, false)
	b = append(b, "</faultcode><faultstring>"...)
	b = appendEscaped(b, f.String, false)
	b = append(b, "</faultstring>"...)
	if f.Actor != "" {
		b = append(b, "<faultactor>"...)
		b = appendEscaped(b, f.Actor, false)
		b = append(b, "</faultactor>"...)
	}
	if f.Detail != "" {
		b = append(b, "<detail>"...)
		b = appendEscaped(b, f.Detail, false)
		b = append(b, "</detail>"...)
	}
	b = append(b, "</soapenv:Fault>"...)
	return append(b, envelopeEnd...)
}

// appendEscaped appends s as XML character data (or an attribute value when
// attr). Characters XML 1.0 cannot carry (invalid UTF-8, C0 controls other
// than tab/newline/CR, U+FFFE/U+FFFF) become U+FFFD, so the output is always
// well-formed UTF-8. CR is written as a reference so it survives parsing.
func appendEscaped(b []byte, s string, attr bool) []byte {
	// The run of bytes written as they are comes first, one table look-up
	// a byte (namespace URIs and most values are all of it); the loop
	// below starts where it ends, with nothing written yet.
	plain := &plainText
	if attr {
		plain = &plainAttr
	}
	i := 0
	for i < len(s) && plain[s[i]] {
		i++
	}
	if i == len(s) {
		return append(b, s...)
	}
	last := 0
	for i < len(s) {
		c := s[i]
		var esc string
		size := 1
		if c < utf8.RuneSelf {
			switch c {
			case '<':
				esc = "&lt;"
			case '>':
				esc = "&gt;"
			case '&':
				esc = "&amp;"
			case '"':
				if attr {
					esc = "&quot;"
				}
			case '\r':
				esc = "&#xD;"
			case '\n':
				if attr {
					esc = "&#xA;"
				}
			case '\t':
				if attr {
					esc = "&#x9;"
				}
			default:
				if c < 0x20 {
					esc = "\uFFFD"
				}
			}
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			if (r == utf8.RuneError && size == 1) || r == 0xFFFE || r == 0xFFFF {
				esc = "\uFFFD"
			}
		}
		if esc != "" {
			b = append(b, s[last:i]...)
			b = append(b, esc...)
			last = i + size
		}
		i += size
	}
	return append(b, s[last:]...)
}

// plainText and plainAttr are the bytes appendEscaped writes as they are in
// character data and in an attribute value: ASCII but '<', '>', '&' and
// the C0 controls (CR among them), save tab and newline in character
// data; in an attribute '"' is escaped too.
var plainText, plainAttr = plainBytes(false), plainBytes(true)

func plainBytes(attr bool) (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '<' && c != '>' && c != '&' && (c != '"' || !attr)
	}
	t['\t'], t['\n'] = !attr, !attr
	return t
}
