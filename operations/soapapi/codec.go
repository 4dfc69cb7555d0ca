package soapapi

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/soapenc"
	"github.com/legacybridge/soapbridge/wsdl"
)

// The codec moves values between SOAP value trees and the core's legacy
// types, driven by the WSDL table: wsdl.Types gives each structure's
// members (name, order, type) and the namespace of each type comes from its
// prefix. A Go field is bound to the member named by its legacy tag
// (operations.LegacyFields), as the signatures bind theirs.

// goTypes binds each structure of the WSDL table to its core type.
var goTypes = map[string]reflect.Type{
	"ECustomerData":       reflect.TypeFor[operations.CustomerData](),
	"ECustomerCardData":   reflect.TypeFor[operations.CardData](),
	"EPaymentCommand":     reflect.TypeFor[operations.PaymentCommand](),
	"EPaymentStatus":      reflect.TypeFor[operations.PaymentStatus](),
	"EPaymentStatusWCust": reflect.TypeFor[operations.PaymentStatusWCust](),
	"EPaymentSessionInfo": reflect.TypeFor[operations.SessionInfo](),
	"EBuyerCreate":        reflect.TypeFor[operations.BuyerCreate](),
	"EBuyerCreateResult":  reflect.TypeFor[operations.BuyerCreateResult](),
	"EPaymentMethod":      reflect.TypeFor[operations.PaymentMethod](),
	"EPaymentResult":      reflect.TypeFor[operations.PaymentResult](),
	"ERecurrenceRequest":  reflect.TypeFor[operations.RecurrenceRequest](),
	"ERefundRequest":      reflect.TypeFor[operations.RefundRequest](),
}

// invalidField is the Go field of a request that carries the first reading
// problem; it is not on the wire.
const invalidField = "Invalid"

// tableTypes are wsdl.Types by name.
var tableTypes = func() map[string]wsdl.Type {
	m := make(map[string]wsdl.Type, len(wsdl.Types))
	for _, t := range wsdl.Types {
		m[t.Name] = t
	}
	return m
}()

// extraCache holds extraFields per type.
var extraCache sync.Map // reflect.Type → map[string]int

// extraFields maps the legacyExtra tags of t to field indexes: string
// members some client libraries send beyond the WSDL (the Java 2.4
// library's buyerUsername, which it signs). They are read when present and
// never written.
func extraFields(t reflect.Type) map[string]int {
	if m, ok := extraCache.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := range t.NumField() {
		if name, ok := t.Field(i).Tag.Lookup("legacyExtra"); ok {
			m[name] = i
		}
	}
	extraCache.Store(t, m)
	return m
}

// checkBinding reports whether the Go type bound to table type tt declares
// exactly its members, with Go types that can carry them.
func checkBinding(tt wsdl.Type, gt reflect.Type) error {
	fs := maps.Clone(operations.LegacyFields(gt)) // matched members are deleted below
	for _, f := range tt.Fields {
		idx, ok := fs[f.Name]
		if !ok {
			return fmt.Errorf("%s.%s is in the WSDL table but %s has no field tagged legacy:%q", tt.Name, f.Name, gt.Name(), f.Name)
		}
		if err := checkKind(f.Type, gt.FieldByIndex(idx).Type); err != nil {
			return fmt.Errorf("%s.%s: %w", tt.Name, f.Name, err)
		}
		delete(fs, f.Name)
	}
	for name := range fs {
		return fmt.Errorf("%s has a field tagged legacy:%q that the WSDL table's %s lacks", gt.Name(), name, tt.Name)
	}
	return nil
}

func checkKind(typ string, gt reflect.Type) error {
	_, local, _ := strings.Cut(typ, ":")
	want := ""
	switch local {
	case "string":
		want = "string"
	case "long", "int":
		want = "int64"
	case "boolean":
		want = "bool"
	default:
		if g, ok := goTypes[local]; ok {
			if gt.Kind() == reflect.Pointer && gt.Elem() == g {
				return nil
			}
			return fmt.Errorf("type %s needs *%s, has %s", typ, g.Name(), gt)
		}
		return fmt.Errorf("type %s is not bound to a Go type", typ)
	}
	base := gt
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if base.Kind().String() != want {
		return fmt.Errorf("type %s needs a %s or *%s, has %s", typ, want, want, gt)
	}
	return nil
}

