package operations

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGatewayLang(t *testing.T) {
	cases := []struct {
		in, want string
		known    bool
	}{
		{"", "", true},
		{"   ", "", true},
		{"CS", "CS", true},
		{"cs", "CS", true},
		{" sk\n", "SK", true},
		{"CZE", "CS", true}, // the only value one Django library allows
		{"cze", "CS", true},
		{"Ces", "CS", true},
		{"CZ", "CS", true},
		{"SVK", "SK", true},
		{"SLK", "SK", true},
		{"slo", "SK", true},
		{"ENG", "EN", true},
		{"GER", "DE", true},
		{"DEU", "DE", true},
		{"RUS", "RU", true},
		{"POL", "PL", true},
		{"HUN", "HU", true},
		{"FRE", "FR", true},
		{"FRA", "FR", true},
		{"RUM", "RO", true},
		{"RON", "RO", true},
		{"BUL", "BG", true},
		{"HRV", "HR", true},
		{"ITA", "IT", true},
		{"SPA", "ES", true},
		{"ESP", "ES", true},
		{"UKR", "UK", true},
		{"uk", "UK", true}, // Ukrainian for the gateway, not the United Kingdom
		{"EST", "ET", true},
		{"LIT", "LT", true},
		{"LAV", "LV", true},
		{"SLV", "SL", true}, // Slovenian, not El Salvador
		{"SVN", "SL", true},
		{"POR", "PT", true},
		{"cs_CZ", "CS", true},
		{"en-US", "EN", true},
		{"sk-SK", "SK", true},
		// Not a language the gateway offers: the merchant's default.
		{"NL", "EN", false},
		{"NLD", "EN", false},
		{"JPN", "EN", false},
		{"XX", "EN", false},
		{"czech", "EN", false},
		{"-CS", "EN", false},
	}
	for _, c := range cases {
		got, known := GatewayLang(c.in, "en")
		assert.Equal(t, c.want, got, "GatewayLang(%q)", c.in)
		assert.Equal(t, c.known, known, "GatewayLang(%q) known", c.in)
	}
}

// Every language the gateway lists is reachable by its own code in either
// case and by at least one three-letter code.
func TestGatewayLangCoversGatewayList(t *testing.T) {
	three := map[string]bool{}
	for alias, code := range langAliases {
		assert.True(t, gatewayLangs[code], "alias %s names %s, which the gateway does not list", alias, code)
		if len(alias) == 3 {
			three[code] = true
		}
	}
	for code := range gatewayLangs {
		got, known := GatewayLang(code, "CS")
		assert.True(t, known)
		assert.Equal(t, code, got)
		got, _ = GatewayLang(string([]byte{code[0] + 'a' - 'A', code[1] + 'a' - 'A'}), "CS")
		assert.Equal(t, code, got)
		assert.True(t, three[code], "no three-letter code for %s", code)
	}
}

func TestGatewayCountry(t *testing.T) {
	cases := []struct {
		in, want string
		known    bool
	}{
		{"", "", true},
		{"CZE", "CZE", true},
		{"cze", "CZE", true},
		{" SVK ", "SVK", true},
		{"CZ", "CZE", true},
		{"sk", "SVK", true},
		{"de", "DEU", true},
		{"Pol", "POL", true},
		{"UK", "GBR", true}, // the common alias of GB
		{"GB", "GBR", true},
		{"AT", "AUT", true},
		{"US", "USA", true},
		{"CS", "", false}, // withdrawn, and ambiguous from a Czech shop
		{"EU", "", false}, // a group, not a country
		{"ZZ", "", false},
		{"ZZZ", "", false},
		{"203", "", false}, // numeric codes are not what the contact carries
		{"C1", "", false},
		{"CZECHIA", "", false},
		{"Č", "", false},
	}
	for _, c := range cases {
		got, known := GatewayCountry(c.in)
		assert.Equal(t, c.want, got, "GatewayCountry(%q)", c.in)
		assert.Equal(t, c.known, known, "GatewayCountry(%q) known", c.in)
	}
}
