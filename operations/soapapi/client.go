package soapapi

import (
	"net/http"
	"strings"

	"github.com/legacybridge/soapbridge/internal/header"
	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/soapenc"
)

// ClientOf recognises the client library of a SOAP call from its
// User-Agent and, when that names none (or only a language's HTTP
// transport), from the request's dialect: what each library writes
// differently (testdata/usage/wire holds one request of each):
//
//	PHP SoapClient  SOAP-ENV envelope, call in ns1, encodingStyle on the Envelope, no Header
//	Axis 1.4 stubs  soapenv envelope, encodingStyle on the call, values in multiRef elements
//	.NET proxy      soap envelope, encodingStyle on the Body, structs named after their type
//	suds            an (empty) Header, the Body under a second prefix for the envelope namespace
//	zeep            soap-env envelope, untyped values
//	SOAP::Lite      SOAPAction "uri#operation", call in the default namespace
//
// Node.js soap is told by its User-Agent only.
func ClientOf(r *http.Request, w soapenc.Wire) usage.Client {
	ua, named := usage.ParseUserAgent(header.Get(r.Header, header.UserAgent))
	if named && ua.Family != usage.FamilyPython && ua.Family != usage.FamilyJava && ua.Family != usage.FamilyBrowser {
		return ua // the library names itself
	}
	if f := dialectFamily(header.Get(r.Header, header.SOAPAction), w); f != "" {
		return usage.Client{Family: f, Version: ua.Version}
	}
	if named {
		return ua
	}
	return usage.Client{Family: usage.FamilyUnknown}
}

// dialectFamily is the family a request's dialect shows, or "".
func dialectFamily(soapAction string, w soapenc.Wire) usage.Family {
	switch {
	case strings.Contains(soapAction, "#"):
		return usage.FamilySOAPLite
	case w.Header && w.BodyPrefix != w.EnvelopePrefix:
		return usage.FamilySuds
	case w.EnvelopePrefix == "soap-env" && !w.Typed:
		return usage.FamilyZeep
	case w.EncodingStyleOn == soapenc.EncodingOnCall && (w.MultiRef || w.EnvelopePrefix == "soapenv"):
		return usage.FamilyAxis
	case w.EncodingStyleOn == soapenc.EncodingOnBody:
		return usage.FamilyDotNet
	case w.EnvelopePrefix == "SOAP-ENV" && w.OperationPrefix == "ns1" && w.EncodingStyleOn == soapenc.EncodingOnEnvelope && !w.Header:
		return usage.FamilyPHP
	case w.OperationPrefix == "" && w.EncodingStyleOn == soapenc.EncodingOnEnvelope:
		return usage.FamilySOAPLite
	}
	return ""
}

// charsetFeature is the feature of a SOAP body's charset, if it is one.
func charsetFeature(cs string) (usage.Feature, bool) {
	switch cs {
	case "windows-1250":
		return usage.FeatureWindows1250, true
	case "iso-8859-2":
		return usage.FeatureISO88592, true
	}
	return "", false
}