// checkTypes checks every structure of the WSDL table against its Go type.
func checkTypes() error {
	for _, tt := range wsdl.Types {
		if tt.ArrayOf != "" {
			continue
		}
		gt, ok := goTypes[tt.Name]
		if !ok {
			return fmt.Errorf("WSDL type %s has no Go type", tt.Name)
		}
		if err := checkBinding(tt, gt); err != nil {
			return err
		}
	}
	for name := range goTypes {
		if _, ok := tableTypes[name]; !ok {
			return fmt.Errorf("Go binding %s is not a WSDL type", name)
		}
	}
	return nil
}

// codec encodes replies in the service namespace ns.
type codec struct{ ns string }

// qname resolves a prefixed type of the WSDL table.
func (c codec) qname(typ string) soapenc.QName {
	prefix, local, _ := strings.Cut(typ, ":")
	var ns string // a switch, not a map literal: this runs for every field of every reply
	switch prefix {
	case "soapenc":
		ns = wsdl.NSSOAPEnc
	case "xsd":
		ns = wsdl.NSXSD
	case "tns1":
		ns = wsdl.NSTypes
	case "tns2":
		ns = wsdl.NSGate
	case "impl":
		ns = c.ns
	}
	return soapenc.QName{Space: ns, Local: local}
}

// encode renders v as the accessor name of table type typ.
func (c codec) encode(name, typ string, v reflect.Value) *soapenc.Value {
	return c.encodeWith(nil, name, typ, v)
}

// encodeWith is encode with the Values taken from r when it has room
// (nil: allocated).
func (c codec) encodeWith(r *replyValues, name, typ string, v reflect.Value) *soapenc.Value {
	out := &r.values(1)[0]
	c.encodeInto(r, out, name, typ, v, false)
	return out
}

// replyValues holds the Values of one reply while it is encoded and
// written: the SOAP handler's call takes one from replyPool once the
// operation has answered (invoke) and hands it back once the reply is
// written, so that a paymentStatus reply's block of
// values (20 of 136 bytes) and its member list are not allocated per call
// (issue 28). Nothing keeps a reply's Values beyond its writing
// (soapenc.WriteResponse renders them into bytes).
type replyValues struct {
	vals []soapenc.Value
	ptrs []*soapenc.Value
	resp soapenc.Response
}

// replyPoolValues is the room of a pooled replyValues: the largest struct
// reply (EPaymentStatusWCust) with its root, not the longer arrays of
// paymentMethodList, which are allocated as before.
const replyPoolValues = 48

var replyPool = sync.Pool{New: func() any {
	return &replyValues{vals: make([]soapenc.Value, 0, replyPoolValues), ptrs: make([]*soapenc.Value, 0, replyPoolValues)}
}}

// values returns n zero Values from r, or new ones when r is nil or full.
func (r *replyValues) values(n int) []soapenc.Value {
	if r == nil || len(r.vals)+n > cap(r.vals) {
		return make([]soapenc.Value, n)
	}
	k := len(r.vals)
	r.vals = r.vals[:k+n]
	return r.vals[k : k+n : k+n]
}

// pointers is values for the member lists.
func (r *replyValues) pointers(n int) []*soapenc.Value {
	if r == nil || len(r.ptrs)+n > cap(r.ptrs) {
		return make([]*soapenc.Value, n)
	}
	k := len(r.ptrs)
	r.ptrs = r.ptrs[:k+n]
	return r.ptrs[k : k+n : k+n]
}

// release zeroes what the reply used (so the pool keeps none of its
// strings alive) and hands r back; nil does nothing. Nothing may use the
// reply afterwards.
func (r *replyValues) release() {
	if r == nil {
		return
	}
	clear(r.vals)
	clear(r.ptrs)
	r.vals, r.ptrs, r.resp = r.vals[:0], r.ptrs[:0], soapenc.Response{}
	replyPool.Put(r)
}

// tableType is the table's type q names, if q is not a built-in type.
func tableType(q soapenc.QName) (wsdl.Type, bool) {
	if q.Space == wsdl.NSSOAPEnc || q.Space == wsdl.NSXSD {
		return wsdl.Type{}, false
	}
	tt, ok := tableTypes[q.Local]
	return tt, ok
}

