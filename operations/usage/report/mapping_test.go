package report

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/wsdl"
)

// TestTableCoversEverythingRecorded: every operation the WSDL serves, every
// flow and feature the usage record names and every channel code the
// bridge knows has a row saying what replaces it.
func TestTableCoversEverythingRecorded(t *testing.T) {
	names := map[string]bool{}
	for _, op := range wsdl.Operations {
		names[op.Name] = true
	}
	for _, f := range usage.Flows {
		names[f] = true
	}
	for _, f := range usage.AllFeatures {
		names[string(f)] = true
	}
	for _, c := range operations.ChannelCodes() {
		names[string(usage.ChannelFeature(c))] = true
	}
	for n := range names {
		r, ok := Lookup(n)
		if assert.True(t, ok, "no mapping row for %q", n) {
			assert.NotEmpty(t, r.REST, n)
			assert.NotEmpty(t, r.Change, n)
		}
	}
	for _, r := range Rows() {
		if r.REST != restNone && strings.HasPrefix(r.REST, "POST ") || strings.HasPrefix(r.REST, "GET ") {
			assert.NotNil(t, r.Call, "%s names an endpoint but has no example call", r.Name)
		}
	}
}

// TestDocsMappingAgreesWithTable: docs/mapping.md says for every operation
// what the table says (its endpoint, or that there is none), lists every
// flow with its replacement and fields, names every feature's REST fields
// and every channel code with its bank's SWIFT code.
func TestDocsMappingAgreesWithTable(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/mapping.md")
	require.NoError(t, err)
	doc := string(raw)
	sections := docSections(doc)

	for _, r := range operationRows {
		sec, ok := sectionOf(sections, r.Name)
		if !assert.True(t, ok, "docs/mapping.md has no ### section naming %s", r.Name) {
			continue
		}
		want := "`" + r.REST + "`"
		if r.REST == restNone {
			want = "No REST call"
		}
		assert.True(t, strings.Contains(sec, want), "the docs/mapping.md section of %s does not say %s", r.Name, want)
	}
	for _, r := range flowRows {
		line := lineWith(doc, "| `"+r.Name+"`")
		if !assert.NotEmpty(t, line, "docs/mapping.md lists no flow %s", r.Name) {
			continue
		}
		for _, want := range append([]string{r.REST}, r.Fields...) {
			assert.True(t, strings.Contains(line, "`"+want+"`"), "docs/mapping.md's line of flow %s does not name `%s`", r.Name, want)
		}
	}
	for _, r := range featureRows {
		for _, f := range r.Fields {
			named := regexp.MustCompile("[`{ ]" + regexp.QuoteMeta(f) + "[^a-z_]").MatchString(doc)
			assert.True(t, named, "docs/mapping.md does not name %s's REST field %s", r.Name, f)
		}
	}
	flat := strings.Join(strings.Fields(doc), " ")
	for _, code := range operations.ChannelCodes() {
		_, swift, _ := operations.ChannelREST(code)
		want := "`" + code + "`"
		if swift != "" {
			want += " `" + swift + "`"
		}
		assert.True(t, strings.Contains(flat, want), "docs/mapping.md does not say %s", want)
	}
}

// docSections splits a Markdown page at its ### headings.
func docSections(doc string) []string {
	var out []string
	for i, part := range strings.Split(doc, "\n### ") {
		if i > 0 {
			out = append(out, part)
		}
	}
	return out
}

// sectionOf is the section whose heading names op as a whole word.
func sectionOf(sections []string, op string) (string, bool) {
	word := regexp.MustCompile(`(^|[^A-Za-z])` + regexp.QuoteMeta(op) + `([^A-Za-z]|$)`)
	for _, s := range sections {
		heading, _, _ := strings.Cut(s, "\n")
		if word.MatchString(heading) {
			return s, true
		}
	}
	return "", false
}

func lineWith(doc, s string) string {
	for line := range strings.SplitSeq(doc, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
