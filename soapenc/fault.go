package soapenc

import "strings"

// Fault codes of SOAP 1.1 (section 4.4.1). They are written with the
// envelope prefix, e.g. "soapenv:Client".
const (
	FaultClient          = "Client"
	FaultServer          = "Server"
	FaultVersionMismatch = "VersionMismatch"
	FaultMustUnderstand  = "MustUnderstand"
)

// Fault is a SOAP 1.1 fault. Decode reports every problem as a *Fault whose
// String is safe to send to the client: it names what was wrong, never Go
// error text, file paths or large echoes of the input.
type Fault struct {
	Code   string // FaultClient, FaultServer, ... (without prefix)
	String string // faultstring: human readable reason
	Actor  string // faultactor, optional
	Detail string // text content of <detail>, optional
}

func (f *Fault) Error() string {
	return "soap fault " + f.Code + ": " + f.String
}

func clientFault(msg string) *Fault { return &Fault{Code: FaultClient, String: msg} }

// QuoteName shortens an element or attribute name taken from the input so a
// fault never echoes a huge token back.
func QuoteName(s string) string {
	const max = 64
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > max {
		// Cut on a rune boundary so the fault text stays valid UTF-8.
		i := max
		for i > 0 && s[i]&0xC0 == 0x80 {
			i--
		}
		s = s[:i] + "…"
	}
	return "'" + s + "'"
}
