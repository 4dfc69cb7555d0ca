package soapenc

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"

	"github.com/beevik/etree"
)

// parseTree reads body into an etree document, as etree's own
// Document.ReadFromBytes does (strict, raw tokens, end tags matched by
// prefix and name, depth bounded, a repeated attribute keeping its last
// value), but with the encoding/xml decoder reading a *bytes.Reader.
//
// Why not ReadFromBytes: etree wraps its input in a byte-counting reader
// that hides io.ByteReader, so encoding/xml puts a 4 KiB bufio.Reader in
// front of every request, more than the rest of parsing a small SOAP call
// allocates. A bytes.Reader is an io.ByteReader and needs no buffer.
//
// The tree holds what decoding looks at: elements (Space is the prefix as
// written), attributes, character data and directives. Comments and
// processing instructions are left out; the attributes' Element() is nil.
func parseTree(body []byte, maxDepth int) (*etree.Document, error) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = true
	// The body is UTF-8 already (toUTF8); a declared encoding is not
	// applied a second time, as with etree's default charset reader.
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }

	seen := make(map[xml.Name]int) // attributes of the element at hand
	doc := etree.NewDocument()
	stack := make([]*etree.Element, 1, 16)
	stack[0] = &doc.Element
	for {
		t, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			if len(stack) != 1 {
				return nil, etree.ErrXML
			}
			return doc, nil
		}
		if err != nil {
			return nil, err
		}
		top := stack[len(stack)-1]
		switch t := t.(type) {
		case xml.StartElement:
			if len(stack) > maxDepth {
				return nil, etree.ErrMaxDepth
			}
			e := &etree.Element{Space: t.Name.Space, Tag: t.Name.Local}
			if len(t.Attr) > 0 {
				e.Attr = make([]etree.Attr, 0, len(t.Attr))
			}
			for _, a := range t.Attr {
				if i, dup := seen[a.Name]; dup {
					e.Attr[i].Value = a.Value
					continue
				}
				if len(t.Attr) > 1 {
					seen[a.Name] = len(e.Attr)
				}
				e.Attr = append(e.Attr, etree.Attr{Space: a.Name.Space, Key: a.Name.Local, Value: a.Value})
			}
			clear(seen)
			top.AddChild(e)
			stack = append(stack, e)
		case xml.EndElement:
			if top.Tag != t.Name.Local || top.Space != t.Name.Space {
				return nil, etree.ErrXML
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			top.AddChild(etree.NewText(string(t)))
		case xml.Directive:
			top.AddChild(etree.NewDirective(string(t)))
		}
	}
}
