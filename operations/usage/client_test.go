package usage_test

import (
	"context"
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

// The client and features a call carries are one context node each (the
// value and the node one allocation), read back as set, over whatever the
// context held before.
func TestWireContext(t *testing.T) {
	type other struct{}
	base := context.WithValue(context.Background(), other{}, "kept")
	ctx := usage.WithFeatures(usage.WithClient(base, usage.Client{Family: usage.FamilyPHP, Version: "8.2"}), usage.FeatureWindows1250)
	if got := usage.ClientFrom(ctx); got.Family != usage.FamilyPHP || got.Version != "8.2" {
		t.Errorf("client %+v", got)
	}
	if got := usage.FeaturesFrom(ctx); len(got) != 1 || got[0] != usage.FeatureWindows1250 {
		t.Errorf("features %v", got)
	}
	if ctx.Value(other{}) != "kept" {
		t.Error("the context's other values are lost")
	}
	if got := usage.ClientFrom(usage.WithClient(ctx, usage.Client{Family: usage.FamilyAxis})); got.Family != usage.FamilyAxis {
		t.Errorf("client set again: %+v", got)
	}
	if got := usage.FeaturesFrom(usage.WithClient(ctx, usage.Client{Family: usage.FamilyAxis})); len(got) != 1 {
		t.Errorf("features lost when the client is set again: %v", got)
	}
	n := testing.AllocsPerRun(100, func() { _ = usage.WithClient(base, usage.Client{Family: usage.FamilyPHP}) })
	if n != 1 {
		t.Errorf("usage.WithClient: %.0f allocations, want 1", n)
	}
}