// memberPaths is the index path in Go type t of each member of table type
// tt (named local), in the table's order, as operations.LegacyFields finds
// them (nil for a member t lacks); worked out once per pair, so that a
// reply does not look every member up by name.
func memberPaths(t reflect.Type, local string, tt wsdl.Type) [][]int {
	k := memberPathsKey{t, local}
	if p, ok := memberPathsCache.Load(k); ok {
		return p.([][]int)
	}
	fs := operations.LegacyFields(t)
	p := make([][]int, len(tt.Fields))
	for i, f := range tt.Fields {
		p[i] = fs[f.Name]
	}
	memberPathsCache.Store(k, p)
	return p
}

type memberPathsKey struct {
	t     reflect.Type
	local string
}

var memberPathsCache sync.Map // memberPathsKey → [][]int

// encodeInto renders v into out. The members of a struct are written into
// one block of values (two allocations per struct, not one per member,
// none when r has room).
func (c codec) encodeInto(r *replyValues, out *soapenc.Value, name, typ string, v reflect.Value, inStruct bool) {
	q := c.qname(typ)
	// The namespace first: a built-in type (most members) needs no look-up
	// in the table.
	if tt, ok := tableType(q); ok {
		if tt.ArrayOf != "" {
			block := r.values(v.Len())
			items := r.pointers(v.Len())
			for i := range items {
				items[i] = &block[i]
				c.encodeInto(r, &block[i], "item", tt.ArrayOf, v.Index(i), false)
			}
			*out = soapenc.Value{Name: name, Type: q, Kind: soapenc.KindArray, Fields: items, ItemType: c.qname(tt.ArrayOf)}
			return
		}
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				*out = soapenc.Value{Name: name, Type: q, Kind: soapenc.KindStruct, Nil: true}
				return
			}
			v = v.Elem()
		}
		paths := memberPaths(v.Type(), q.Local, tt)
		block := r.values(len(tt.Fields))
		members := r.pointers(len(tt.Fields))
		// The digits of the integer members (ids, amounts) go into one
		// string, not one allocation each (strconv has its own strings
		// for values under 100).
		var buf [128]byte
		digits := buf[:0]
		var ints [8]struct{ i, from, to int }
		nints := 0
		for i, f := range tt.Fields {
			members[i] = &block[i]
			fv := v.FieldByIndex(paths[i])
			c.encodeInto(r, &block[i], f.Name, f.Type, fv, true)
			if m := &block[i]; m.Kind == soapenc.KindInt && !m.Nil && m.Text == "" {
				if fv.Kind() == reflect.Pointer {
					fv = fv.Elem()
				}
				if nints == len(ints) {
					m.Text = strconv.FormatInt(fv.Int(), 10)
					continue
				}
				from := len(digits)
				digits = strconv.AppendInt(digits, fv.Int(), 10)
				ints[nints] = struct{ i, from, to int }{i, from, len(digits)}
				nints++
			}
		}
		if nints > 0 {
			all := string(digits)
			for _, d := range ints[:nints] {
				block[d.i].Text = all[d.from:d.to]
			}
		}
		*out = soapenc.Value{Name: name, Type: q, Kind: soapenc.KindStruct, Fields: members}
		return
	}
	*out = soapenc.Value{Name: name, Type: q}
	wasPtr := v.Kind() == reflect.Pointer
	if wasPtr {
		if v.IsNil() {
			out.Nil = true
		} else {
			v = v.Elem()
		}
	}
	switch q.Local {
	case "long", "int":
		out.Kind = soapenc.KindInt
		// A member of a struct with two digits or more is left empty here:
		// the struct writes its digits (encodeInto's struct case).
		if !out.Nil && (!inStruct || (v.Int() >= 0 && v.Int() < 100)) {
			out.Text = strconv.FormatInt(v.Int(), 10)
		}
	case "boolean":
		out.Kind = soapenc.KindBool
		if !out.Nil {
			out.Text = strconv.FormatBool(v.Bool())
		}
	default:
		out.Kind = soapenc.KindString
		if !out.Nil {
			out.Text = v.String()
			// A plain string field has no nil: empty is sent as absent.
			out.Nil = out.Text == "" && !wasPtr
		}
	}
}

