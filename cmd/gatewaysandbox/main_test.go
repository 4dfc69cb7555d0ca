package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// syncBuf is a bytes.Buffer safe to read while run writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestRunServesAndShutsDown(t *testing.T) {
	env := map[string]string{"SOAPBRIDGE_SANDBOX_LISTEN": "127.0.0.1:0", "SOAPBRIDGE_CLIENT_SECRET": "s3cret-value", "SOAPBRIDGE_LOG_LEVEL": "error"}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuf{}
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-goid", "8000000042"}, func(k string) string { return env[k] }, out, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatal(err)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"payment-all"}}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("sandbox-client", "s3cret-value")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("run did not stop")
	}
	s := out.String()
	assert.Contains(t, s, "merchant goid: 8000000042")
	assert.Contains(t, s, "client id:     sandbox-client")
	assert.NotContains(t, s, "s3cret-value", "a configured secret is never printed")
}

func TestHelpExitsZero(t *testing.T) {
	out := &syncBuf{}
	err := run(context.Background(), []string{"-h"}, func(string) string { return "" }, out, nil)
	require.NoError(t, err)
	assert.Contains(t, out.String(), "-state")
}

// With -state, a payment made before a restart is there after it.
func TestStateFlagKeepsPayments(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.json")
	env := map[string]string{"SOAPBRIDGE_SANDBOX_LISTEN": "127.0.0.1:0", "SOAPBRIDGE_LOG_LEVEL": "error"}
	start := func() (string, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		addrc := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"-state", file}, func(k string) string { return env[k] }, &syncBuf{}, func(a string) { addrc <- a })
		}()
		select {
		case a := <-addrc:
			return a, func() { cancel(); require.NoError(t, <-done) }
		case err := <-done:
			t.Fatal(err)
		}
		return "", nil
	}
	token := func(addr string) string {
		form := url.Values{"grant_type": {"client_credentials"}, "scope": {"payment-all"}}
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/oauth2/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("sandbox-client", "sandbox-secret")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&tok))
		return tok.AccessToken
	}
	call := func(addr, method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token(addr))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	addr, stop := start()
	st, p := call(addr, http.MethodPost, "/api/payments/payment", `{"target":{"type":"ACCOUNT","goid":"8123456789"},"amount":"100","currency":"CZK",`+
		`"order_number":"KEEP-1","callback":{"return_url":"https://shop.example/r"}}`)
	require.Equal(t, http.StatusOK, st, p)
	id := strconv.FormatFloat(p["id"].(float64), 'f', 0, 64)
	stop()

	addr, stop = start()
	defer stop()
	st, s := call(addr, http.MethodGet, "/api/payments/payment/"+id, "")
	require.Equal(t, http.StatusOK, st, s)
	assert.Equal(t, "KEEP-1", s["order_number"])
}

// Every sh block of docs/sandbox-controls.md runs, in order, against a
// freshly started sandbox: the documented controls do what the page says.
func TestSandboxControlsDoc(t *testing.T) {
	bash := testenv.LookPath(t, "bash", "apt-get install -y bash")
	testenv.LookPath(t, "curl", "apt-get install -y curl")
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "sandbox-controls.md"))
	require.NoError(t, err)
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	blocks := 0
	for _, part := range strings.Split(string(doc), "```sh\n")[1:] {
		code, _, ok := strings.Cut(part, "```")
		require.True(t, ok, "unclosed sh block")
		script.WriteString(code)
		blocks++
	}
	require.GreaterOrEqual(t, blocks, 6)

	env := map[string]string{"SOAPBRIDGE_SANDBOX_LISTEN": "127.0.0.1:0", "SOAPBRIDGE_LOG_LEVEL": "error"}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		// As the page starts it, with a state file.
		args := []string{"-state", filepath.Join(t.TempDir(), "sandbox-state.json")}
		done <- run(ctx, args, func(k string) string { return env[k] }, &syncBuf{}, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatal(err)
	}
	defer func() { cancel(); require.NoError(t, <-done) }()

	cmd := exec.Command(bash, "-c", script.String())
	cmd.Env = append(os.Environ(), "SANDBOX=http://"+addr)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, want := range []string{"declined: _5006", "expired card: _5004", "order number: _5015", "ACCEPTED", "REQUESTED", "refund done",
		"capture FAILED", "still AUTHORIZED", "connection reset", "but the gateway refunded", "one POST received and performed",
		"503\n503\n200\n", `"kind":"slow"`, "%PDF-"} {
		assert.Contains(t, string(out), want)
	}
}
