package soapenc

import "strings"

// Wire is how a request was written: the habits by which the client library
// that wrote it can be told apart (prefixes, where encodingStyle sits,
// multiRef, charset). Decoding never depends on it; the usage record reads
// it. Prefixes are as sent: bounded by the request size, never stored.
type Wire struct {
	EnvelopePrefix  string // prefix of the Envelope element: "SOAP-ENV" (PHP, suds), "soapenv" (Axis), "soap" (.NET), "soap-env" (zeep)
	BodyPrefix      string // prefix of the Body element; suds writes it with a prefix of its own ("ns1")
	OperationPrefix string // prefix of the call element; "" when it is in the default namespace (SOAP::Lite)
	// EncodingStyleOn is the outermost element carrying
	// soapenv:encodingStyle: EncodingOnEnvelope (PHP, suds, SOAP::Lite),
	// EncodingOnBody (.NET), EncodingOnCall (Axis) or "" (zeep).
	EncodingStyleOn string
	MultiRef        bool   // the Body holds multiRef elements (Axis)
	TypedRef        bool   // the Body holds, after the call, referenced values named after their type (.NET)
	Header          bool   // a Header element, even an empty one (suds)
	Typed           bool   // the call's first part carries xsi:type (every client but zeep)
	Charset         string // canonical name of the document's charset when it is not UTF-8 ("windows-1250", "iso-8859-2")
}

// Where encodingStyle is declared first (Wire.EncodingStyleOn).
const (
	EncodingOnEnvelope = "Envelope"
	EncodingOnBody     = "Body"
	EncodingOnCall     = "call"
)

// wireOf reads the Wire facts of a decoded document: node 0 is the
// Envelope, body and call are node indexes of t.
func wireOf(t *tree, body, call int32, header bool) Wire {
	env, bodyEl, callEl := &t.nodes[0], &t.nodes[body], &t.nodes[call]
	w := Wire{EnvelopePrefix: env.prefix, BodyPrefix: bodyEl.prefix, OperationPrefix: callEl.prefix, Header: header}
	switch {
	case env.encStyle:
		w.EncodingStyleOn = EncodingOnEnvelope
	case bodyEl.encStyle:
		w.EncodingStyleOn = EncodingOnBody
	case callEl.encStyle:
		w.EncodingStyleOn = EncodingOnCall
	}
	afterCall := false
	for i := t.nodes[body].first; i >= 0; i = t.nodes[i].next {
		switch n := &t.nodes[i]; {
		case i == call:
			afterCall = true
		case n.local == "multiRef":
			w.MultiRef = true
		case afterCall:
			w.TypedRef = true
		}
	}
	if p := t.nodes[call].first; p >= 0 {
		n := &t.nodes[p]
		if n.hasHref {
			if target, ok := t.ids[strings.TrimPrefix(n.href, "#")]; ok {
				n = &t.nodes[target]
			}
		}
		w.Typed = n.typState != qnAbsent
	}
	return w
}
