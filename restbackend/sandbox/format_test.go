package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormatAmount(t *testing.T) {
	for _, tc := range []struct {
		minor          int64
		currency, lang string
		want           string
	}{
		{123456789, "CZK", "cs", "1\u00a0234\u00a0567,89\u00a0Kč"},
		{123456789, "CZK", "en", "CZK\u00a01,234,567.89"},
		{1000, "EUR", "cs", "10,00\u00a0€"},
		{5, "EUR", "en", "EUR\u00a00.05"},
		{99999, "HUF", "cs", "999,99\u00a0Ft"},
	} {
		assert.Equal(t, tc.want, formatAmount(tc.minor, tc.currency, tc.lang))
	}
}
