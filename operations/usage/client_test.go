package usage_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/legacybridge/soapbridge/operations/usage"
)

func TestParseUserAgent(t *testing.T) {
	cases := []struct {
		ua   string
		want usage.Client
		ok   bool
	}{
		{"PHP-SOAP/8.2.36", usage.Client{usage.FamilyPHP, "8.2.36"}, true},
		{"Axis/1.4", usage.Client{usage.FamilyAxis, "1.4"}, true},
		{"Mozilla/4.0 (compatible; MSIE 6.0; MS Web Services Client Protocol 2.0.50727.8825)", usage.Client{usage.FamilyDotNet, "2.0.50727.8825"}, true},
		{"Zeep/4.2.1 (www.python-zeep.org)", usage.Client{usage.FamilyZeep, "4.2.1"}, true},
		{"SOAP::Lite/Perl/1.27", usage.Client{usage.FamilySOAPLite, "1.27"}, true},
		{"node-soap/1.1.6", usage.Client{usage.FamilyNodeSoap, "1.1.6"}, true},
		{"Python-urllib/3.11", usage.Client{usage.FamilyPython, "Python-urllib/3.11"}, true},
		{"Java/1.8.0_392", usage.Client{usage.FamilyJava, "Java/1.8.0_392"}, true},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36", usage.Client{Family: usage.FamilyBrowser}, true},
		{"", usage.Client{}, false},
		{"curl/8.5.0", usage.Client{}, false},
		// Versions are cut at the first character outside the version alphabet.
		{"PHP-SOAP/<script>alert(1)</script>", usage.Client{usage.FamilyPHP, ""}, true},
		{"Axis/1.4\"><img", usage.Client{usage.FamilyAxis, "1.4"}, true},
	}
	for _, tc := range cases {
		got, ok := usage.ParseUserAgent(tc.ua)
		assert.Equal(t, tc.ok, ok, tc.ua)
		assert.Equal(t, tc.want, got, tc.ua)
	}
	long, _ := usage.ParseUserAgent("Axis/" + strings.Repeat("9", 500))
	assert.Len(t, long.Version, usage.MaxVersion)
}

func TestFamilyLanguage(t *testing.T) {
	for _, f := range usage.Families {
		switch f {
		case usage.FamilyBrowser, usage.FamilyUnknown:
			assert.Empty(t, f.Language(), f)
		default:
			assert.NotEmpty(t, f.Language(), f)
		}
	}
}
