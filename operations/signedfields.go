package operations

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"sync"

	"github.com/legacybridge/soapbridge/wsdl"
)

// The legacy types are bound to the WSDL table (wsdl.Types) by their
// legacy tags: a Go field tagged legacy:"name" carries the member name. The
// table says each structure's members (the SOAP codec reads them) and the
// members its signature covers, in order (the signatures read them here):
// the shape and the signature order are written once, in the table.

// legacyCache holds LegacyFields per type.
var legacyCache sync.Map // reflect.Type → map[string][]int

// LegacyFields maps the legacy tags of struct type t (and of its embedded
// structs) to field index paths. The map is shared: callers must not
// modify it.
func LegacyFields(t reflect.Type) map[string][]int {
	if m, ok := legacyCache.Load(t); ok {
		return m.(map[string][]int)
	}
	m := walkLegacy(t)
	legacyCache.Store(t, m)
	return m
}

func walkLegacy(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for name, idx := range walkLegacy(f.Type) {
				out[name] = append([]int{i}, idx...)
			}
			continue
		}
		if name, ok := f.Tag.Lookup("legacy"); ok {
			out[name] = []int{i}
		}
	}
	return out
}

// signedMember is one member of a signature: where its value is in a Go
// type, and whether it is trimmed.
type signedMember struct {
	index []int
	trim  bool
}

type planKey struct {
	typ string
	t   reflect.Type
}

var plans sync.Map // planKey → []signedMember

// signaturePlan is the signature of WSDL type typ over Go type t. A type
// without the member is a programming error, found by the first test that
// signs one.
func signaturePlan(typ string, t reflect.Type) []signedMember {
	k := planKey{typ, t}
	if p, ok := plans.Load(k); ok {
		return p.([]signedMember)
	}
	tt, ok := wsdl.Find(typ)
	if !ok || len(tt.Signature) == 0 {
		panic(fmt.Sprintf("operations: WSDL type %s has no signature", typ))
	}
	fields := LegacyFields(t)
	plan := make([]signedMember, len(tt.Signature))
	for i, s := range tt.Signature {
		idx, ok := fields[s.Name]
		if !ok {
			panic(fmt.Sprintf("operations: %s has no field tagged legacy:%q (signed in %s)", t, s.Name, typ))
		}
		plan[i] = signedMember{index: idx, trim: s.Trim}
	}
	plans.Store(k, plan)
	return plan
}

// signedValues are the signature fields of v, a struct bound to WSDL type
// typ (by legacy tags): its signed members in the table's order, rendered
// as the joined string wants them (integers in decimal, booleans 1/0,
// absent empty); trimmed: the marked ones trimmed, as the PHP library does
// (the .NET library trims nothing).
func signedValues(typ string, v reflect.Value, trimmed bool) []string {
	plan := signaturePlan(typ, v.Type())
	out := make([]string, len(plan))
	for i, m := range plan {
		s := renderSigned(v.FieldByIndex(m.index))
		if trimmed && m.trim {
			s = trim(s)
		}
		out[i] = s
	}
	return out
}

// renderSigned renders a field of a legacy type for the joined string.
func renderSigned(f reflect.Value) string {
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return ""
		}
		f = f.Elem()
	}
	switch f.Kind() {
	case reflect.Int64:
		return FormatInt(f.Int())
	case reflect.Bool:
		if f.Bool() {
			return "1"
		}
		return "0"
	}
	return f.String()
}

// appendSignedJoin appends to b the signed members of v, a struct bound to
// WSDL type typ, each followed by "|": what signedValues renders, joined
// as joinFields joins them, without the key. No string per member: the
// integers are appended in decimal, the trimmed members trimmed in place
// (issue 28: a reply's signature made a slice and a string per integer).
func appendSignedJoin(b []byte, typ string, v reflect.Value, trimmed bool) []byte {
	for _, m := range signaturePlan(typ, v.Type()) {
		start := len(b)
		b = appendRendered(b, v.FieldByIndex(m.index))
		if trimmed && m.trim {
			t := bytes.Trim(b[start:], trimCutset)
			b = b[:start+copy(b[start:], t)]
		}
		b = append(b, '|')
	}
	return b
}

// appendRendered appends f rendered as renderSigned renders it.
func appendRendered(b []byte, f reflect.Value) []byte {
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return b
		}
		f = f.Elem()
	}
	switch f.Kind() {
	case reflect.Int64:
		return strconv.AppendInt(b, f.Int(), 10)
	case reflect.Bool:
		if f.Bool() {
			return append(b, '1')
		}
		return append(b, '0')
	}
	return append(b, f.String()...)
}

// statusReplySignature is the paymentStatus signature as read from a reply:
// for each signed member of EPaymentStatus, its name, whether it is a
// boolean (sent as true/false, joined as 1/0) and whether it is trimmed.
var statusReplySignature = func() []struct {
	name       string
	flag, trim bool
} {
	tt, _ := wsdl.Find("EPaymentStatus")
	types := map[string]string{}
	for _, f := range tt.Fields {
		types[f.Name] = f.Type
	}
	out := make([]struct {
		name       string
		flag, trim bool
	}, len(tt.Signature))
	for i, s := range tt.Signature {
		out[i].name, out[i].flag, out[i].trim = s.Name, types[s.Name] == "soapenc:boolean", s.Trim
	}
	return out
}()
