package soapenc

import (
	"strconv"
	"strings"

	"github.com/beevik/etree"
)

// decoder turns elements into Values, resolving href="#id" references.
type decoder struct {
	lim      Limits
	ids      map[string]*etree.Element // id -> element, from Header and Body
	busy     map[string]bool           // ids being resolved on the current path
	elements int                       // elements under Header and Body
	nodes    int                       // values created
	budget   int                       // limit for nodes
	texts    map[*etree.Element]string // joined text of elements with several text tokens
}

// text returns the character content of e. A single text token is shared,
// not copied; joined text is kept, so a value referenced many times is
// joined once and resolving references never copies text.
func (d *decoder) text(e *etree.Element) string {
	var first *etree.CharData
	n := 0
	for _, t := range e.Child {
		if cd, ok := t.(*etree.CharData); ok {
			if first == nil {
				first = cd
			}
			n++
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return first.Data
	}
	if s, ok := d.texts[e]; ok {
		return s
	}
	var b strings.Builder
	for _, t := range e.Child {
		if cd, ok := t.(*etree.CharData); ok {
			b.WriteString(cd.Data)
		}
	}
	if d.texts == nil {
		d.texts = map[*etree.Element]string{}
	}
	d.texts[e] = b.String()
	return d.texts[e]
}

// index records every element with an id and counts elements. The tree
// depth is already bounded by the parser.
func (d *decoder) index(e *etree.Element) *Fault {
	d.elements++
	for i := range e.Attr {
		a := &e.Attr[i]
		if a.Space != "" || a.Key != "id" {
			continue
		}
		if _, dup := d.ids[a.Value]; dup {
			return clientFault("duplicate id " + quoteName(a.Value))
		}
		if len(d.ids) >= d.lim.MaxRefs {
			return clientFault("too many multi-reference values (limit " + strconv.Itoa(d.lim.MaxRefs) + ")")
		}
		d.ids[a.Value] = e
	}
	for _, t := range e.Child {
		switch t := t.(type) {
		case *etree.Element:
			if f := d.index(t); f != nil {
				return f
			}
		case *etree.Directive:
			return clientFault("DOCTYPE and other declarations are not allowed in a SOAP message")
		}
	}
	return nil
}

// value decodes the accessor e (named name); deflt is the type to assume
// when e carries no xsi:type (array items take the array's item type).
func (d *decoder) value(e *etree.Element, name string, deflt QName, depth int) (*Value, *Fault) {
	if depth > d.lim.MaxDepth {
		return nil, clientFault("value nested too deeply at " + quoteName(name))
	}
	href, ok := attrNSOK(e, "", "href")
	if !ok {
		return d.content(e, name, deflt, depth)
	}
	if !strings.HasPrefix(href, "#") {
		return nil, clientFault("reference in " + quoteName(name) + " is not a local #id")
	}
	id := href[1:]
	target := d.ids[id]
	if target == nil {
		return nil, clientFault("reference in " + quoteName(name) + " points to no element")
	}
	if d.busy[id] {
		return nil, clientFault("reference cycle at " + quoteName(name))
	}
	if d.busy == nil {
		d.busy = map[string]bool{}
	}
	d.busy[id] = true
	v, f := d.content(target, name, deflt, depth)
	delete(d.busy, id)
	return v, f
}

// content decodes the content of e (the element itself or the target of a
// reference).
func (d *decoder) content(e *etree.Element, name string, deflt QName, depth int) (*Value, *Fault) {
	d.nodes++
	if d.nodes > d.budget {
		return nil, clientFault("too many values after resolving references")
	}
	v := &Value{Name: name}
	typ, f := xsiType(e, name)
	if f != nil {
		return nil, f
	}
	if typ == (QName{}) {
		if ns, _ := lookupNS(e, e.Space); ns == NSEncoding || ns == NSXSD {
			// SOAP 1.1 5.2: an element named after its type, e.g. <soapenc:long>.
			if k, simple := simpleKind(e.Tag); simple || k == KindArray {
				typ = QName{ns, e.Tag}
			}
		}
	}
	if typ == (QName{}) {
		typ = deflt
	}
	v.Type = typ

	kind, simple := KindString, false
	builtin := typ.Space == NSXSD || typ.Space == NSEncoding
	if builtin {
		kind, simple = simpleKind(typ.Local)
	}
	at, isArray := attrNSOK(e, NSEncoding, "arrayType")
	if isArray {
		item, f := arrayItemType(e, at, name)
		if f != nil {
			return nil, f
		}
		v.ItemType = item
		kind, simple = KindArray, false
	} else if kind == KindArray {
		isArray = true
	}

	if isTrue(attrNS(e, NSXSI, "nil")) {
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

	children := 0
	for _, t := range e.Child {
		if _, ok := t.(*etree.Element); ok {
			children++
		}
	}
	if isArray || children > 0 {
		if simple {
			return nil, clientFault("element " + quoteName(name) + " has child elements but a simple xsi:type")
		}
		v.Kind = KindStruct
		var item QName
		if isArray {
			v.Kind = KindArray
			item = v.ItemType
		}
		v.Fields = make([]*Value, 0, children)
		for _, t := range e.Child {
			c, ok := t.(*etree.Element)
			if !ok {
				continue
			}
			fv, f := d.value(c, c.Tag, item, depth+1)
			if f != nil {
				return nil, f
			}
			v.Fields = append(v.Fields, fv)
		}
		return v, nil
	}

	s := d.text(e)
	switch {
	case simple && kind != KindString:
		v.Kind = kind
		t := strings.TrimSpace(s)
		if t == "" {
			// An empty numeric or boolean element means "absent".
			v.Nil = true
			return v, nil
		}
		if !validSimple(typ.Local, t) {
			return nil, clientFault("value of " + quoteName(name) + " is not a valid " + typ.Local)
		}
		v.Text = t
	case typ != (QName{}) && !builtin && isSpace(s):
		// An empty value of a compound type: a struct without members.
		v.Kind = KindStruct
	default:
		v.Kind = KindString
		v.Text = s
	}
	return v, nil
}

// xsiType returns the resolved xsi:type of e, or the zero QName.
func xsiType(e *etree.Element, name string) (QName, *Fault) {
	t, ok := attrNSOK(e, NSXSI, "type")
	if !ok {
		return QName{}, nil
	}
	q, ok := resolveQName(e, strings.TrimSpace(t))
	if !ok {
		return QName{}, clientFault("xsi:type of " + quoteName(name) + " uses an undeclared prefix")
	}
	return q, nil
}

func resolveQName(e *etree.Element, s string) (QName, bool) {
	prefix, local := "", s
	if i := strings.IndexByte(s, ':'); i >= 0 {
		prefix, local = s[:i], s[i+1:]
	}
	ns, ok := lookupNS(e, prefix)
	if !ok || local == "" {
		return QName{}, false
	}
	return QName{Space: ns, Local: local}, true
}

// arrayItemType parses soapenc:arrayType, e.g. "ns2:EPaymentMethod[3]". An
// array of arrays ("xsd:string[][2]") has soapenc:Array items. The declared
// size is not used to allocate anything.
func arrayItemType(e *etree.Element, at, name string) (QName, *Fault) {
	at = strings.TrimSpace(at)
	i := strings.IndexByte(at, '[')
	if i <= 0 || !strings.HasSuffix(at, "]") {
		return QName{}, clientFault("soapenc:arrayType of " + quoteName(name) + " is malformed")
	}
	q, ok := resolveQName(e, at[:i])
	if !ok {
		return QName{}, clientFault("soapenc:arrayType of " + quoteName(name) + " uses an undeclared prefix")
	}
	if strings.Count(at[i:], "[") > 1 {
		return QName{NSEncoding, "Array"}, nil
	}
	return q, nil
}

// simpleKind maps a local name in the XSD or SOAP-ENC namespace to a Kind.
// simple is false for compound or "any" types, whose kind comes from the
// content.
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
	case "Array":
		return KindArray, false
	case "Struct":
		return KindStruct, false
	case "anyType", "ur-type":
		return KindString, false
	}
	return KindString, true
}

