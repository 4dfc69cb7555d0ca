package store_test

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/legacybridge/soapbridge/store"
)

// TestClip: at most n bytes, always valid UTF-8 (PostgreSQL refuses
// anything else), a rune cut in two dropped, a short text as it is.
func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"kůň", 10, "kůň"},
		{"kůň", 2, "k"},          // ů is two bytes: cut in two, dropped
		{"kůň", 4, "ků"},         // ň cut in two
		{"kůň", 3, "ků"},         // whole
		{"a\xffbcdef", 4, "abc"}, // an invalid byte of the kept part dropped
		{"", 0, ""},
	} {
		got := store.Clip(c.in, c.n)
		assert.Equal(t, c.want, got, "%q/%d", c.in, c.n)
		assert.True(t, utf8.ValidString(got))
		assert.LessOrEqual(t, len(got), c.n)
	}
}
