package usage

import (
	"strings"
)

// Family is a client library (or kind of HTTP client) recognised from the
// wire. The set is fixed, so it bounds what is stored.
type Family string

// Families. The SOAP ones are told by the User-Agent and the request's
// dialect (operations/soapapi); the rest by the User-Agent of a browser
// flow or statement download.
const (
	FamilyPHP      Family = "php-soapclient" // PHP ext/soap SoapClient
	FamilyAxis     Family = "axis"           // Apache Axis 1.4 generated stubs (Java)
	FamilyDotNet   Family = "dotnet"         // .NET wsdl.exe proxy (SoapHttpClientProtocol)
	FamilySuds     Family = "suds"           // Python suds
	FamilyZeep     Family = "zeep"           // Python zeep
	FamilySOAPLite Family = "soap-lite"      // Perl SOAP::Lite
	FamilyNodeSoap Family = "node-soap"      // Node.js soap / strong-soap
	FamilyJava     Family = "java"           // Java's own HTTP client (statement downloads of the Java library)
	FamilyPython   Family = "python"         // Python's HTTP clients outside a SOAP library
	FamilyBrowser  Family = "browser"        // a customer's web browser (pay-full-v2, pay-base-v2)
	FamilyUnknown  Family = "unknown"
	// FamilyNone: the event came from no client of the shop (the gateway's
	// notification that becomes a legacy one); no client is counted.
	FamilyNone Family = "none"
)

// Families lists every Family.
var Families = []Family{FamilyPHP, FamilyAxis, FamilyDotNet, FamilySuds, FamilyZeep, FamilySOAPLite,
	FamilyNodeSoap, FamilyJava, FamilyPython, FamilyBrowser, FamilyUnknown}

// Language is the programming language of a family's shop code, for the
// report's examples: "PHP", "Java", ".NET (C#)", "Python", "Perl",
// "JavaScript", or "" when the family does not tell.
func (f Family) Language() string {
	switch f {
	case FamilyPHP:
		return LangPHP
	case FamilyAxis, FamilyJava:
		return LangJava
	case FamilyDotNet:
		return LangCSharp
	case FamilySuds, FamilyZeep, FamilyPython:
		return LangPython
	case FamilySOAPLite:
		return LangPerl
	case FamilyNodeSoap:
		return LangJavaScript
	}
	return ""
}

// Languages of the report's examples.
const (
	LangPHP        = "PHP"
	LangJava       = "Java"
	LangCSharp     = ".NET (C#)"
	LangPython     = "Python"
	LangPerl       = "Perl"
	LangJavaScript = "JavaScript"
)

// Client is a client library and its version as seen on the wire.
type Client struct {
	Family  Family
	Version string // as the User-Agent says it (bounded, see CleanVersion); "" when unknown
}

// MaxVersion bounds a client version kept (bytes).
const MaxVersion = 40

// CleanVersion bounds a client-supplied version: at most MaxVersion bytes
// of letters, digits and ".-_+/", anything else cut there, so that a
// User-Agent can neither grow what is kept nor carry markup.
func CleanVersion(v string) string {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if i == MaxVersion || !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '-' || c == '_' || c == '+' || c == '/') {
			return v[:i]
		}
	}
	return v
}

// uaProducts are the User-Agent product tokens of the families that name
// themselves, matched at the start of the header or of a product.
var uaProducts = []struct {
	prefix string
	family Family
}{
	{"PHP-SOAP/", FamilyPHP},
	{"Axis/", FamilyAxis},
	{"Zeep/", FamilyZeep},
	{"SOAP::Lite/Perl/", FamilySOAPLite},
	{"node-soap/", FamilyNodeSoap},
	{"strong-soap/", FamilyNodeSoap},
	{"Java/", FamilyJava},
	{"python-requests/", FamilyPython},
	{"Python-urllib/", FamilyPython},
}

// dotNetMarker is in the User-Agent of the .NET proxy:
// "Mozilla/4.0 (compatible; MSIE 6.0; MS Web Services Client Protocol 2.0.50727.8825)".
const dotNetMarker = "MS Web Services Client Protocol "

// ParseUserAgent recognises the family and version a User-Agent names.
// ok is false when it names none of them; a browser's ("Mozilla/5.0 …")
// gives FamilyBrowser without a version. Python-urllib is FamilyPython:
// suds sends it too, and only the dialect tells suds apart.
func ParseUserAgent(ua string) (c Client, ok bool) {
	ua = strings.TrimSpace(ua)
	if ua == "" {
		return Client{}, false
	}
	if i := strings.Index(ua, dotNetMarker); i >= 0 {
		return Client{FamilyDotNet, CleanVersion(ua[i+len(dotNetMarker):])}, true
	}
	for _, p := range uaProducts {
		if strings.HasPrefix(ua, p.prefix) {
			v := CleanVersion(ua[len(p.prefix):])
			if p.family == FamilyPython || p.family == FamilyJava {
				// The transport's version, not a SOAP library's: keep
				// its name with it.
				v = CleanVersion(ua)
			}
			return Client{p.family, v}, true
		}
	}
	if strings.HasPrefix(ua, "Mozilla/") {
		return Client{Family: FamilyBrowser}, true
	}
	return Client{}, false
}