// decode reads the part v (named part, of table type typ) into dst, a
// pointer to its Go type. The first problem is stored in dst's Invalid
// field; reading goes on so that the signed values are all there.
//
// Every value is read by the xsi:type it carries on the wire, whatever the
// WSDL declares (soapenc's Str, Int64, Bool): a base64Binary productName is
// its decoded text, a double 100.0 totalPrice is 100. A value that cannot be
// read so (base64 that does not decode, bytes that are not UTF-8, a
// fraction, an unknown xsi:type) is an invalid request like a missing
// field: the operation answers FAILED / CALL_FAILED naming the field, and
// nothing reaches the gateway. Client faults stay for envelopes that cannot
// be read at all: a legacy client takes a fault for a failed connection.
func decode(part, typ string, v *soapenc.Value, dst reflect.Value) {
	_, local, _ := strings.Cut(typ, ":")
	tt := tableTypes[local]
	s := dst.Elem()
	problem := ""
	if v.IsAbsent() {
		problem = "missing " + part
	} else {
		decodeStruct(part, tt, v, s, &problem)
	}
	if f := s.FieldByName(invalidField); f.IsValid() {
		f.SetString(problem)
	}
}

// minorUnits are the members that carry an amount in minor units; a
// fraction there gets a hint instead of a rounding.
var minorUnits = map[string]bool{"totalPrice": true, "amount": true}

// fieldProblem is the description of a value that could not be read:
// "paymentCommand.totalPrice has a fraction: …".
func fieldProblem(path string, err error) string {
	var ve *soapenc.ValueError
	if !errors.As(err, &ve) {
		return path + " cannot be read"
	}
	msg := path + " " + ve.Problem
	if ve.Fraction && minorUnits[path[strings.LastIndexByte(path, '.')+1:]] {
		msg += " (amounts are whole minor units: 10050 for 100.50)"
	}
	return msg
}

func decodeStruct(part string, tt wsdl.Type, v *soapenc.Value, s reflect.Value, problem *string) {
	// The path of a field is only spelt out for a problem.
	fail := func(name string, err error) {
		if *problem == "" {
			*problem = fieldProblem(part+"."+name, err)
		}
	}
	fs := operations.LegacyFields(s.Type())
	var strs []string // what the *string fields point to: one block per struct
	for _, f := range tt.Fields {
		fv := v.Field(f.Name)
		dst := s.FieldByIndex(fs[f.Name])
		_, local, _ := strings.Cut(f.Type, ":")
		switch local {
		case "string":
			str, ok, err := fv.Str()
			switch {
			case err != nil:
				fail(f.Name, err)
			case dst.Kind() == reflect.Pointer:
				if ok {
					if strs == nil {
						strs = make([]string, 0, len(tt.Fields))
					}
					strs = append(strs, str)
					dst.Set(reflect.ValueOf(&strs[len(strs)-1]))
				}
			default:
				dst.SetString(str)
			}
		case "long", "int":
			n, ok, err := fv.Int64()
			if err != nil {
				fail(f.Name, err)
			} else if ok {
				setScalar(dst, reflect.ValueOf(n))
			}
		case "boolean":
			b, ok, err := fv.Bool()
			if err != nil {
				fail(f.Name, err)
			} else if ok {
				setScalar(dst, reflect.ValueOf(b))
			}
		default:
			if fv.IsAbsent() {
				continue
			}
			nested := reflect.New(dst.Type().Elem())
			decodeStruct(part+"."+f.Name, tableTypes[local], fv, nested.Elem(), problem)
			dst.Set(nested)
		}
	}
	for name, i := range extraFields(s.Type()) {
		str, ok, err := v.Field(name).Str()
		if err != nil {
			fail(name, err)
		} else if ok {
			s.Field(i).SetString(str)
		}
	}
}

// setScalar stores x in dst, a field of x's type or a pointer to it.
func setScalar(dst, x reflect.Value) {
	if dst.Kind() == reflect.Pointer {
		p := reflect.New(x.Type())
		p.Elem().Set(x)
		dst.Set(p)
		return
	}
	dst.Set(x)
}
