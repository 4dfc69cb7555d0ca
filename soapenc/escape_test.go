package soapenc

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// appendEscapedByRune is appendEscaped as it was before its table-driven
// first run: every byte through the switch. The reference of
// FuzzAppendEscaped.
func appendEscapedByRune(b []byte, s string, attr bool) []byte {
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		var esc string
		size := 1
		if c < utf8.RuneSelf {
			switch c {
			case '<':
				esc = "&lt;"
			case '>':
				esc = "&gt;"
			case '&':
				esc = "&amp;"
			case '"':
				if attr {
					esc = "&quot;"
				}
			case '\r':
				esc = "&#xD;"
			case '\n':
				if attr {
					esc = "&#xA;"
				}
			case '\t':
				if attr {
					esc = "&#x9;"
				}
			default:
				if c < 0x20 {
					esc = "\uFFFD"
				}
			}
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			if (r == utf8.RuneError && size == 1) || r == 0xFFFE || r == 0xFFFF {
				esc = "\uFFFD"
			}
		}
		if esc != "" {
			b = append(b, s[last:i]...)
			b = append(b, esc...)
			last = i + size
		}
		i += size
	}
	return append(b, s[last:]...)
}

// FuzzAppendEscaped holds appendEscaped to appendEscapedByRune, in text
// and in attribute values.
func FuzzAppendEscaped(f *testing.F) {
	for _, s := range []string{"", "OK", "http://axis.web.gopay.cz", `a<b>&"c"'d`, "tab\tnl\ncr\r", "\x00\x1f\x7f",
		"žluťoučký kůň", "\xff\xfe", "\uFFFE\uFFFF", "plain then <", "ascii \u00e9 tail"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, attr := range []bool{false, true} {
			got, want := appendEscaped([]byte("x"), s, attr), appendEscapedByRune([]byte("x"), s, attr)
			if string(got) != string(want) {
				t.Fatalf("attr %v, %q: %q, want %q", attr, s, got, want)
			}
			if !utf8.Valid(got) {
				t.Fatalf("invalid UTF-8: %q", got)
			}
		}
	})
}

// FuzzStartTags holds startTags to the two counts it replaces.
func FuzzStartTags(f *testing.F) {
	for _, s := range []string{"", "<", "</", "<a></a>", "<a/><b><c/></b>", "<<//", "x</", "<?xml?><!-- --><a>"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := startTags(b), bytes.Count(b, []byte{'<'})-bytes.Count(b, []byte("</")); got != want {
			t.Fatalf("%q: %d, want %d", b, got, want)
		}
	})
}
