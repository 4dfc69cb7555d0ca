package reqid

import (
	"regexp"
	"testing"
)

func TestNewIsHexAndDistinct(t *testing.T) {
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := make(map[string]bool)
	for range 10000 {
		id := New()
		if !hex32.MatchString(id) {
			t.Fatalf("New() = %q, want 32 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("New() repeated %q", id)
		}
		seen[id] = true
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = New()
	}
}
