package wsdl

import (
	"bytes"
	_ "embed"
	"net/http"
	"strings"
	"sync"

	"github.com/beevik/etree"
)

// Options configure the generated document.
type Options struct {
	// ServiceNamespace is the target namespace, the impl/intf prefix and the
	// body namespace of replies; DefaultServiceNamespace when empty.
	ServiceNamespace string
}

// Doc is the rendered WSDL of one service namespace. Only the service
// address varies per request (the soap:address and the location of the
// encoding schema, which is served beside it), so the document is rendered
// once around it and the result per address is cached (a bounded number of
// addresses, since an address derived from request headers is chosen by the
// client).
type Doc struct {
	ns    string
	parts [][]byte // the document split at each address

	mu    sync.Mutex
	cache map[string][]byte
}

// maxCached bounds the per-address cache; further addresses are assembled
// on each call, which is cheap (two copies).
const maxCached = 16

// marker stands in for the address while rendering; it needs no escaping.
const marker = "urn:soapbridge:address"

// New renders the service description for opts.
func New(opts Options) *Doc {
	ns := opts.ServiceNamespace
	if ns == "" {
		ns = DefaultServiceNamespace
	}
	doc := build(ns)
	doc.Indent(2)
	b, err := doc.WriteToBytes()
	if err != nil { // writing to memory does not fail
		panic("wsdl: render: " + err.Error())
	}
	parts := bytes.Split(b, []byte(marker))
	if len(parts) < 2 {
		panic("wsdl: address marker not rendered")
	}
	return &Doc{ns: ns, parts: parts, cache: map[string][]byte{}}
}

//go:embed soapenc.xsd
var encodingSchema []byte

// EncodingSchemaQuery is the query that asks the SOAP address for the
// SOAP-encoding schema: the WSDL imports it from {address}?xsd=soapenc.
const EncodingSchemaQuery = "xsd=soapenc"

// EncodingSchema returns the SOAP 1.1 encoding schema
// (http://schemas.xmlsoap.org/soap/encoding/) the WSDL imports, to be served
// at {address}?xsd=soapenc as text/xml. Schema-validating clients (zeep)
// resolve every import; without a location of the bridge's own they fetch
// the schema from the internet and fail offline. The slice is shared:
// callers must not modify it.
func EncodingSchema() []byte { return encodingSchema }

// WantsEncodingSchema reports whether the query of r asks for the encoding
// schema (?xsd=soapenc, any letter case). The SOAP address must serve it on
// GET beside the WSDL: the WSDL's imports point there.
func WantsEncodingSchema(r *http.Request) bool {
	for k, vs := range r.URL.Query() {
		if strings.EqualFold(k, "xsd") && len(vs) > 0 && strings.EqualFold(vs[0], "soapenc") {
			return true
		}
	}
	return false
}

// Namespace returns the service namespace the document was rendered for.
func (d *Doc) Namespace() string { return d.ns }

// Bytes returns the WSDL whose soap:address is address (escaped here). The
// slice is shared: callers must not modify it.
func (d *Doc) Bytes(address string) []byte {
	d.mu.Lock()
	b, ok := d.cache[address]
	d.mu.Unlock()
	if ok {
		return b
	}
	b = bytes.Join(d.parts, []byte(escapeAttr(address)))
	d.mu.Lock()
	if len(d.cache) < maxCached {
		d.cache[address] = b
	}
	d.mu.Unlock()
	return b
}

var attrEscaper = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;",
	"\t", "&#x9;", "\n", "&#xA;", "\r", "&#xD;",
)

func escapeAttr(s string) string { return attrEscaper.Replace(s) }

