package soapenc

import (
	"bytes"
	"encoding/xml"
	"errors"
	"mime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/beevik/etree"
	"golang.org/x/net/html/charset"
)

// Limits bound what one request may cost. A zero field takes its default.
type Limits struct {
	MaxBytes int64 // request body size (default 1 MiB)
	MaxDepth int   // element nesting, Envelope = 1; also depth of the resolved value tree (default 64)
	MaxRefs  int   // elements carrying an id, i.e. multi-reference targets (default 1000)
	// MaxElements caps the element count (default 10000; real requests have
	// under 100). Parsing costs some 200 bytes of memory per element, so a
	// body of tiny elements would cost 200 times its size.
	MaxElements int
	// MaxNodes is how many values href resolution may create beyond the
	// number of elements in the document (default 10000). Shared references copy
	// the referenced value, so without it a "billion laughs" of hrefs would
	// expand exponentially.
	MaxNodes int
}

// DefaultLimits returns the limits the bridge uses unless configured.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 1 << 20, MaxDepth: 64, MaxRefs: 1000, MaxElements: 10000, MaxNodes: 10000}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxRefs <= 0 {
		l.MaxRefs = d.MaxRefs
	}
	if l.MaxElements <= 0 {
		l.MaxElements = d.MaxElements
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = d.MaxNodes
	}
	return l
}

// Call is one decoded RPC request.
type Call struct {
	Operation QName    // the call element: operation name and its namespace
	Params    []*Value // the parts, in document order, multi-references resolved
	Header    []*Value // header entries that did not demand to be understood
	// Wire is how the request was written; decoding never depends on it.
	Wire Wire

	nodes  int // values created while decoding (bounded by budget)
	budget int
	mem    *callMem // where the Call and its Values live (Release)
}

// Release hands the Call's memory back for another request: the Call,
// its Values and their member lists come from a pool (issue 28: some
// 2.5 KB of a paymentStatus). Nothing may use c or any of its Values
// afterwards, and c is released once at most; the strings read from them
// stay valid. Calling it is optional (without it the memory is collected
// as usual).
func (c *Call) Release() {
	if c == nil || c.mem == nil {
		return
	}
	c.mem.release()
}

// callMem is the memory of one decoded Call: the Call itself, and room
// for the Values and member lists of a usual request (paymentStatus needs
// 4 Values, createPayment some 20); a request that needs more gets the
// rest allocated (decoder.newValue, decoder.pointers).
type callMem struct {
	call Call
	vals []Value
	ptrs []*Value
}

const (
	callMemValues   = 32
	callMemPointers = 48
)

var callMems = sync.Pool{New: func() any {
	return &callMem{vals: make([]Value, 0, callMemValues), ptrs: make([]*Value, 0, callMemPointers)}
}}

// release zeroes what the request used, so that the pool keeps none of
// its strings alive, and hands m back.
func (m *callMem) release() {
	clear(m.vals)
	clear(m.ptrs)
	m.vals, m.ptrs = m.vals[:0], m.ptrs[:0]
	m.call = Call{}
	callMems.Put(m)
}

