package soapenc

import (
	"strings"
	"unicode/utf8"

	"github.com/beevik/etree"
)

// The streaming builder: the tree of a request read straight from its
// bytes, one pass, without an etree document in between (issue 28). It
// takes the documents SOAP clients write: elements, attributes, character
// data with the predefined entities and character references, an XML
// declaration of the common form. Anything else (comments, CDATA,
// processing instructions, carriage returns, names outside ASCII, many
// namespace declarations, any error or fault) makes it give up, and the
// caller takes the reference path (parseTree, then buildTree over the etree document),
// which decides. So a request is either read the same way by both paths
// (TestStreamTreeMatchesETree, FuzzStreamTree) or by the reference path
// alone: faults, their texts and their order are the reference path's.

// decl is a namespace declaration in scope (treeBuilder.decls).
type decl struct{ prefix, uri string }

// Beyond these the streaming builder hands the document to the reference
// path (whose scope is a map of stacks, linear in any input).
const (
	maxStreamDecls = 64
	maxStreamAttrs = 32
)

// openElem is an element whose end tag is still to come.
type openElem struct {
	idx   int32  // its node
	prev  int32  // its last child element so far, -1 if none
	ndecl int    // len(decls) before its own declarations
	name  string // qualified name as written, matched by the end tag
	text  string // its first run of character data
	texts int    // runs of character data
}

// streamTree builds the tree of body (UTF-8 already); size is a guess of
// the element count. ok is false when the reference path must decide.
func streamTree(body []byte, lim Limits, size int) (t *tree, ok bool) {
	s := string(body) // one copy: every name and most values are substrings of it
	i := 0
	if strings.HasPrefix(s, "<?") {
		if i = xmlDecl(s); i < 0 {
			return nil, false
		}
	}
	b := treeBuilder{t: newTree(size), lim: lim, decls: make([]decl, 0, 8)}
	attrs := make([]etree.Attr, 0, 8)
	// Eight open elements on the stack frame cover the envelopes clients
	// send (Envelope, Body, the operation, a struct, its fields; a deeper
	// one grows on the heap). Sixteen made this frame 2 KiB, which pushed
	// the handler's goroutine past 8 KiB of stack for every call (issue 28).
	stack := make([]openElem, 0, 8)
	root := false
	for i < len(s) {
		if s[i] != '<' {
			end := strings.IndexByte(s[i:], '<')
			if end < 0 {
				end = len(s)
			} else {
				end += i
			}
			txt, ok := charData(s[i:end], false)
			if !ok {
				return nil, false
			}
			if len(stack) == 0 {
				if !isSpace(txt) {
					return nil, false
				}
			} else {
				top := &stack[len(stack)-1]
				if top.texts == 0 {
					top.text = txt
				}
				top.texts++
			}
			i = end
			continue
		}
		if i+1 >= len(s) {
			return nil, false
		}
		switch s[i+1] {
		case '!', '?':
			return nil, false
		case '/':
			j, ok := scanName(s, i+2)
			if !ok || len(stack) == 0 {
				return nil, false
			}
			name := s[i+2 : j]
			j = skipSpace(s, j)
			if j >= len(s) || s[j] != '>' {
				return nil, false
			}
			top := &stack[len(stack)-1]
			if top.name != name || !b.closeElem(top) {
				return nil, false
			}
			stack = stack[:len(stack)-1]
			i = j + 1
			continue
		}

		// A start tag.
		if len(stack) == 0 && root {
			return nil, false // a second root element
		}
		j, ok := scanName(s, i+1)
		if !ok {
			return nil, false
		}
		name := s[i+1 : j]
		attrs = attrs[:0]
		empty := false
		for {
			k := skipSpace(s, j)
			if k >= len(s) {
				return nil, false
			}
			if s[k] == '>' {
				j = k + 1
				break
			}
			if s[k] == '/' {
				if k+1 >= len(s) || s[k+1] != '>' {
					return nil, false
				}
				empty, j = true, k+2
				break
			}
			if k == j || len(attrs) == maxStreamAttrs {
				return nil, false // no space before the attribute, or too many of them
			}
			e, ok := scanName(s, k)
			if !ok {
				return nil, false
			}
			space, key := splitName(s[k:e])
			e = skipSpace(s, e)
			if e >= len(s) || s[e] != '=' {
				return nil, false
			}
			e = skipSpace(s, e+1)
			if e >= len(s) || (s[e] != '"' && s[e] != '\'') {
				return nil, false
			}
			end := strings.IndexByte(s[e+1:], s[e])
			if end < 0 {
				return nil, false
			}
			val, ok := charData(s[e+1:e+1+end], true)
			if !ok {
				return nil, false
			}
			for a := range attrs {
				if attrs[a].Space == space && attrs[a].Key == key {
					return nil, false // a repeated attribute
				}
			}
			attrs = append(attrs, etree.Attr{Space: space, Key: key, Value: val})
			j = e + 1 + end + 1
		}
		if len(stack)+1 > lim.MaxDepth {
			return nil, false
		}
		var parent *openElem
		if len(stack) > 0 {
			parent = &stack[len(stack)-1]
		}
		top, ok := b.openElem(parent, name, attrs)
		if !ok {
			return nil, false
		}
		root = true
		if empty {
			if !b.closeElem(&top) {
				return nil, false
			}
		} else {
			stack = append(stack, top)
		}
		i = j
	}
	if len(stack) != 0 || !root {
		return nil, false
	}
	return b.t, true
}

