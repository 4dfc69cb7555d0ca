package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each way of landing on the embedded sandbox by mistake is refused with a
// message that says what to set; the demo with nothing set still starts.
func TestSandboxOnlyForTheDemoOrWhenAsked(t *testing.T) {
	merchantFile := fmt.Sprintf("merchants:\n  - {goid: 8000000001, client_id: a, client_secret: %s, secure_key: %s}\n", cfgSecret, cfgKey)
	refusal := "but no gateway URL: set gateway_url (SOAPBRIDGE_GATEWAY_URL / -gateway-url)"
	askHint := "set SOAPBRIDGE_SANDBOX=true (sandbox: true / -sandbox)"
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		file  string
		want  []string // error substrings; none means it starts
		demo  bool
		warns int
	}{
		{name: "nothing set: the demo", demo: true},
		{name: "merchant in the file", file: merchantFile,
			want: []string{"merchants are configured (merchants of the config file)", refusal, askHint}},
		{name: "merchant by variables", env: map[string]string{"SOAPBRIDGE_GOID": "8000000001", "SOAPBRIDGE_CLIENT_ID": "a",
			"SOAPBRIDGE_CLIENT_SECRET": cfgSecret, "SOAPBRIDGE_SECURE_KEY": cfgKey},
			want: []string{"merchants are configured (SOAPBRIDGE_GOID, SOAPBRIDGE_CLIENT_ID, SOAPBRIDGE_CLIENT_SECRET, SOAPBRIDGE_SECURE_KEY)", refusal}},
		{name: "a single merchant variable", env: map[string]string{"SOAPBRIDGE_CLIENT_SECRET": cfgSecret},
			want: []string{"merchants are configured (SOAPBRIDGE_CLIENT_SECRET)", askHint}},
		{name: "sandbox asked by variable, own merchant", file: merchantFile, env: map[string]string{"SOAPBRIDGE_SANDBOX": "true"}, warns: 1},
		{name: "sandbox asked by flag", args: []string{"-sandbox"}, env: map[string]string{"SOAPBRIDGE_SECURE_KEY": cfgKey}, demo: true, warns: 1},
		{name: "sandbox asked in the file", file: "sandbox: true\n" + merchantFile, warns: 1},
		{name: "sandbox asked with demo values and a loopback public URL", args: []string{"-sandbox", "-public-url", "http://127.0.0.1:8080"},
			env: map[string]string{"SOAPBRIDGE_GOID": "8123456789"}, demo: true},
		{name: "sandbox with a public https URL", args: []string{"-sandbox=true", "-public-url", "https://pay.example.com"}, demo: true, warns: 1},
		{name: "sandbox listening beyond loopback", args: []string{"-sandbox-listen", ":8090"}, demo: true, warns: 1},
		{name: "gateway URL and sandbox", file: "sandbox: true\n" + merchantFile,
			env:  map[string]string{"SOAPBRIDGE_GATEWAY_URL": "https://gw.example/api", "SOAPBRIDGE_PUBLIC_URL": "https://b.example"},
			want: []string{"both a gateway URL and the embedded sandbox are set", "unset sandbox (SOAPBRIDGE_SANDBOX / -sandbox)"}},
		{name: "sandbox off without gateway", args: []string{"-sandbox=false"},
			want: []string{"no gateway URL and the sandbox is off: set gateway_url (SOAPBRIDGE_GATEWAY_URL / -gateway-url)"}},
		{name: "sandbox not a boolean", env: map[string]string{"SOAPBRIDGE_SANDBOX": "maybe"}, want: []string{"SOAPBRIDGE_SANDBOX: `maybe` is not true or false"}},
		{name: "gateway with merchants, no sandbox", file: merchantFile,
			env: map[string]string{"SOAPBRIDGE_GATEWAY_URL": "https://gw.example/api", "SOAPBRIDGE_PUBLIC_URL": "https://b.example"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"-config", writeConfigFile(t, tc.file)}, args...)
			}
			cfg, err := loadConfig(args, envOf(tc.env))
			if len(tc.want) > 0 {
				require.Error(t, err)
				for _, w := range tc.want {
					assert.Contains(t, err.Error(), w)
				}
				assert.NotContains(t, err.Error(), cfgSecret)
				assert.NotContains(t, err.Error(), cfgKey)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.demo, cfg.Demo, "demo")
			assert.Len(t, cfg.sandboxWarnings(), tc.warns, "warnings: %q", cfg.sandboxWarnings())
		})
	}
}

// The warnings are logged at every start, with the merchant's goid but
// never its credentials.
func TestSandboxWarningLoggedAtStart(t *testing.T) {
	b := startInProcess(t, map[string]string{"SOAPBRIDGE_SANDBOX": "true", "SOAPBRIDGE_GOID": "8000000001",
		"SOAPBRIDGE_CLIENT_SECRET": cfgSecret, "SOAPBRIDGE_SECURE_KEY": cfgKey, "SOAPBRIDGE_PUBLIC_URL": "https://pay.example.com"})
	b.log.waitLine(t, "listening", b.done)
	logged := b.log.String()
	assert.Contains(t, logged, `"level":"warn"`)
	assert.Contains(t, logged, "the public URL is not a loopback address")
	assert.Contains(t, logged, "merchant 8000000001 is not the demo merchant")
	assert.NotContains(t, logged, cfgSecret)
	assert.NotContains(t, logged, cfgKey)
}

// The default sandbox address is loopback, in the binary's defaults.
func TestSandboxListensOnLoopbackByDefault(t *testing.T) {
	assert.True(t, loopbackHostPort(defaultConfig().SandboxListen))
	for _, h := range []string{"127.0.0.1:1", "[::1]:1", "localhost:1"} {
		assert.True(t, loopbackHostPort(h), h)
	}
	for _, h := range []string{":8090", "0.0.0.0:8090", "10.0.0.1:8090", "[::]:8090"} {
		assert.False(t, loopbackHostPort(h), h)
	}
}