// validSimple checks the lexical form of a numeric or boolean value (already
// trimmed, non-empty), including the range of the sized integer types.
func validSimple(typ, s string) bool {
	switch typ {
	case "boolean":
		return isTrue(s) || isFalse(s)
	case "long":
		return validInt(s, 64)
	case "int":
		return validInt(s, 32)
	case "short":
		return validInt(s, 16)
	case "byte":
		return validInt(s, 8)
	case "unsignedLong":
		return validUint(s, 64)
	case "unsignedInt":
		return validUint(s, 32)
	case "unsignedShort":
		return validUint(s, 16)
	case "unsignedByte":
		return validUint(s, 8)
	case "integer":
		return isInteger(s)
	case "nonNegativeInteger":
		return isInteger(s) && (s[0] != '-' || allZero(s[1:]))
	case "positiveInteger":
		return isInteger(s) && s[0] != '-' && !allZero(strings.TrimPrefix(s, "+"))
	case "nonPositiveInteger":
		return isInteger(s) && (s[0] == '-' || allZero(strings.TrimPrefix(s, "+")))
	case "negativeInteger":
		return isInteger(s) && s[0] == '-' && !allZero(s[1:])
	case "decimal":
		return isDecimal(s, false)
	case "double", "float":
		switch s {
		case "INF", "+INF", "-INF", "NaN":
			return true
		}
		return isDecimal(s, true)
	}
	return true
}

func validInt(s string, bits int) bool {
	if !isInteger(s) {
		return false
	}
	_, err := strconv.ParseInt(s, 10, bits)
	return err == nil
}

func validUint(s string, bits int) bool {
	if !isInteger(s) {
		return false
	}
	if s[0] == '-' {
		return allZero(s[1:])
	}
	_, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, bits)
	return err == nil
}

// isInteger: [+-]?[0-9]+
func isInteger(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return s != "" && allDigits(s)
}

// isDecimal: [+-]?(d+(.d*)?|.d+), with exp also ([eE][+-]?d+)?
func isDecimal(s string, exp bool) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if exp {
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			if !isInteger(s[i+1:]) {
				return false
			}
			s = s[:i]
		}
	}
	intPart, frac, dot := strings.Cut(s, ".")
	if intPart == "" && frac == "" {
		return false
	}
	_ = dot
	return allDigits(intPart) && allDigits(frac)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
