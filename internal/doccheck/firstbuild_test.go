package doccheck

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstBuildRow is one module of README's "The first build" table.
type firstBuildRow struct {
	version string
	mb      float64 // the module's zip as the proxy serves it, in MiB
}

var (
	firstBuildRowRE   = regexp.MustCompile("^\\| `([^`]+)` \\| `([^`]+)` \\| ([0-9.]+) \\|")
	firstBuildTotalRE = regexp.MustCompile(`(\d+) modules, ([0-9.]+) MB of zip files`)
)

// README says exactly what the first build of the binary downloads: its
// table lists the modules of `go list -deps ./cmd/soapbridge`, no more and
// no fewer, at the versions go.mod selects; the total in its text is the
// table's; and each size is the module's zip, checked where the module
// cache holds it (it does once the module was downloaded).
func TestFirstBuildDownloadsAsREADMESays(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	text := string(data)
	i := strings.Index(text, "\n## The first build\n")
	require.GreaterOrEqual(t, i, 0, `README.md has no "## The first build" section`)
	sec := text[i+1:]
	if j := strings.Index(sec[3:], "\n## "); j >= 0 {
		sec = sec[:j+3]
	}

	rows := map[string]firstBuildRow{}
	total := 0.0
	for _, line := range strings.Split(sec, "\n") {
		m := firstBuildRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		mb, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err, line)
		require.NotContains(t, rows, m[1], "listed twice")
		rows[m[1]] = firstBuildRow{version: m[2], mb: mb}
		total += mb
	}
	require.NotEmpty(t, rows, "no module rows (| `path` | `version` | MB | …) in the section")

	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}", "./cmd/soapbridge")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", exitStderr(err))
	built := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, version, ok := strings.Cut(line, " "); ok {
			built[path] = version
		}
	}
	for _, path := range sortedKeys(built) {
		row, ok := rows[path]
		if assert.True(t, ok, "the binary is built from %s %s: add it to README's first-build table", path, built[path]) {
			assert.Equal(t, built[path], row.version, "%s: README's version", path)
		}
	}
	for _, path := range sortedKeys(rows) {
		_, ok := built[path]
		assert.True(t, ok, "README's first-build table lists %s, which the binary is not built from", path)
	}

	m := firstBuildTotalRE.FindStringSubmatch(sec)
	if assert.NotNil(t, m, "the section says %q", "N modules, X MB of zip files") {
		assert.Equal(t, strconv.Itoa(len(rows)), m[1], "module count in the text")
		assert.Equal(t, fmt.Sprintf("%.1f", total), m[2], "MB in the text: the table's sum")
	}

	gomodcache := goEnv(t, root, "GOMODCACHE")
	checked := 0
	for path, row := range rows {
		zip := filepath.Join(gomodcache, "cache", "download", escapeModulePath(path), "@v", row.version+".zip")
		st, err := os.Stat(zip)
		if err != nil {
			continue // fetched by another way (a vendor directory, GOFLAGS=-mod=…): nothing to compare
		}
		checked++
		mb := float64(st.Size()) / (1 << 20)
		assert.LessOrEqual(t, math.Abs(mb-row.mb), 0.0051, "%s: its zip is %.2f MB, README says %.2f", path, mb, row.mb)
	}
	t.Logf("%d modules listed, %d sizes checked against %s", len(rows), checked, gomodcache)
}

func goEnv(t *testing.T, dir, name string) string {
	cmd := exec.Command("go", "env", name)
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// escapeModulePath is the module cache's spelling of a path: each upper
// case letter becomes '!' and its lower case.
func escapeModulePath(path string) string {
	var b strings.Builder
	for _, r := range path {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
