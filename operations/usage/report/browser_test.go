package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/operations/usage/report"
)

// The report's code column wraps: at 1280 px the page needs no horizontal
// scroll, however long the examples' lines (the known mix's PHP, Java and
// .NET examples), and no example scrolls inside its box.
func TestReportFitsAt1280(t *testing.T) {
	browserDir := filepath.Join("..", "..", "..", "testdata", "browser")
	node := testenv.LookPath(t, "node", "apt-get install -y nodejs npm")
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		testenv.Missing(t, "chromium (/usr/bin/chromium)", "apt-get install -y chromium")
	}
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "playwright-core", "package.json")); err != nil {
		testenv.Missing(t, "playwright-core in testdata/browser/node_modules", "cd testdata/browser && npm ci")
	}
	r, err := report.Build(context.Background(), knownMix(t), report.Options{Configured: []int64{shopPHP, shopIdle}, Now: now})
	require.NoError(t, err)
	var page bytes.Buffer
	require.NoError(t, r.WriteHTML(&page, false))
	require.Contains(t, page.String(), "<pre><code>", "the report has code examples")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page.Bytes()) //nolint:errcheck // a test page
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "report_page.mjs", srv.URL, "1280", os.Getenv("TEST_ARTIFACTS"))
	cmd.Dir = browserDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node report_page.mjs: %s", stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got struct{ ScrollWidth, ClientWidth, Pres int }
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got), string(out))
	assert.LessOrEqual(t, got.ScrollWidth, got.ClientWidth, "the page scrolls sideways at 1280 px")
	assert.Zero(t, got.Pres, "code examples that scroll inside their box")
}