// Param returns the first part called name, or nil.
func (c *Call) Param(name string) *Value {
	if c == nil {
		return nil
	}
	for _, p := range c.Params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

const nsXML = "http://www.w3.org/XML/1998/namespace"

// Decode reads a SOAP 1.1 RPC/encoded request. contentType is the HTTP
// Content-Type (may be empty); its charset parameter, or else the XML
// declaration, says how the body is encoded. Every error is a *Fault.
func Decode(body []byte, contentType string, lim Limits) (*Call, error) {
	c, f := decode(body, contentType, lim)
	if f != nil {
		return nil, f
	}
	return c, nil
}

func decode(body []byte, contentType string, lim Limits) (*Call, *Fault) {
	lim = lim.withDefaults()
	if int64(len(body)) > lim.MaxBytes {
		return nil, clientFault("request too large")
	}
	cs := ""
	if contentType != "" {
		var f *Fault
		if cs, f = mediaType(contentType); f != nil {
			return nil, f
		}
	}
	body, charsetName, f := toUTF8(body, cs)
	if f != nil {
		return nil, f
	}
	// A DOCTYPE is never legitimate in SOAP (SOAP 1.1 section 3). encoding/xml
	// would not expand its entities anyway; refusing it up front gives the
	// client a clear reason and skips parsing the rest.
	if bytes.Contains(body, []byte("<!DOCTYPE")) {
		return nil, clientFault("DOCTYPE is not allowed in a SOAP message")
	}

	// Start tags are the '<' that are not end tags: a close upper bound of the
	// element count, checked before the parser spends memory on them.
	starts := startTags(body)
	if starts > lim.MaxElements {
		return nil, clientFault("too many elements (limit " + itoa(lim.MaxElements) + ")")
	}

	// The node slice of a normal request is allocated once.
	t, ok := streamTree(body, lim, min(starts+1, 4096))
	if !ok {
		var f *Fault
		if t, f = referenceTree(body, lim, min(starts+1, 4096)); f != nil {
			return nil, f
		}
	}
	// The Values below copy what they need out of the tree (strings, never
	// a node), and so does the Wire: the tree goes back to the pool.
	defer t.release()
	env := &t.nodes[0]
	if !env.nsOK || env.local != "Envelope" {
		return nil, clientFault("not a SOAP envelope")
	}
	switch env.space {
	case NSEnvelope:
	case NSEnvelope12:
		return nil, &Fault{Code: FaultVersionMismatch, String: "SOAP 1.2 is not supported; send a SOAP 1.1 envelope"}
	default:
		return nil, &Fault{Code: FaultVersionMismatch, String: "unknown SOAP envelope namespace"}
	}

	header, bodyEl := int32(-1), int32(-1)
	for i := env.first; i >= 0; i = t.nodes[i].next {
		n := &t.nodes[i]
		if n.space != NSEnvelope {
			continue
		}
		switch n.local {
		case "Header":
			if header < 0 && bodyEl < 0 {
				header = i
			}
		case "Body":
			if bodyEl < 0 {
				bodyEl = i
			}
		}
	}
	if bodyEl < 0 {
		return nil, clientFault("SOAP Body is missing")
	}

	// The Call and its Values come from a pooled callMem: Release hands it
	// back, and a fault hands it back here.
	mem := callMems.Get().(*callMem)
	fail := func(f *Fault) (*Call, *Fault) {
		mem.release()
		return nil, f
	}
	d := decoder{lim: lim, t: t, budget: len(t.nodes) + lim.MaxNodes, mem: mem}
	c := &mem.call
	c.mem = mem
	if header >= 0 {
		c.Header = d.pointers(int(t.nodes[header].nchild))
		for i := t.nodes[header].first; i >= 0; i = t.nodes[i].next {
			n := &t.nodes[i]
			// An entry addressed to another actor is not ours to understand.
			if n.mustUnd && (!n.hasActor || n.actor == "" || n.actor == actorNext) {
				return fail(&Fault{Code: FaultMustUnderstand, String: "header entry " + QuoteName(n.local) + " was not understood"})
			}
			v, f := d.value(i, n.local, QName{}, 2)
			if f != nil {
				return fail(f)
			}
			c.Header = append(c.Header, v)
		}
	}

	if t.nodes[bodyEl].nchild == 0 {
		return fail(clientFault("SOAP Body is empty"))
	}
	call := int32(-1)
	for i := t.nodes[bodyEl].first; i >= 0; i = t.nodes[i].next {
		n := &t.nodes[i]
		if n.local == "multiRef" || n.rootFalse {
			continue
		}
		call = i
		break
	}
	if call < 0 {
		return fail(clientFault("SOAP Body holds no RPC call element"))
	}
	cn := &t.nodes[call]
	if !cn.nsOK {
		return fail(clientFault("undeclared namespace prefix on " + QuoteName(cn.local)))
	}
	c.Operation = QName{Space: cn.space, Local: cn.local}
	c.Params = d.pointers(int(cn.nchild))
	for i := cn.first; i >= 0; i = t.nodes[i].next {
		v, f := d.value(i, t.nodes[i].local, QName{}, 2)
		if f != nil {
			return fail(f)
		}
		c.Params = append(c.Params, v)
	}
	c.nodes, c.budget = d.nodes, d.budget
	c.Wire = wireOf(t, bodyEl, call, header >= 0)
	c.Wire.Charset = charsetName
	return c, nil
}

// referenceTree is the tree of body by way of an etree document: the
// reference the streaming builder (stream.go) is held to, and the path of
// every document that builder does not take.
func referenceTree(body []byte, lim Limits, size int) (*tree, *Fault) {
	doc, err := parseTree(body, lim.MaxDepth)
	if err != nil {
		return nil, parseFault(err)
	}
	var root *etree.Element
	for _, t := range doc.Child {
		switch t := t.(type) {
		case *etree.Element:
			if root != nil {
				return nil, clientFault("not well-formed XML: more than one root element")
			}
			root = t
		case *etree.CharData:
			if !isSpace(t.Data) {
				return nil, clientFault("not well-formed XML: text outside the root element")
			}
		case *etree.Directive:
			return nil, clientFault("DOCTYPE and other declarations are not allowed in a SOAP message")
		}
	}
	if root == nil {
		return nil, clientFault("not well-formed XML: no root element")
	}

	return buildTree(root, lim, size)
}

const actorNext = "http://schemas.xmlsoap.org/soap/actor/next"

// mediaType checks the Content-Type of a SOAP 1.1 request.
func mediaType(contentType string) (charset string, f *Fault) {
	// The forms SOAP clients send (PHP, Axis, suds, .NET) are answered
	// without mime.ParseMediaType, which builds a map for every request.
	if cs, ok := plainTextXML(contentType); ok {
		return cs, nil
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", clientFault("malformed Content-Type")
	}
	switch mt {
	case "text/xml":
		return params["charset"], nil
	case "application/soap+xml":
		return "", &Fault{Code: FaultVersionMismatch, String: "SOAP 1.2 (application/soap+xml) is not supported; send SOAP 1.1 as text/xml"}
	}
	return "", clientFault("Content-Type must be text/xml for SOAP 1.1")
}

// startTags counts the '<' of b not followed by '/': what
// bytes.Count(b, "<") - bytes.Count(b, "</") counts, in one pass.
func startTags(b []byte) int {
	n := 0
	for {
		i := bytes.IndexByte(b, '<')
		if i < 0 {
			return n
		}
		if i+1 == len(b) || b[i+1] != '/' {
			n++
		}
		b = b[i+1:]
	}
}

// plainTextXML recognises "text/xml" alone or with one charset parameter
// of plain token characters (what mime.ParseMediaType would read the same).
func plainTextXML(ct string) (charset string, ok bool) {
	// The exact spellings first: what every client sends, without
	// EqualFold's case folding.
	if len(ct) < 8 || ct[:8] != "text/xml" && !strings.EqualFold(ct[:8], "text/xml") {
		return "", false
	}
	rest := ct[8:]
	if rest == "" {
		return "", true
	}
	rest, ok = strings.CutPrefix(rest, ";")
	if !ok {
		return "", false
	}
	rest = strings.TrimLeft(rest, " ")
	if len(rest) < 8 || rest[:8] != "charset=" && !strings.EqualFold(rest[:8], "charset=") {
		return "", false
	}
	cs := rest[8:]
	if cs == "" {
		return "", false
	}
	for i := 0; i < len(cs); i++ {
		c := cs[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return "", false
		}
	}
	return cs, true
}

// toUTF8 returns body as UTF-8. The charset of the Content-Type wins
// (RFC 3023); without one, or when it says UTF-8, the XML declaration's
// encoding is used. Non-UTF-8 input is transcoded here, so the XML parser
// only ever sees UTF-8 (etree's default CharsetReader passes it through).
// name is the canonical name of a charset other than UTF-8, else "".
func toUTF8(body []byte, cs string) (out []byte, name string, f *Fault) {
	body = bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF"))
	if cs == "" || isUTF8Label(cs) {
		cs = declEncoding(body)
	}
	if cs == "" || isUTF8Label(cs) {
		if !utf8.Valid(body) {
			return nil, "", clientFault("request is not valid UTF-8")
		}
		return body, "", nil
	}
	enc, name := charset.Lookup(cs)
	if enc == nil {
		return nil, "", clientFault("unsupported charset " + QuoteName(cs))
	}
	if name == "utf-8" {
		if !utf8.Valid(body) {
			return nil, "", clientFault("request is not valid UTF-8")
		}
		return body, "", nil
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return nil, "", clientFault("request is not valid " + name)
	}
	return out, name, nil
}

func isUTF8Label(s string) bool {
	return s == "utf-8" || s == "UTF-8" || strings.EqualFold(s, "utf-8") || strings.EqualFold(s, "utf8")
}

// declEncoding returns the encoding pseudo-attribute of a leading XML
// declaration, or "".
func declEncoding(b []byte) string {
	if !bytes.HasPrefix(b, []byte("<?xml")) {
		return ""
	}
	end := bytes.Index(b, []byte("?>"))
	if end < 0 || end > 200 {
		return ""
	}
	decl := b[5:end] // read as bytes: only the name found is a string
	i := bytes.Index(decl, []byte("encoding"))
	if i < 0 {
		return ""
	}
	rest := bytes.TrimLeft(decl[i+len("encoding"):], " \t\r\n")
	if !bytes.HasPrefix(rest, []byte("=")) {
		return ""
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if len(rest) == 0 || (rest[0] != '"' && rest[0] != '\'') {
		return ""
	}
	q := rest[0]
	rest = rest[1:]
	j := bytes.IndexByte(rest, q)
	if j < 0 {
		return ""
	}
	if name := rest[:j]; bytes.EqualFold(name, []byte("UTF-8")) {
		return "UTF-8" // what nearly every request declares, without a copy
	}
	return string(rest[:j])
}

func parseFault(err error) *Fault {
	if errors.Is(err, etree.ErrMaxDepth) {
		return clientFault("XML is nested too deeply")
	}
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return clientFault("not well-formed XML (line " + strconv.Itoa(se.Line) + ")")
	}
	return clientFault("not well-formed XML")
}

func isSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return false
		}
	}
	return true
}

func isFalse(s string) bool {
	s = strings.TrimSpace(s)
	return s == "0" || strings.EqualFold(s, "false")
}

func isTrue(s string) bool {
	s = strings.TrimSpace(s)
	return s == "1" || strings.EqualFold(s, "true")
}
