package soapenc

import (
	"strconv"
	"strings"
)

func itoa(n int) string { return strconv.Itoa(n) }

// decoder turns nodes into Values, resolving href="#id" references.
type decoder struct {
	lim    Limits
	t      *tree
	busy   map[int32]bool // referenced nodes being resolved on the current path
	nodes  int            // values created
	budget int            // limit for nodes
	slab   []Value        // Values are carved from here when mem is full: one allocation per request
	mem    *callMem       // the pooled room of this Call (nil: none)
}

func (d *decoder) newValue(name string) *Value {
	if m := d.mem; m != nil && len(m.vals) < cap(m.vals) {
		m.vals = m.vals[:len(m.vals)+1]
		v := &m.vals[len(m.vals)-1]
		v.Name = name
		return v
	}
	if len(d.slab) == cap(d.slab) {
		// References may create more values than elements; grow in chunks.
		d.slab = make([]Value, 0, min(max(len(d.t.nodes), 16), 1024))
	}
	d.slab = d.slab[:len(d.slab)+1]
	v := &d.slab[len(d.slab)-1]
	v.Name = name
	return v
}

// pointers returns an empty list with room for n Values, from the Call's
// pooled room when it has enough; nil for none (as append leaves it).
func (d *decoder) pointers(n int) []*Value {
	if n == 0 {
		return nil
	}
	if m := d.mem; m != nil && len(m.ptrs)+n <= cap(m.ptrs) {
		k := len(m.ptrs)
		m.ptrs = m.ptrs[:k+n]
		return m.ptrs[k : k : k+n]
	}
	return make([]*Value, 0, n)
}

// value decodes the accessor n (named name); deflt is the type to assume
// when it carries no xsi:type (array items take the array's item type).
func (d *decoder) value(i int32, name string, deflt QName, depth int) (*Value, *Fault) {
	if depth > d.lim.MaxDepth {
		return nil, clientFault("value nested too deeply at " + QuoteName(name))
	}
	n := &d.t.nodes[i]
	if !n.hasHref {
		return d.content(n, name, deflt, depth)
	}
	if !strings.HasPrefix(n.href, "#") {
		return nil, clientFault("reference in " + QuoteName(name) + " is not a local #id")
	}
	target, ok := d.t.ids[n.href[1:]]
	if !ok {
		return nil, clientFault("reference in " + QuoteName(name) + " points to no element")
	}
	if d.busy[target] {
		return nil, clientFault("reference cycle at " + QuoteName(name))
	}
	if d.busy == nil {
		d.busy = map[int32]bool{}
	}
	d.busy[target] = true
	v, f := d.content(&d.t.nodes[target], name, deflt, depth)
	delete(d.busy, target)
	return v, f
}

// content decodes the content of n (the accessor itself or the target of a
// reference).
func (d *decoder) content(n *node, name string, deflt QName, depth int) (*Value, *Fault) {
	d.nodes++
	if d.nodes > d.budget {
		return nil, clientFault("too many values after resolving references")
	}
	v := d.newValue(name)
	typ := n.typ
	switch n.typState {
	case qnUndeclared:
		return nil, clientFault("xsi:type of " + QuoteName(name) + " uses an undeclared prefix")
	case qnMalformed:
		return nil, clientFault("xsi:type of " + QuoteName(name) + " is malformed")
	case qnAbsent:
		typ = deflt
		if n.space == NSEncoding || isXSD(n.space) {
			// SOAP 1.1 5.2: an element named after its type, e.g. <soapenc:long>.
			if k, simple := simpleKind(n.local); simple || k == KindArray {
				typ = QName{n.space, n.local}
			}
		}
	}
	v.Type = typ

	kind, simple := KindString, false
	builtin := typ.Space == NSEncoding || isXSD(typ.Space)
	if builtin {
		kind, simple = simpleKind(typ.Local)
	}
	isArray := kind == KindArray
	switch n.arrState {
	case qnOK:
		v.ItemType = n.item
		kind, simple, isArray = KindArray, false, true
	case qnUndeclared:
		return nil, clientFault("soapenc:arrayType of " + QuoteName(name) + " uses an undeclared prefix")
	case qnMalformed:
		return nil, clientFault("soapenc:arrayType of " + QuoteName(name) + " is malformed")
	}

	if n.isNil {
		v.Nil = true
		switch {
		case isArray:
			v.Kind = KindArray
		case simple:
			v.Kind = kind
		case typ != (QName{}) && !builtin:
			v.Kind = KindStruct
		default:
			v.Kind = kind
		}
		return v, nil
	}

	if isArray || n.nchild > 0 {
		if simple {
			return nil, clientFault("element " + QuoteName(name) + " has child elements but a simple xsi:type")
		}
		v.Kind = KindStruct
		var item QName
		if isArray {
			v.Kind = KindArray
			item = v.ItemType
		}
		v.Fields = []*Value{} // an empty struct or array has an empty list, not nil
		if n.nchild > 0 {
			v.Fields = d.pointers(int(n.nchild))
		}
		for c := n.first; c >= 0; c = d.t.nodes[c].next {
			fv, f := d.value(c, d.t.nodes[c].local, item, depth+1)
			if f != nil {
				return nil, f
			}
			v.Fields = append(v.Fields, fv)
		}
		return v, nil
	}

	// Simple content is kept as sent; whether it fits its type is checked
	// by the accessor that reads it (Str, Int64, Bool), so a value is
	// reported with the field its reader knows, and members nobody reads
	// (beyond the WSDL) cannot fail a call.
	switch {
	case simple && (kind == KindInt || kind == KindBool || kind == KindFloat):
		v.Kind = kind
		t := strings.TrimSpace(n.text)
		if t == "" {
			// An empty numeric or boolean element means "absent".
			v.Nil = true
			return v, nil
		}
		v.Text = t
	case typ != (QName{}) && !builtin && isSpace(n.text):
		// An empty value of a compound type: a struct without members.
		v.Kind = KindStruct
	case typ != (QName{}) && !builtin:
		// Text typed with a type of some other namespace: not ours to guess.
		v.Kind = KindUnknown
		v.Text = n.text
	default:
		v.Kind = kind
		v.Text = n.text
	}
	return v, nil
}

// simpleKind maps a local name in the XSD or SOAP-ENC namespace to a Kind.
// simple is false for compound or "any" types, whose kind comes from the
// content. A name it does not know is KindUnknown.
func simpleKind(local string) (k Kind, simple bool) {
	switch local {
	case "long", "int", "short", "byte", "integer",
		"unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte",
		"nonNegativeInteger", "positiveInteger", "negativeInteger", "nonPositiveInteger":
		return KindInt, true
	case "boolean":
		return KindBool, true
	case "double", "float", "decimal":
		return KindFloat, true
	case "base64Binary", "base64", "hexBinary": // base64: SOAP-ENC's own name
		return KindBinary, true
	case "string", "normalizedString", "token", "language", "Name", "NCName", "NMTOKEN", "NMTOKENS",
		"ID", "IDREF", "IDREFS", "ENTITY", "ENTITIES", "anyURI", "QName", "NOTATION", "anySimpleType",
		"dateTime", "date", "time", "duration", "gYear", "gYearMonth", "gMonth", "gMonthDay", "gDay":
		// Textual: the value is its text as sent (a date stays the string
		// the client signed).
		return KindString, true
	case "Array":
		return KindArray, false
	case "Struct":
		return KindStruct, false
	case "anyType", "ur-type":
		return KindString, false
	}
	return KindUnknown, true
}
