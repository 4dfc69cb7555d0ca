package web

import (
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// Browsers post a form in the charset of the page it is on and say nothing
// about it (no charset parameter). Legacy e-shops on windows-1250 pages post
// windows-1250 bytes, signed over those bytes; the bridge reads such a form
// as windows-1250 so that it stores and sends clean UTF-8 (the signature
// still verifies: operations.VerifyCompat retries the joined string in
// windows-1250).

// formCharset is how a posted form was encoded.
type formCharset int

const (
	formUTF8 formCharset = iota
	formWindows1250
	formUnreadable // neither valid UTF-8 nor windows-1250
)

// toUTF8Form returns form with every name and value in UTF-8. contentType
// is the request's Content-Type: a charset parameter naming windows-1250
// decides; otherwise a form that is valid UTF-8 throughout is UTF-8 and any
// other is read as windows-1250, unless it has a byte windows-1250 leaves
// undefined (0x81, 0x83, 0x88, 0x90, 0x98).
func toUTF8Form(form url.Values, contentType string) (url.Values, formCharset) {
	cs := formUTF8
	if _, params, err := mime.ParseMediaType(contentType); err == nil && isWindows1250(params["charset"]) {
		cs = formWindows1250
	} else if !allUTF8(form) {
		cs = formWindows1250
	}
	if cs == formUTF8 {
		return form, cs
	}
	out := make(url.Values, len(form))
	for k, vs := range form {
		key, ok := fromWindows1250(k)
		if !ok {
			return nil, formUnreadable
		}
		for _, v := range vs {
			s, ok := fromWindows1250(v)
			if !ok {
				return nil, formUnreadable
			}
			out[key] = append(out[key], s)
		}
	}
	return out, cs
}

func isWindows1250(label string) bool {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "windows-1250", "cp1250", "x-cp1250":
		return true
	}
	return false
}

func allUTF8(form url.Values) bool {
	for k, vs := range form {
		if !utf8.ValidString(k) {
			return false
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return false
			}
		}
	}
	return true
}

// fromWindows1250 decodes s; false when s has a byte windows-1250 leaves
// undefined.
func fromWindows1250(s string) (string, bool) {
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	for i := 0; i < len(s); i++ {
		r := charmap.Windows1250.DecodeByte(s[i])
		if r == utf8.RuneError {
			return "", false
		}
		b.WriteRune(r)
	}
	return b.String(), true
}
