package header

import (
	"net/http"
	"net/textproto"
	"testing"
)

var keys = []string{ContentType, ContentLength, UserAgent, SOAPAction, XRequestID}

func TestKeysAreCanonical(t *testing.T) {
	for _, k := range keys {
		if c := textproto.CanonicalMIMEHeaderKey(k); c != k {
			t.Errorf("%q is not canonical: %q", k, c)
		}
	}
	if SOAPAction != textproto.CanonicalMIMEHeaderKey("SOAPAction") {
		t.Errorf("SOAPAction is %q", SOAPAction)
	}
}

// Get and Set read and write what http.Header's own do, whatever case the
// field arrived or was set in.
func TestGetSetAsHTTPHeader(t *testing.T) {
	for _, k := range keys {
		for _, sent := range []string{k, "x-dummy", "lower"} {
			h := http.Header{}
			if sent == "lower" {
				h.Set(toLower(k), "v1") // Set canonicalises, as net/http's reader does
			} else if sent == k {
				h.Add(k, "v1")
				h.Add(k, "v2")
			}
			if got, want := Get(h, k), h.Get(k); got != want {
				t.Errorf("Get(%q) = %q, Header.Get %q", k, got, want)
			}
			a, b := h.Clone(), h.Clone()
			Set(a, k, "new")
			b.Set(k, "new")
			if a.Get(k) != b.Get(k) || len(a[k]) != len(b[k]) || len(a) != len(b) {
				t.Errorf("Set(%q): %v, Header.Set %v", k, a, b)
			}
		}
	}
}

func toLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// A shared value stays as it was whatever is set or added on the key after.
func TestSetSharedIsNotWritten(t *testing.T) {
	shared := []string{"text/xml; charset=utf-8"}
	h := http.Header{}
	SetShared(h, ContentType, shared)
	h.Add(ContentType, "other")
	Set(h, ContentType, "third")
	h.Set(ContentType, "fourth")
	if len(shared) != 1 || shared[0] != "text/xml; charset=utf-8" {
		t.Errorf("shared value now %q", shared)
	}
}
