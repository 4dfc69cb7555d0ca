package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
)

// runBinary runs the built soapbridge with args and only the given
// SOAPBRIDGE_ variables; it returns the output and the exit code.
func runBinary(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bridgeBinary(t), args...)
	cmd.Env = append(envWithout("SOAPBRIDGE_"), env...)
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), 0
}

// rowOf returns the check table's line for what.
func rowOf(t *testing.T, out, what string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, what+" ") {
			return l
		}
	}
	t.Fatalf("no %q row in:\n%s", what, out)
	return ""
}

// `soapbridge check` against a sandbox gateway the test runs, with a good
// configuration and with each kind of broken one.
func TestCheckCommand(t *testing.T) {
	gw := sandbox.New(sandbox.Options{Merchants: []sandbox.Merchant{
		{Account: restbackend.Account{GoID: 8000000001, ClientID: "shop-one", ClientSecret: cfgSecret}},
		{Account: restbackend.Account{GoID: 8000000002, ClientID: "shop-two", ClientSecret: cfgSecret + "-2"}},
	}})
	t.Cleanup(gw.Close)
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedURL := "http://" + closed.Addr().String() + "/api"
	closed.Close()

	file := func(gateway, secret2, database string) string {
		return writeConfigFile(t, fmt.Sprintf(`
gateway_url: %s
public_url: https://bridge.example
database: %s
merchants:
  - {goid: 8000000001, client_id: shop-one, client_secret: %s, secure_key: %s}
  - {goid: 8000000002, client_id: shop-two, client_secret: %s, secure_key: %s}
`, gateway, database, cfgSecret, cfgKey, secret2, cfgKey))
	}
	db := filepath.Join(t.TempDir(), "check.db")

	t.Run("good", func(t *testing.T) {
		out, code := runBinary(t, nil, "check", "-config", file(srv.URL+"/api", cfgSecret+"-2", db))
		assert.Equal(t, 0, code, out)
		t.Logf("check output:\n%s", out)
		assert.Contains(t, rowOf(t, out, "configuration"), "ok")
		assert.Contains(t, rowOf(t, out, "store"), "ok")
		assert.Contains(t, rowOf(t, out, "gateway"), "ok")
		assert.Contains(t, rowOf(t, out, "merchant 8000000001"), "ok")
		assert.Contains(t, rowOf(t, out, "merchant 8000000002"), "ok")
		assert.NotContains(t, out, cfgSecret)
	})
	t.Run("wrong secret", func(t *testing.T) {
		out, code := runBinary(t, nil, "check", "-config", file(srv.URL+"/api", cfgSecret+"-wrong", db))
		assert.Equal(t, 1, code, out)
		assert.Contains(t, rowOf(t, out, "merchant 8000000001"), "ok")
		assert.Contains(t, rowOf(t, out, "merchant 8000000002"), "FAIL")
		assert.NotContains(t, out, cfgSecret)
	})
	t.Run("unreachable gateway", func(t *testing.T) {
		out, code := runBinary(t, nil, "check", "-config", file(closedURL, cfgSecret+"-2", db))
		assert.Equal(t, 1, code, out)
		assert.Contains(t, rowOf(t, out, "gateway"), "FAIL")
		assert.Contains(t, rowOf(t, out, "gateway"), "unreachable")
		assert.Contains(t, rowOf(t, out, "merchant 8000000001"), "FAIL")
		assert.Contains(t, rowOf(t, out, "store"), "ok")
	})
	t.Run("bad DSN", func(t *testing.T) {
		out, code := runBinary(t, nil, "check", "-config", file(srv.URL+"/api", cfgSecret+"-2",
			"postgres://bridge:"+cfgSecret+"@"+closed.Addr().String()+"/nodb?connect_timeout=5"))
		assert.Equal(t, 1, code, out)
		assert.Contains(t, rowOf(t, out, "store"), "FAIL")
		assert.Contains(t, rowOf(t, out, "gateway"), "ok")
		assert.NotContains(t, out, cfgSecret)
	})
	t.Run("invalid configuration", func(t *testing.T) {
		out, code := runBinary(t, []string{"SOAPBRIDGE_CLIENT_SECRET=" + cfgSecret}, "check")
		assert.Equal(t, 1, code, out)
		assert.Contains(t, rowOf(t, out, "configuration"), "FAIL")
		assert.Contains(t, out, "SOAPBRIDGE_SANDBOX=true")
		assert.NotContains(t, out, cfgSecret)
	})
	t.Run("demo on the embedded sandbox", func(t *testing.T) {
		out, code := runBinary(t, []string{"SOAPBRIDGE_DATABASE=" + filepath.Join(t.TempDir(), "demo.db")}, "check")
		assert.Equal(t, 0, code, out)
		assert.Contains(t, rowOf(t, out, "gateway"), "embedded sandbox")
		assert.Contains(t, rowOf(t, out, "merchant 8123456789"), "ok")
	})
}

// `soapbridge healthcheck` finds the running bridge from the same settings.
func TestHealthcheckCommand(t *testing.T) {
	b := startBridge(t)
	listen := "SOAPBRIDGE_LISTEN=" + strings.TrimPrefix(b.URL, "http://")
	out, code := runBinary(t, []string{listen}, "healthcheck")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "ok "+b.URL+"/healthz")

	// The same port on every interface (as in the image: :8080) is checked
	// through loopback.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(b.URL, "http://"))
	out, code = runBinary(t, []string{"SOAPBRIDGE_LISTEN=:" + port}, "healthcheck")
	assert.Equal(t, 0, code, out)

	b.Stop()
	out, code = runBinary(t, []string{listen}, "healthcheck")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "healthcheck "+b.URL+"/healthz")
}

func TestHealthURL(t *testing.T) {
	for listen, want := range map[string]string{
		":8080":          "http://127.0.0.1:8080/healthz",
		"0.0.0.0:8080":   "http://127.0.0.1:8080/healthz",
		"[::]:8080":      "http://[::1]:8080/healthz",
		"10.1.2.3:8080":  "http://10.1.2.3:8080/healthz",
		"localhost:9000": "http://localhost:9000/healthz",
	} {
		got, err := healthURL(listen)
		require.NoError(t, err, listen)
		assert.Equal(t, want, got, listen)
	}
	_, err := healthURL("127.0.0.1:0")
	assert.Error(t, err)
}
