package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefusesNonLoopbackTargets(t *testing.T) {
	for _, u := range []string{"http://10.0.0.1:8080/x", "http://example.com/x", "http://192.168.1.5/x"} {
		err := run([]string{"-url", u, "-body", "x"}, io.Discard)
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "only loopback")
	}
}

func TestMeasuresAgainstBaseline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			_, _ = io.WriteString(w, `{"status":"ok"}`)
			return
		}
		_, _ = io.WriteString(w, "<touchReturn>OK</touchReturn>")
	}))
	defer srv.Close()
	body := filepath.Join(t.TempDir(), "touch.xml")
	require.NoError(t, os.WriteFile(body, []byte("<x/>"), 0o600))
	var out strings.Builder
	require.NoError(t, run([]string{"-url", srv.URL + "/soap", "-body", body, "-want", "touchReturn", "-c", "4", "-d", "200ms"}, &out))
	assert.Contains(t, out.String(), "baseline GET /healthz:")
	assert.Contains(t, out.String(), "ratio:")

	// A reply without the wanted text is counted bad and fails the run.
	err := run([]string{"-url", srv.URL + "/soap", "-body", body, "-want", "paymentStatusReturn", "-c", "2", "-d", "100ms"}, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad replies")
}