// openElem adds the node of a start tag under parent (nil for the root).
func (b *treeBuilder) openElem(parent *openElem, name string, attrs []etree.Attr) (openElem, bool) {
	idx := int32(len(b.t.nodes))
	o := openElem{idx: idx, prev: -1, ndecl: len(b.decls), name: name}
	for i := range attrs {
		if p, ok := declPrefix(&attrs[i]); ok {
			b.decls = append(b.decls, decl{p, attrs[i].Value})
		}
	}
	if len(b.decls) > maxStreamDecls {
		return o, false
	}
	prefix, local := splitName(name)
	n := node{local: local, prefix: prefix, first: -1, next: -1}
	n.space, n.nsOK = b.lookup(prefix)
	if f := b.attrs(&n, idx, attrs); f != nil {
		return o, false // the reference path says which fault, and whether one comes first
	}
	b.t.nodes = append(b.t.nodes, n)
	if parent != nil {
		if parent.prev < 0 {
			b.t.nodes[parent.idx].first = idx
		} else {
			b.t.nodes[parent.prev].next = idx
		}
		parent.prev = idx
		b.t.nodes[parent.idx].nchild++
	}
	return o, true
}

// closeElem ends the element of o.
func (b *treeBuilder) closeElem(o *openElem) bool {
	n := &b.t.nodes[o.idx]
	if n.nchild == 0 {
		switch o.texts {
		case 0:
		case 1:
			n.text = o.text
		default:
			return false
		}
	}
	b.decls = b.decls[:o.ndecl]
	return true
}

// xmlDecl returns the length of the leading XML declaration of s when it
// has the common form (version 1.0, an encoding name, standalone), else -1.
func xmlDecl(s string) int {
	rest, ok := strings.CutPrefix(s, `<?xml version="1.0"`)
	if !ok {
		return -1
	}
	for _, attr := range [...]string{` encoding="`, ` standalone="`} {
		r, ok := strings.CutPrefix(rest, attr)
		if !ok {
			continue
		}
		end := strings.IndexByte(r, '"')
		if end <= 0 {
			return -1
		}
		for k := 0; k < end; k++ {
			if c := r[k]; !(isASCIILetter(c) || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
				return -1
			}
		}
		rest = r[end+1:]
	}
	rest = strings.TrimLeft(rest, " ")
	if !strings.HasPrefix(rest, "?>") {
		return -1
	}
	return len(s) - len(rest) + 2
}

func isASCIILetter(c byte) bool { return 'A' <= c&^0x20 && c&^0x20 <= 'Z' }