// build assembles the document with etree. Prefixes and order follow the
// original Axis 1.4 output so that a side-by-side reading is easy; the
// messages come in operation order (Axis used hash order).
func build(ns string) *etree.Document {
	doc := etree.NewDocument()
	doc.CreateProcInst("xml", `version="1.0" encoding="UTF-8"`)
	defs := doc.CreateElement("wsdl:definitions")
	defs.CreateAttr("targetNamespace", ns)
	defs.CreateAttr("xmlns:apachesoap", NSApacheSOAP)
	defs.CreateAttr("xmlns:impl", ns)
	defs.CreateAttr("xmlns:intf", ns)
	defs.CreateAttr("xmlns:soapenc", NSSOAPEnc)
	defs.CreateAttr("xmlns:tns1", NSTypes)
	defs.CreateAttr("xmlns:tns2", NSGate)
	defs.CreateAttr("xmlns:wsdl", NSWSDL)
	defs.CreateAttr("xmlns:wsdlsoap", NSWSDLSOAP)
	defs.CreateAttr("xmlns:xsd", NSXSD)
	defs.CreateComment(" EPaymentServiceV2 served by soapbridge: SOAP 1.1, rpc/encoded ")

	types := defs.CreateElement("wsdl:types")
	schemaNS := map[string]string{"tns1": NSTypes, "tns2": NSGate, "impl": ns}
	for _, prefix := range []string{"tns1", "tns2", "impl"} {
		schema := types.CreateElement("schema")
		schema.CreateAttr("targetNamespace", schemaNS[prefix])
		schema.CreateAttr("xmlns", NSXSD)
		for _, other := range []string{"tns1", "tns2", "impl"} {
			if other != prefix {
				schema.CreateElement("import").CreateAttr("namespace", schemaNS[other])
			}
		}
		// With a location of the bridge's own: clients that resolve imports
		// would otherwise fetch the schema from its namespace URL.
		enc := schema.CreateElement("import")
		enc.CreateAttr("namespace", NSSOAPEnc)
		enc.CreateAttr("schemaLocation", marker+"?"+EncodingSchemaQuery)
		for _, t := range Types {
			if t.Prefix == prefix {
				writeType(schema, t)
			}
		}
	}

	for _, o := range Operations {
		in := defs.CreateElement("wsdl:message")
		in.CreateAttr("name", o.Input)
		if o.Param != nil {
			writePart(in, *o.Param)
		}
		out := defs.CreateElement("wsdl:message")
		out.CreateAttr("name", o.Output)
		writePart(out, o.Return)
	}

	pt := defs.CreateElement("wsdl:portType")
	pt.CreateAttr("name", PortTypeName)
	for _, o := range Operations {
		e := pt.CreateElement("wsdl:operation")
		e.CreateAttr("name", o.Name)
		if o.Param != nil {
			e.CreateAttr("parameterOrder", o.Param.Name)
		}
		for _, m := range [][2]string{{"wsdl:input", o.Input}, {"wsdl:output", o.Output}} {
			io := e.CreateElement(m[0])
			io.CreateAttr("message", "impl:"+m[1])
			io.CreateAttr("name", m[1])
		}
	}

	binding := defs.CreateElement("wsdl:binding")
	binding.CreateAttr("name", BindingName)
	binding.CreateAttr("type", "impl:"+PortTypeName)
	sb := binding.CreateElement("wsdlsoap:binding")
	sb.CreateAttr("style", "rpc")
	sb.CreateAttr("transport", NSHTTP)
	for _, o := range Operations {
		e := binding.CreateElement("wsdl:operation")
		e.CreateAttr("name", o.Name)
		e.CreateElement("wsdlsoap:operation").CreateAttr("soapAction", "")
		for _, m := range [][3]string{{"wsdl:input", o.Input, NSInput}, {"wsdl:output", o.Output, ns}} {
			io := e.CreateElement(m[0])
			io.CreateAttr("name", m[1])
			body := io.CreateElement("wsdlsoap:body")
			body.CreateAttr("encodingStyle", NSSOAPEnc)
			body.CreateAttr("namespace", m[2])
			body.CreateAttr("use", "encoded")
		}
	}

	svc := defs.CreateElement("wsdl:service")
	svc.CreateAttr("name", ServiceName)
	port := svc.CreateElement("wsdl:port")
	port.CreateAttr("binding", "impl:"+BindingName)
	port.CreateAttr("name", PortName)
	port.CreateElement("wsdlsoap:address").CreateAttr("location", marker)
	return doc
}

func writeType(schema *etree.Element, t Type) {
	ct := schema.CreateElement("complexType")
	ct.CreateAttr("name", t.Name)
	if t.ArrayOf != "" {
		r := ct.CreateElement("complexContent").CreateElement("restriction")
		r.CreateAttr("base", "soapenc:Array")
		a := r.CreateElement("attribute")
		a.CreateAttr("ref", "soapenc:arrayType")
		a.CreateAttr("wsdl:arrayType", t.ArrayOf+"[]")
		return
	}
	seq := ct.CreateElement("sequence")
	for _, f := range t.Fields {
		e := seq.CreateElement("element")
		e.CreateAttr("name", f.Name)
		if !f.Required {
			e.CreateAttr("nillable", "true")
		}
		e.CreateAttr("type", f.Type)
	}
}

func writePart(msg *etree.Element, p Part) {
	e := msg.CreateElement("wsdl:part")
	e.CreateAttr("name", p.Name)
	e.CreateAttr("type", p.Type)
}
