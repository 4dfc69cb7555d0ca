package wsdl

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	goldenPath   = "../testdata/wsdl/EPaymentServiceV2.wsdl"
	originalPath = "../../shared/reference/EPaymentServiceV2.original.wsdl"
	testAddress  = "https://testgw.gopay.cz/axis/EPaymentServiceV2"
)

func TestGolden(t *testing.T) {
	got := New(Options{}).Bytes(testAddress)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(goldenPath), 0o755))
		require.NoError(t, os.WriteFile(goldenPath, got, 0o644))
	}
	want, err := os.ReadFile(goldenPath)
	require.NoError(t, err, "run go test ./wsdl -run TestGolden -update")
	assert.Equal(t, string(want), string(got))
}

func TestStableAndWellFormed(t *testing.T) {
	a := New(Options{}).Bytes(testAddress)
	b := New(Options{}).Bytes(testAddress)
	assert.Equal(t, a, b, "two renders differ")
	doc := etree.NewDocument()
	require.NoError(t, doc.ReadFromBytes(a))
	assert.Equal(t, "definitions", doc.Root().Tag)
}

// TestMatchesOriginal checks that every component of the original Axis
// WSDL is present, and equal, in ours.
func TestMatchesOriginal(t *testing.T) {
	raw, err := os.ReadFile(originalPath)
	if os.IsNotExist(err) {
		t.Skip("original WSDL not found at " + originalPath)
	}
	require.NoError(t, err)
	orig := describe(t, raw)
	ours := describe(t, New(Options{}).Bytes(testAddress))

	require.NotEmpty(t, orig.types)
	for k, v := range orig.types {
		assert.Equal(t, v, ours.types[k], "type %s", k)
	}
	require.NotEmpty(t, orig.messages)
	for k, v := range orig.messages {
		assert.Equal(t, v, ours.messages[k], "message %s", k)
	}
	require.Len(t, orig.portOps, 12)
	for k, v := range orig.portOps {
		assert.Equal(t, v, ours.portOps[k], "portType operation %s", k)
	}
	require.Len(t, orig.bindOps, 12)
	for k, v := range orig.bindOps {
		assert.Equal(t, v, ours.bindOps[k], "binding operation %s", k)
	}
	assert.Equal(t, orig.header, ours.header)
	assert.Equal(t, orig.service, ours.service)
}

// TestOperationsDescribed checks the generated document against the
// Operations list: twelve distinct operations, thirteen with the overload,
// paymentStatusWCust with its types.
func TestOperationsDescribed(t *testing.T) {
	d := describe(t, New(Options{}).Bytes(testAddress))
	names := map[string]bool{}
	for _, o := range Operations {
		names[o.Name] = true
		key := o.Name + "/" + o.Input
		assert.Contains(t, d.portOps, key)
		assert.Contains(t, d.bindOps, key)
		assert.Contains(t, d.messages, o.Input)
		assert.Contains(t, d.messages, o.Output)
	}
	assert.Len(t, names, 12)
	assert.Len(t, d.portOps, 13)
	assert.Len(t, d.bindOps, 13)

	assert.Equal(t, "order=paymentSessionInfo in={"+DefaultServiceNamespace+"}paymentStatusWCustRequest/paymentStatusWCustRequest out={"+DefaultServiceNamespace+"}paymentStatusWCustResponse/paymentStatusWCustResponse",
		d.portOps["paymentStatusWCust/paymentStatusWCustRequest"])
	assert.Equal(t, []string{"paymentStatusWCustReturn {urn:AxisEPaymentProvider}EPaymentStatusWCust"}, d.messages["paymentStatusWCustResponse"])

	status := d.types["{urn:AxisEPaymentProvider}EPaymentStatus"]
	wcust := d.types["{urn:AxisEPaymentProvider}EPaymentStatusWCust"]
	require.Len(t, wcust, len(status)+3)
	assert.Equal(t, status, wcust[:len(status)])
	assert.Equal(t, []string{
		"customerData {urn:AxisEPaymentProvider}ECustomerData nillable",
		"customerCardData {urn:AxisEPaymentProvider}ECustomerCardData nillable",
		"paymentInstCountryCode {" + NSSOAPEnc + "}string nillable",
	}, wcust[len(status):])
	var card []string
	for _, f := range []string{"cardNumber", "cardExpiration", "cardBrand", "cardIssuerCountry", "cardIssuerBank"} {
		card = append(card, f+" {"+NSSOAPEnc+"}string nillable")
	}
	assert.Equal(t, card, d.types["{urn:AxisEPaymentProvider}ECustomerCardData"])
}

