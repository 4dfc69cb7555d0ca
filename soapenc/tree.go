package soapenc

import (
	"strings"
	"sync"

	"github.com/beevik/etree"
)

// node is an element with everything the decoder needs already resolved.
// etree reads raw tokens (prefixes, not namespaces); resolving them on
// demand by walking up the tree costs O(depth × attributes) per lookup,
// which hostile input with thousands of attributes or declarations turns
// quadratic. One pass with a scope of prefix stacks resolves every prefix in
// O(1) instead, and an element referenced many times is not re-read.
type node struct {
	space, local string // element name; space "" also when the prefix is undeclared
	nsOK         bool   // the element's prefix is declared
	prefix       string // the element's prefix as written (Wire)
	encStyle     bool   // carries a prefixed encodingStyle attribute (Wire)

	typ      QName // xsi:type, resolved
	typState qnState
	item     QName // from soapenc:arrayType
	arrState qnState

	isNil     bool // xsi:nil true/1
	rootFalse bool // soapenc:root 0/false
	mustUnd   bool // soapenv:mustUnderstand 1/true
	hasActor  bool
	actor     string
	hasHref   bool
	href      string

	text   string // character content (only for elements without children)
	first  int32  // first child element, -1 if none
	next   int32  // next sibling element, -1 if none
	nchild int32
}

// qnState says whether a QName-valued attribute was present and valid.
type qnState uint8

const (
	qnAbsent qnState = iota
	qnOK
	qnUndeclared // prefix not declared
	qnMalformed
)

// tree is a document flattened into nodes; nodes[0] is the root element.
type tree struct {
	nodes []node
	ids   map[string]int32
}

// trees keeps the trees of decoded requests for the next ones: a tree
// lives only while decode turns it into Values (which copy out what they
// need, never a pointer to a node), so its node slice, some 240 bytes an
// element, need not be allocated for every request (issue 28).
var trees = sync.Pool{New: func() any { return new(tree) }}

// maxPooledNodes bounds the node slice a tree keeps in the pool, so that
// one large request does not hold its slice for the small ones.
const maxPooledNodes = 256

// newTree returns an empty tree with room for size nodes.
func newTree(size int) *tree {
	t := trees.Get().(*tree)
	if cap(t.nodes) < size {
		t.nodes = make([]node, 0, max(size, 32))
	}
	return t
}

// release empties t and hands it back for another request. Nothing may
// use t or its nodes afterwards.
func (t *tree) release() {
	clear(t.nodes) // the request's strings are not kept alive by the pool
	t.nodes = t.nodes[:0]
	t.ids = nil
	if cap(t.nodes) <= maxPooledNodes {
		trees.Put(t)
	}
}

type treeBuilder struct {
	t     *tree
	lim   Limits
	scope map[string][]string // prefix -> stack of URIs in scope
	// decls is the scope of the streaming builder (stream.go), used when
	// scope is nil: the declarations in scope, innermost last. It stays
	// short (the streaming builder hands documents with many declarations
	// to the reference path), so a backward scan is as quick as a map.
	decls  []decl
	joined strings.Builder
}

// buildTree flattens root; size is a guess of the element count.
func buildTree(root *etree.Element, lim Limits, size int) (*tree, *Fault) {
	b := treeBuilder{
		t:     newTree(size),
		lim:   lim,
		scope: map[string][]string{"xml": {nsXML}},
	}
	if _, f := b.walk(root); f != nil {
		return nil, f
	}
	return b.t, nil
}

func (b *treeBuilder) lookup(prefix string) (string, bool) {
	if b.scope == nil {
		for i := len(b.decls) - 1; i >= 0; i-- {
			if b.decls[i].prefix == prefix {
				return b.decls[i].uri, true
			}
		}
		if prefix == "xml" {
			return nsXML, true
		}
		return "", prefix == ""
	}
	s := b.scope[prefix]
	if len(s) == 0 {
		return "", prefix == ""
	}
	return s[len(s)-1], true
}

func (b *treeBuilder) qname(v string) (QName, qnState) {
	v = strings.TrimSpace(v)
	prefix, local := "", v
	if i := strings.IndexByte(v, ':'); i >= 0 {
		prefix, local = v[:i], v[i+1:]
	}
	if local == "" {
		return QName{}, qnMalformed
	}
	ns, ok := b.lookup(prefix)
	if !ok {
		return QName{}, qnUndeclared
	}
	return QName{Space: ns, Local: local}, qnOK
}

