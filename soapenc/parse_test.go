package soapenc

import (
	"errors"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/require"
)

// shape renders what decoding reads of a tree: elements with prefix, name
// and attributes, text and directives (comments and processing
// instructions are not kept by parseTree, so not rendered).
func shape(b *strings.Builder, t etree.Token) {
	switch t := t.(type) {
	case *etree.Element:
		b.WriteString("<" + t.Space + ":" + t.Tag)
		for _, a := range t.Attr {
			b.WriteString(" " + a.Space + ":" + a.Key + "=" + a.Value)
		}
		b.WriteString(">")
		for _, c := range t.Child {
			shape(b, c)
		}
		b.WriteString("</>")
	case *etree.CharData:
		b.WriteString("[" + t.Data + "]")
	case *etree.Directive:
		b.WriteString("<!" + t.Data + ">")
	}
}

func docShape(d *etree.Document) string {
	var b strings.Builder
	for _, c := range d.Child {
		shape(&b, c)
	}
	return b.String()
}

// parseTree must read every document as etree's ReadFromBytes does: the
// captures and goldens, and the malformed and edge cases below.
func TestParseTreeMatchesEtree(t *testing.T) {
	var inputs []string
	err := filepath.Walk(testdataDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".xml") {
			b, rerr := os.ReadFile(p)
			inputs = append(inputs, string(b))
			return rerr
		}
		return err
	})
	require.NoError(t, err)
	require.Greater(t, len(inputs), 10)
	inputs = append(inputs,
		`<a x="1" x="2" y="3"/>`,              // repeated attribute: the last wins
		`<p:a xmlns:p="u"><p:b>t</p:b></p:a>`, // prefixes kept as written
		`<a><b></a></b>`,                      // crossed end tags
		`<a><b></c></a>`,                      // wrong end tag
		`<a>`,                                 // unclosed
		`</a>`,                                // end tag without start
		`<a/><b/>`,                            // two roots (decode refuses later)
		`<a>x<!-- c -->y<![CDATA[<z>]]></a>`,
		`<?xml version="1.0" encoding="windows-1250"?><a>č</a>`,
		`<!DOCTYPE a><a/>`,
		"<a>\x00</a>",
		`<a b="&lt;&amp;"/>`,
		`<a>&bogus;</a>`,
		``,
		strings.Repeat("<a>", 70)+strings.Repeat("</a>", 70), // too deep
	)
	for _, in := range inputs {
		want := etree.Document{ReadSettings: etree.ReadSettings{MaxDepth: 64}}
		werr := want.ReadFromBytes([]byte(in))
		got, gerr := parseTree([]byte(in), 64)
		if werr != nil {
			require.Error(t, gerr, "%.200q", in)
			require.Equal(t, errors.Is(werr, etree.ErrMaxDepth), errors.Is(gerr, etree.ErrMaxDepth), "%.200q", in)
			require.Equal(t, parseFault(werr).String, parseFault(gerr).String, "%.200q", in)
			continue
		}
		require.NoError(t, gerr, "%.200q", in)
		require.Equal(t, docShape(&want), docShape(got), "%.200q", in)
	}
}

// The Content-Type fast path reads what mime.ParseMediaType reads, or
// leaves the header to it.
func FuzzPlainTextXML(f *testing.F) {
	for _, ct := range []string{"text/xml", "text/xml; charset=utf-8", "text/xml;charset=UTF-8", "TEXT/XML; CHARSET=windows-1250",
		"text/xml; charset=\"utf-8\"", "text/xml ; charset=utf-8", "text/xmlx", "text/xml; charset=", "text/xml; charset=utf-8; x=y",
		"application/soap+xml; charset=utf-8", "text/xml;  charset=ISO-8859-2", "text/xml; charset=utf-8 "} {
		f.Add(ct)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		cs, ok := plainTextXML(ct)
		if !ok {
			return
		}
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || mt != "text/xml" || params["charset"] != cs {
			t.Fatalf("%q: fast path %q, mime %q %v %v", ct, cs, mt, params, err)
		}
	})
}

func TestMediaType(t *testing.T) {
	for ct, want := range map[string]string{
		"text/xml":                         "",
		"text/xml; charset=utf-8":          "utf-8",
		"text/xml;charset=UTF-8":           "UTF-8",
		`text/xml; charset="windows-1250"`: "windows-1250", // the slow path
		"Text/XML ; charset=utf-8":         "utf-8",
	} {
		cs, f := mediaType(ct)
		require.Nil(t, f, ct)
		require.Equal(t, want, cs, ct)
	}
	for _, ct := range []string{"text/html", "text/xml; charset", "application/soap+xml", "text/xmlx"} {
		_, f := mediaType(ct)
		require.NotNil(t, f, ct)
	}
}
