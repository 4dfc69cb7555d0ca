package wsdl

import (
	"strings"
	"testing"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodingSchemaDefinesWhatTheWSDLUses: every soapenc:* name the WSDL
// refers to (types of fields and parts, the Array base, the arrayType
// attribute) is declared by the embedded schema, under its namespace.
func TestEncodingSchemaDefinesWhatTheWSDLUses(t *testing.T) {
	schema := etree.NewDocument()
	require.NoError(t, schema.ReadFromBytes(EncodingSchema()))
	root := schema.Root()
	require.NotNil(t, root)
	assert.Equal(t, "schema", root.Tag)
	assert.Equal(t, NSSOAPEnc, root.SelectAttrValue("targetNamespace", ""))
	declared := map[string]bool{}
	for _, e := range root.ChildElements() {
		if name := e.SelectAttrValue("name", ""); name != "" {
			kind := e.Tag
			if kind == "complexType" || kind == "simpleType" {
				kind = "type"
			}
			declared[kind+" "+name] = true
		}
	}

	doc := etree.NewDocument()
	require.NoError(t, doc.ReadFromBytes(New(Options{}).Bytes(testAddress)))
	used := map[string]bool{}
	var walk func(e *etree.Element)
	walk = func(e *etree.Element) {
		for _, a := range e.Attr {
			if !strings.HasPrefix(a.Value, "soapenc:") {
				continue
			}
			name := strings.TrimPrefix(a.Value, "soapenc:")
			if a.Key == "ref" && e.Tag == "attribute" {
				used["attribute "+name] = true
			} else if a.Key == "type" || a.Key == "base" {
				used["type "+name] = true
			}
		}
		for _, c := range e.ChildElements() {
			walk(c)
		}
	}
	walk(doc.Root())
	require.True(t, used["type Array"] && used["attribute arrayType"] && used["type string"],
		"the WSDL no longer uses what this test expects: %v", used)
	for u := range used {
		assert.True(t, declared[u], "the encoding schema lacks %s", u)
	}
}

// TestWSDLImportsEncodingSchemaFromBridge: each schema's soapenc import has
// a location on the bridge's own address, escaped like the soap:address.
func TestWSDLImportsEncodingSchemaFromBridge(t *testing.T) {
	for _, addr := range []string{testAddress, `http://x/"><evil/>&`} {
		doc := etree.NewDocument()
		require.NoError(t, doc.ReadFromBytes(New(Options{}).Bytes(addr)))
		imports := 0
		for _, imp := range doc.FindElements("//types/schema/import") {
			if imp.SelectAttrValue("namespace", "") != NSSOAPEnc {
				assert.Empty(t, imp.SelectAttrValue("schemaLocation", ""), "only the encoding schema is served")
				continue
			}
			imports++
			assert.Equal(t, addr+"?xsd=soapenc", imp.SelectAttrValue("schemaLocation", ""))
		}
		assert.Equal(t, 3, imports, "one per schema")
		assert.Nil(t, doc.FindElement("//evil"))
	}
}

// TestEncodingSchemaNamesNothingOfItsOwn: zeep resolves a name in the
// encoding namespace by fetching the namespace URL, even inside the schema
// of that namespace; so no prefix may be bound to it there, and the
// namespace appears only as the targetNamespace.
func TestEncodingSchemaNamesNothingOfItsOwn(t *testing.T) {
	assert.Equal(t, 1, strings.Count(string(EncodingSchema()), NSSOAPEnc))
	doc := etree.NewDocument()
	require.NoError(t, doc.ReadFromBytes(EncodingSchema()))
	assert.Empty(t, doc.Root().SelectAttrValue("xmlns", ""), "no default namespace that QNames would resolve into")
}