func TestServiceNamespace(t *testing.T) {
	const ns = "https://pay.example.com/axis/EPaymentServiceV2"
	d := New(Options{ServiceNamespace: ns})
	assert.Equal(t, ns, d.Namespace())
	desc := describe(t, d.Bytes("https://pay.example.com/axis/EPaymentServiceV2"))
	assert.Contains(t, desc.types, "{"+ns+"}ArrayOf_tns1_EPaymentMethod")
	assert.Contains(t, desc.bindOps["touch/touchRequest"], "out=touchResponse ns="+ns)
	assert.Contains(t, desc.bindOps["touch/touchRequest"], "in=touchRequest ns="+NSInput)
	assert.Equal(t, "service=AxisEPaymentProviderV2Service port=EPaymentServiceV2 binding={"+ns+"}EPaymentServiceV2SoapBinding", desc.service)
}

func TestBytesEscapesAndCaches(t *testing.T) {
	d := New(Options{})
	b := d.Bytes(`http://x/"><evil/>&`)
	doc := etree.NewDocument()
	require.NoError(t, doc.ReadFromBytes(b))
	loc := doc.FindElement("//address")
	require.NotNil(t, loc)
	assert.Equal(t, `http://x/"><evil/>&`, loc.SelectAttrValue("location", ""))
	assert.Nil(t, doc.FindElement("//evil"))

	var wg sync.WaitGroup
	for i := range 2 * maxCached {
		wg.Go(func() {
			addr := "http://h" + strings.Repeat("x", i) + "/s"
			assert.Contains(t, string(d.Bytes(addr)), `location="`+addr+`"`)
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, len(d.cache), maxCached)
}

// description is a WSDL reduced to comparable strings, with every prefixed
// name resolved to {namespace}local.
type description struct {
	types    map[string][]string // {ns}name -> fields "name type [nillable]" or array
	messages map[string][]string // name -> parts "name type"
	portOps  map[string]string   // name/inputName -> summary
	bindOps  map[string]string
	header   string // portType, binding style and transport
	service  string
}

func describe(t *testing.T, raw []byte) description {
	t.Helper()
	doc := etree.NewDocument()
	require.NoError(t, doc.ReadFromBytes(raw))
	defs := doc.Root()
	require.Equal(t, NSWSDL, defs.NamespaceURI())
	d := description{types: map[string][]string{}, messages: map[string][]string{}, portOps: map[string]string{}, bindOps: map[string]string{}}

	for _, types := range kids(defs, NSWSDL, "types") {
		for _, schema := range kids(types, NSXSD, "schema") {
			tns := schema.SelectAttrValue("targetNamespace", "")
			for _, ct := range kids(schema, NSXSD, "complexType") {
				key := "{" + tns + "}" + ct.SelectAttrValue("name", "")
				var fields []string
				for _, seq := range kids(ct, NSXSD, "sequence") {
					for _, el := range kids(seq, NSXSD, "element") {
						f := el.SelectAttrValue("name", "") + " " + resolve(t, el, el.SelectAttrValue("type", ""))
						if el.SelectAttrValue("nillable", "") == "true" {
							f += " nillable"
						}
						fields = append(fields, f)
					}
				}
				for _, cc := range kids(ct, NSXSD, "complexContent") {
					for _, r := range kids(cc, NSXSD, "restriction") {
						for _, a := range kids(r, NSXSD, "attribute") {
							at := a.SelectAttr("arrayType")
							require.NotNil(t, at)
							require.Equal(t, NSWSDL, resolvePrefix(t, a, at.Space))
							fields = append(fields, "restriction "+resolve(t, r, r.SelectAttrValue("base", ""))+
								" ref="+resolve(t, a, a.SelectAttrValue("ref", ""))+
								" arrayType="+resolve(t, a, strings.TrimSuffix(at.Value, "[]"))+"[]")
						}
					}
				}
				d.types[key] = fields
			}
		}
	}
	for _, m := range kids(defs, NSWSDL, "message") {
		parts := []string{}
		for _, p := range kids(m, NSWSDL, "part") {
			parts = append(parts, p.SelectAttrValue("name", "")+" "+resolve(t, p, p.SelectAttrValue("type", "")))
		}
		d.messages[m.SelectAttrValue("name", "")] = parts
	}
	for _, pt := range kids(defs, NSWSDL, "portType") {
		d.header += "portType=" + pt.SelectAttrValue("name", "")
		for _, o := range kids(pt, NSWSDL, "operation") {
			in, out := one(t, o, NSWSDL, "input"), one(t, o, NSWSDL, "output")
			key := o.SelectAttrValue("name", "") + "/" + in.SelectAttrValue("name", "")
			require.NotContains(t, d.portOps, key)
			d.portOps[key] = "order=" + o.SelectAttrValue("parameterOrder", "") +
				" in=" + resolve(t, in, in.SelectAttrValue("message", "")) + "/" + in.SelectAttrValue("name", "") +
				" out=" + resolve(t, out, out.SelectAttrValue("message", "")) + "/" + out.SelectAttrValue("name", "")
		}
	}
	for _, b := range kids(defs, NSWSDL, "binding") {
		sb := one(t, b, NSWSDLSOAP, "binding")
		d.header += " binding=" + b.SelectAttrValue("name", "") + " type=" + resolve(t, b, b.SelectAttrValue("type", "")) +
			" style=" + sb.SelectAttrValue("style", "") + " transport=" + sb.SelectAttrValue("transport", "")
		for _, o := range kids(b, NSWSDL, "operation") {
			so := one(t, o, NSWSDLSOAP, "operation")
			action := so.SelectAttr("soapAction")
			require.NotNil(t, action, "soapAction present")
			s := "action=" + action.Value
			key := o.SelectAttrValue("name", "")
			for i, io := range []*etree.Element{one(t, o, NSWSDL, "input"), one(t, o, NSWSDL, "output")} {
				if i == 0 {
					key += "/" + io.SelectAttrValue("name", "")
				}
				body := one(t, io, NSWSDLSOAP, "body")
				s += " " + []string{"in", "out"}[i] + "=" + io.SelectAttrValue("name", "") +
					" ns=" + body.SelectAttrValue("namespace", "") + " use=" + body.SelectAttrValue("use", "") +
					" enc=" + body.SelectAttrValue("encodingStyle", "")
			}
			require.NotContains(t, d.bindOps, key)
			d.bindOps[key] = s
		}
	}
	svc := one(t, defs, NSWSDL, "service")
	port := one(t, svc, NSWSDL, "port")
	d.service = "service=" + svc.SelectAttrValue("name", "") + " port=" + port.SelectAttrValue("name", "") +
		" binding=" + resolve(t, port, port.SelectAttrValue("binding", ""))
	return d
}

func kids(e *etree.Element, ns, tag string) []*etree.Element {
	var out []*etree.Element
	for _, c := range e.ChildElements() {
		if c.Tag == tag && c.NamespaceURI() == ns {
			out = append(out, c)
		}
	}
	return out
}

func one(t *testing.T, e *etree.Element, ns, tag string) *etree.Element {
	t.Helper()
	k := kids(e, ns, tag)
	require.Len(t, k, 1, "%s in %s", tag, e.GetPath())
	return k[0]
}

// resolve turns prefix:local into {namespace}local using the declarations
// in scope at e.
func resolve(t *testing.T, e *etree.Element, qname string) string {
	t.Helper()
	prefix, local, ok := strings.Cut(qname, ":")
	require.True(t, ok, "unprefixed QName %q", qname)
	return "{" + resolvePrefix(t, e, prefix) + "}" + local
}

func resolvePrefix(t *testing.T, e *etree.Element, prefix string) string {
	t.Helper()
	for p := e; p != nil; p = p.Parent() {
		if a := p.SelectAttr("xmlns:" + prefix); a != nil {
			return a.Value
		}
	}
	require.Failf(t, "undeclared prefix", "%q at %s", prefix, e.GetPath())
	return ""
}

// BenchmarkNew: rendering the document (once per process).
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		New(Options{})
	}
}

// TestSignaturesCoverMembers: a signature names members of its own type,
// each once.
func TestSignaturesCoverMembers(t *testing.T) {
	n := 0
	for _, typ := range Types {
		members := map[string]bool{}
		for _, f := range typ.Fields {
			members[f.Name] = true
		}
		seen := map[string]bool{}
		for _, s := range typ.Signature {
			assert.True(t, members[s.Name], "%s signs %s, not a member", typ.Name, s.Name)
			assert.False(t, seen[s.Name], "%s signs %s twice", typ.Name, s.Name)
			seen[s.Name] = true
			n++
		}
	}
	assert.Equal(t, 13+12+12, n, "paymentCommand, and paymentStatus of EPaymentStatus and EPaymentStatusWCust")
	st, ok := Find("EPaymentStatus")
	require.True(t, ok)
	assert.Equal(t, Signed{Name: "productName", Trim: true}, st.Signature[1])
}