// scanName returns the end of the name at s[i:]: ASCII, starting with a
// letter or '_', at most one ':' with a name on both sides. ok is false
// for anything else, also when a byte encoding/xml would read as part of
// the name follows.
func scanName(s string, i int) (end int, ok bool) {
	start, colon := i, -1
	for ; i < len(s); i++ {
		c := s[i]
		switch nameClass[c] {
		case nameStart:
		case nameChar:
			if i == start || i == colon+1 {
				return 0, false
			}
		case nameColon:
			if colon >= 0 || i == start {
				return 0, false
			}
			colon = i
		default:
			if c >= utf8.RuneSelf || i == start || i == colon+1 {
				return 0, false
			}
			return i, true
		}
	}
	return 0, false // a name runs to the end of the document
}

// The classes of the bytes of a name for scanName, one look-up a byte:
// a letter or '_' (may start a name), a digit, '.' or '-' (may not), ':',
// anything else (0: ends the name, or is refused).
const (
	nameStart = 1 + iota
	nameChar
	nameColon
)

var nameClass = func() (t [256]byte) {
	for c := 0; c < 256; c++ {
		switch b := byte(c); {
		case isASCIILetter(b) || b == '_':
			t[c] = nameStart
		case '0' <= b && b <= '9' || b == '.' || b == '-':
			t[c] = nameChar
		case b == ':':
			t[c] = nameColon
		}
	}
	return t
}()

// plainChar are the bytes charData passes over without a second look in
// text and in attribute values alike: ASCII but C0 controls other than
// tab and newline, '<', '&' and '>'.
var plainChar = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '<' && c != '&' && c != '>'
	}
	t['\t'], t['\n'] = true, true
	return t
}()

// splitName splits a name scanName accepted into prefix and local name.
func splitName(n string) (prefix, local string) {
	if p, l, ok := strings.Cut(n, ":"); ok {
		return p, l
	}
	return "", n
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// charData decodes character data (attr: an attribute value without its
// quotes) the way encoding/xml would, when it holds only characters XML
// allows, the predefined entities and character references; ok is false
// for anything else (carriage returns, "]]>" in text, '<' in a value).
func charData(s string, attr bool) (string, bool) {
	amp := false
	i := 0
	for i < len(s) && plainChar[s[i]] { // what the loop below passes over, one look-up a byte
		i++
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 || !isInCharRange(r) {
				return "", false
			}
			i += size
			continue
		case c < 0x20 && c != '\t' && c != '\n', c == '<':
			return "", false
		case c == '&':
			amp = true
		case c == '>' && !attr && i >= 2 && s[i-1] == ']' && s[i-2] == ']':
			return "", false
		}
		i++
	}
	if !amp {
		return s, true
	}
	var sb strings.Builder
	sb.Grow(len(s))
	for {
		i := strings.IndexByte(s, '&')
		if i < 0 {
			sb.WriteString(s)
			return sb.String(), true
		}
		sb.WriteString(s[:i])
		s = s[i+1:]
		end := strings.IndexByte(s, ';')
		if end < 0 {
			return "", false
		}
		switch s[:end] {
		case "amp":
			sb.WriteByte('&')
		case "lt":
			sb.WriteByte('<')
		case "gt":
			sb.WriteByte('>')
		case "quot":
			sb.WriteByte('"')
		case "apos":
			sb.WriteByte('\'')
		default:
			r, ok := charRef(s[:end])
			if !ok {
				return "", false
			}
			sb.WriteRune(r)
		}
		s = s[end+1:]
	}
}

// charRef reads a character reference without its '&' and ';' ("#225",
// "#xE1") to a character XML allows.
func charRef(ref string) (rune, bool) {
	digits, ok := strings.CutPrefix(ref, "#")
	if !ok || digits == "" {
		return 0, false
	}
	base := rune(10)
	if h, ok := strings.CutPrefix(digits, "x"); ok {
		base, digits = 16, h
	}
	if digits == "" || len(digits) > 8 {
		return 0, false
	}
	var r rune
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		var d rune
		switch {
		case '0' <= c && c <= '9':
			d = rune(c - '0')
		case base == 16 && 'a' <= c && c <= 'f':
			d = rune(c-'a') + 10
		case base == 16 && 'A' <= c && c <= 'F':
			d = rune(c-'A') + 10
		default:
			return 0, false
		}
		r = r*base + d
	}
	if !isInCharRange(r) {
		return 0, false
	}
	return r, true
}

// isInCharRange is encoding/xml's test of the characters XML allows.
func isInCharRange(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
