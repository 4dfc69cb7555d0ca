// Package header reads and sets HTTP header fields by keys already in
// canonical form, as net/http.Header's Get and Set do, without
// canonicalising the key on every call: Get and Set check each byte of the
// key first (net/textproto.CanonicalMIMEHeaderKey), which cost a touch
// about as much as the rest of its header handling (some 300 instructions
// a field, a dozen fields a call). net/http stores every field it reads
// under its canonical key, so for such a key the map holds the same value.
//
// Every key passed here must be canonical ("Content-Type", "X-Request-Id",
// "SOAPAction" as net/http spells it: "Soapaction"); TestKeysAreCanonical
// holds the package's constants to it.
package header

import "net/http"

// The canonical keys the hot path reads and sets.
const (
	ContentType   = "Content-Type"
	ContentLength = "Content-Length"
	UserAgent     = "User-Agent"
	SOAPAction    = "Soapaction" // "SOAPAction" canonicalised
	XRequestID    = "X-Request-Id"
)

// Get is h.Get(key) for a canonical key: the first value, or "".
func Get(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set is h.Set(key, value) for a canonical key.
func Set(h http.Header, key, value string) {
	h[key] = []string{value}
}

// SetShared sets key to values, a slice shared by every caller (a constant
// value, made once), instead of a new one-element slice per call. Nothing
// may write into values: net/http copies a reply's header fields before it
// writes them, and Add or Set on the key make a new slice.
func SetShared(h http.Header, key string, values []string) {
	h[key] = values
}