// A state file the embedded sandbox cannot use stops the start with a
// message naming the file, what is wrong and the setting; the bridge does
// not run in memory beside a state file it would then never write.
func TestSandboxStateUnusableRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	require.NoError(t, os.WriteFile(broken, []byte(`{"version":1,"payments":[{"id":`), 0o600))
	future := filepath.Join(dir, "future.json")
	require.NoError(t, os.WriteFile(future, []byte(`{"version":99,"payments":[]}`), 0o600))
	tests := []struct {
		name, file string
		want       []string
	}{
		{"not JSON", broken, []string{"embedded sandbox: sandbox state " + broken, "unexpected end of JSON input",
			"unset sandbox_state (sandbox_state / SOAPBRIDGE_SANDBOX_STATE / -sandbox-state)"}},
		{"another version", future, []string{"version 99, this sandbox reads 1", "repair or move the file away"}},
		{"no such directory", filepath.Join(dir, "missing", "state.json"), []string{
			"the state file " + filepath.Join(dir, "missing", "state.json") + " cannot be written", "no such file or directory"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(tc.file)
			env := envOf(map[string]string{"SOAPBRIDGE_LISTEN": "127.0.0.1:0", "SOAPBRIDGE_SANDBOX_LISTEN": "127.0.0.1:0", "SOAPBRIDGE_ADMIN_LISTEN": "off",
				"SOAPBRIDGE_DATABASE": filepath.Join(t.TempDir(), "bridge.db"), "SOAPBRIDGE_SANDBOX_STATE": tc.file})
			err := run(context.Background(), nil, env, &bytes.Buffer{})
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			after, _ := os.ReadFile(tc.file)
			assert.Equal(t, before, after, "the file is left as it was")
		})
	}
}

// With a state file the embedded sandbox keeps its payments across a
// restart of the bridge, and ids go on above the ones it handed out; every
// statement format is offered (XLS_A included).
func TestSandboxStateKeptAcrossRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "sandbox.json")
	db := filepath.Join(t.TempDir(), "bridge.db")
	env := map[string]string{"SOAPBRIDGE_SANDBOX_STATE": state, "SOAPBRIDGE_DATABASE": db}

	first := startInProcess(t, env)
	sb := first.log.waitLine(t, "embedded sandbox gateway started", first.done)
	assert.Equal(t, state, sb["state_file"])
	id1 := createPaidAtSandbox(t, sb["url"].(string), "KEPT-1")
	first.stop()
	require.NoError(t, <-first.done)
	first.done <- nil // for the cleanup's wait

	second := startInProcess(t, env)
	sb = second.log.waitLine(t, "embedded sandbox gateway started", second.done)
	sandboxURL := sb["url"].(string)
	p := sandboxPayment(t, sandboxURL, id1)
	assert.Equal(t, "PAID", p["state"], "the first run's payment is still known, still paid")
	assert.Equal(t, "KEPT-1", p["order_number"])
	id2 := createPaidAtSandbox(t, sandboxURL, "KEPT-2")
	assert.Greater(t, id2, id1, "ids go on above the kept ones")

	// The state file is the sandbox's: private to the user.
	fi, err := os.Stat(state)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	tok := sandboxToken(t, sandboxURL)
	req, err := http.NewRequest(http.MethodPost, sandboxURL+"/api/accounts/account-statement", strings.NewReader(
		`{"date_from":"2020-01-01","date_to":"2100-01-01","goid":8123456789,"currency":"CZK","format":"XLS_A"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Equal(t, "PK", string(body[:2]), "an Office Open XML workbook (a zip)")
}

// sandboxToken gets a payment-all token of the demo merchant.
func sandboxToken(t *testing.T, sandboxURL string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, sandboxURL+"/api/oauth2/token",
		strings.NewReader("grant_type=client_credentials&scope=payment-all"))
	require.NoError(t, err)
	req.SetBasicAuth(demoClientID, demoClientSecret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	sandboxJSON(t, req, &tok)
	require.NotEmpty(t, tok.AccessToken)
	return tok.AccessToken
}

// createPaidAtSandbox creates a card payment straight at the sandbox and
// pays it; it returns the payment id.
func createPaidAtSandbox(t *testing.T, sandboxURL, order string) int64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, sandboxURL+"/api/payments/payment", strings.NewReader(
		`{"target":{"type":"ACCOUNT","goid":8123456789},"amount":1500,"currency":"CZK","order_number":"`+order+
			`","callback":{"return_url":"https://shop.example/return"}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+sandboxToken(t, sandboxURL))
	req.Header.Set("Content-Type", "application/json")
	var p struct {
		ID int64 `json:"id"`
	}
	sandboxJSON(t, req, &p)
	require.Positive(t, p.ID)
	req, err = http.NewRequest(http.MethodPost, fmt.Sprintf("%s/sandbox/payments/%d/pay", sandboxURL, p.ID), strings.NewReader(`{}`))
	require.NoError(t, err)
	sandboxJSON(t, req, nil)
	return p.ID
}

// sandboxPayment reads a payment through the sandbox's test helper.
func sandboxPayment(t *testing.T, sandboxURL string, id int64) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/sandbox/payments/%d", sandboxURL, id), nil)
	require.NoError(t, err)
	var p map[string]any
	sandboxJSON(t, req, &p)
	return p
}

func sandboxJSON(t *testing.T, req *http.Request, out any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s: %s", req.Method, req.URL.Path, body)
	if out != nil {
		require.NoError(t, json.Unmarshal(body, out), string(body))
	}
}