func (b *treeBuilder) walk(e *etree.Element) (int32, *Fault) {
	idx := int32(len(b.t.nodes))
	b.t.nodes = append(b.t.nodes, node{})
	n := node{local: e.Tag, first: -1, next: -1}

	// Declarations first: they apply to the element's own name and attributes.
	// (On a fault the scope is left as it is: the tree is abandoned.)
	for i := range e.Attr {
		if p, ok := declPrefix(&e.Attr[i]); ok {
			b.scope[p] = append(b.scope[p], e.Attr[i].Value)
		}
	}

	n.space, n.nsOK = b.lookup(e.Space)
	n.prefix = e.Space
	if f := b.attrs(&n, idx, e.Attr); f != nil {
		return 0, f
	}

	var first *etree.CharData
	texts := 0
	prev := int32(-1)
	for _, t := range e.Child {
		switch t := t.(type) {
		case *etree.Element:
			c, f := b.walk(t)
			if f != nil {
				return 0, f
			}
			if prev < 0 {
				n.first = c
			} else {
				b.t.nodes[prev].next = c
			}
			prev = c
			n.nchild++
		case *etree.CharData:
			if first == nil {
				first = t
			}
			texts++
		case *etree.Directive:
			return 0, clientFault("DOCTYPE and other declarations are not allowed in a SOAP message")
		}
	}
	if n.nchild == 0 {
		switch texts {
		case 0:
		case 1:
			n.text = first.Data // shared, not copied
		default:
			b.joined.Reset()
			for _, t := range e.Child {
				if cd, ok := t.(*etree.CharData); ok {
					b.joined.WriteString(cd.Data)
				}
			}
			n.text = b.joined.String()
		}
	}
	b.t.nodes[idx] = n
	for i := range e.Attr {
		if p, ok := declPrefix(&e.Attr[i]); ok {
			s := b.scope[p]
			b.scope[p] = s[:len(s)-1]
		}
	}
	return idx, nil
}

// attrs reads the attributes of node idx into n (its namespace
// declarations are in scope already).
func (b *treeBuilder) attrs(n *node, idx int32, attrs []etree.Attr) *Fault {
	for i := range attrs {
		a := &attrs[i]
		if a.Space == "" {
			switch a.Key {
			case "href":
				n.hasHref, n.href = true, a.Value
			case "id":
				if _, dup := b.t.ids[a.Value]; dup {
					return clientFault("duplicate id " + QuoteName(a.Value))
				}
				if len(b.t.ids) >= b.lim.MaxRefs {
					return clientFault("too many multi-reference values (limit " + itoa(b.lim.MaxRefs) + ")")
				}
				if b.t.ids == nil {
					b.t.ids = map[string]int32{}
				}
				b.t.ids[a.Value] = idx
			}
			continue
		}
		if a.Space == "xmlns" {
			continue
		}
		if a.Key == "encodingStyle" {
			n.encStyle = true
		}
		switch a.Key {
		case "type", "nil", "null", "arrayType", "root", "mustUnderstand", "actor":
		default:
			continue
		}
		ns, ok := b.lookup(a.Space)
		if !ok {
			continue
		}
		switch {
		case isXSI(ns) && a.Key == "type":
			n.typ, n.typState = b.qname(a.Value)
		case isXSI(ns) && (a.Key == "nil" || a.Key == "null"):
			n.isNil = isTrue(a.Value)
		case ns == NSEncoding && a.Key == "arrayType":
			n.item, n.arrState = b.arrayType(a.Value)
		case ns == NSEncoding && a.Key == "root":
			n.rootFalse = isFalse(a.Value)
		case ns == NSEnvelope && a.Key == "mustUnderstand":
			n.mustUnd = isTrue(a.Value)
		case ns == NSEnvelope && a.Key == "actor":
			n.hasActor, n.actor = true, a.Value
		}
	}
	return nil
}

// Older toolkits (SOAP::Lite, Apache SOAP 2) still send the 1999 and 2000
// drafts of XML Schema; their instance attributes and types mean the same
// (the 1999 draft spells nil "null").
const (
	nsXSI1999 = "http://www.w3.org/1999/XMLSchema-instance"
	nsXSI2000 = "http://www.w3.org/2000/10/XMLSchema-instance"
	nsXSD1999 = "http://www.w3.org/1999/XMLSchema"
	nsXSD2000 = "http://www.w3.org/2000/10/XMLSchema"
)

func isXSI(ns string) bool { return ns == NSXSI || ns == nsXSI1999 || ns == nsXSI2000 }
func isXSD(ns string) bool { return ns == NSXSD || ns == nsXSD1999 || ns == nsXSD2000 }

// declPrefix reports whether a declares a namespace prefix ("" = default).
func declPrefix(a *etree.Attr) (string, bool) {
	switch {
	case a.Space == "xmlns":
		return a.Key, true
	case a.Space == "" && a.Key == "xmlns":
		return "", true
	}
	return "", false
}

// arrayType parses soapenc:arrayType, e.g. "ns2:EPaymentMethod[3]". An array
// of arrays ("xsd:string[][2]") has soapenc:Array items. The declared size
// is never used to allocate anything.
func (b *treeBuilder) arrayType(at string) (QName, qnState) {
	at = strings.TrimSpace(at)
	i := strings.IndexByte(at, '[')
	if i <= 0 || !strings.HasSuffix(at, "]") {
		return QName{}, qnMalformed
	}
	q, st := b.qname(at[:i])
	if st != qnOK {
		return q, st
	}
	if strings.Count(at[i:], "[") > 1 {
		return QName{NSEncoding, "Array"}, qnOK
	}
	return q, qnOK
}
