package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// day is the default replay window of a merchant.
const day = operations.DefaultReplayWindow

// Secrets used by the config tests; no error text may contain them.
const (
	cfgSecret = "TopSecret-ClientSecret-XYZ"
	cfgKey    = "TopSecret-SecureKey-0123456789"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func writeConfigFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "soapbridge.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestConfigDefaultsStartTheSandboxDemo(t *testing.T) {
	cfg, err := loadConfig(nil, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, ":8080", cfg.Listen)
	assert.Equal(t, "/axis/EPaymentServiceV2", cfg.SOAPPath)
	assert.Equal(t, int64(64<<10), cfg.MaxBodyBytes)
	assert.Equal(t, 4096, cfg.MaxConns)
	assert.Equal(t, 256, cfg.MaxConnsPerIP)
	assert.Zero(t, cfg.RateLimit)
	assert.Equal(t, "127.0.0.1:8090", cfg.SandboxListen)
	assert.Equal(t, "soapbridge.db", cfg.Database)
	assert.Equal(t, "https://testgw.gopay.cz/axis/EPaymentServiceV2", cfg.ServiceNamespace)
	assert.Empty(t, cfg.GatewayURL)
	assert.True(t, cfg.Demo)
	assert.Equal(t, []Merchant{{Account: restbackend.Account{GoID: 8123456789, ClientID: "sandbox-client", ClientSecret: "sandbox-secret"},
		SecureKey: "DemoSecureKey-0123456789", Currency: "CZK", Lang: "CS", ReplayWindow: day}}, cfg.Merchants)
}

func TestConfigDemoMerchantFromEnv(t *testing.T) {
	cfg, err := loadConfig(nil, envOf(map[string]string{
		"SOAPBRIDGE_SANDBOX": "true", "SOAPBRIDGE_GOID": "8000000001", "SOAPBRIDGE_SECURE_KEY": cfgKey,
		"SOAPBRIDGE_CURRENCY": "eur", "SOAPBRIDGE_LANG": "en",
		"SOAPBRIDGE_NOTIFICATION_URL": "https://shop.example/notify.php?x=1",
	}))
	require.NoError(t, err)
	assert.True(t, cfg.Demo)
	assert.Equal(t, []Merchant{{Account: restbackend.Account{GoID: 8000000001, ClientID: "sandbox-client", ClientSecret: "sandbox-secret"},
		SecureKey: cfgKey, Currency: "EUR", Lang: "EN", NotificationURL: "https://shop.example/notify.php?x=1", ReplayWindow: day}}, cfg.Merchants)
}

func TestConfigPrecedence(t *testing.T) {
	file := writeConfigFile(t, `
listen: "127.0.0.1:9000"
soap_path: /file/path
read_timeout: 7s
max_body_bytes: 5000
`)
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		listen string
		path   string
	}{
		{"file", []string{"-config", file}, nil, "127.0.0.1:9000", "/file/path"},
		{"file by env", nil, map[string]string{"SOAPBRIDGE_CONFIG": file}, "127.0.0.1:9000", "/file/path"},
		{"env over file", []string{"-config", file}, map[string]string{"SOAPBRIDGE_LISTEN": "127.0.0.1:9001"}, "127.0.0.1:9001", "/file/path"},
		{"flag over env", []string{"-config", file, "-listen", "127.0.0.1:9002"},
			map[string]string{"SOAPBRIDGE_LISTEN": "127.0.0.1:9001", "SOAPBRIDGE_SOAP_PATH": "/env/path"}, "127.0.0.1:9002", "/env/path"},
		{"flag config over env config", []string{"-config", file}, map[string]string{"SOAPBRIDGE_CONFIG": "/nonexistent.yaml"}, "127.0.0.1:9000", "/file/path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(tc.args, envOf(tc.env))
			require.NoError(t, err)
			assert.Equal(t, tc.listen, cfg.Listen)
			assert.Equal(t, tc.path, cfg.SOAPPath)
			assert.Equal(t, 7*time.Second, cfg.ReadTimeout)
			assert.Equal(t, int64(5000), cfg.MaxBodyBytes)
			assert.Equal(t, file, cfg.ConfigFile)
		})
	}
}

func TestConfigFileMerchantsWithEnvOverride(t *testing.T) {
	file := writeConfigFile(t, fmt.Sprintf(`
gateway_url: https://gw.sandbox.example/api
public_url: https://bridge.example/
default_goid: 8000000002
merchants:
  - goid: 8000000001
    client_id: one
    client_secret: %[1]s-1
    secure_key: %[2]s-1
  - goid: 8000000002
    client_id: two
    client_secret: from-file-secret
    secure_key: %[2]s-2
    currency: eur
    lang: sk
    notification_url: https://shop2.example/notify
`, cfgSecret, cfgKey))
	cfg, err := loadConfig([]string{"-config", file}, envOf(map[string]string{
		"SOAPBRIDGE_GOID":          "8000000002",
		"SOAPBRIDGE_CLIENT_SECRET": cfgSecret + "-2",
	}))
	require.NoError(t, err)
	assert.False(t, cfg.Demo)
	assert.Equal(t, "https://bridge.example", cfg.PublicURL)
	assert.Equal(t, int64(8000000002), cfg.DefaultGoID)
	assert.Equal(t, []Merchant{
		{Account: restbackend.Account{GoID: 8000000001, ClientID: "one", ClientSecret: cfgSecret + "-1"}, SecureKey: cfgKey + "-1", Currency: "CZK", Lang: "CS", ReplayWindow: day},
		{Account: restbackend.Account{GoID: 8000000002, ClientID: "two", ClientSecret: cfgSecret + "-2"}, SecureKey: cfgKey + "-2", Currency: "EUR", Lang: "SK",
			NotificationURL: "https://shop2.example/notify", ReplayWindow: day},
	}, cfg.Merchants)

	// A goid not in the file adds a merchant defined by the environment.
	cfg, err = loadConfig([]string{"-config", file}, envOf(map[string]string{
		"SOAPBRIDGE_GOID": "8000000003", "SOAPBRIDGE_CLIENT_ID": "three",
		"SOAPBRIDGE_CLIENT_SECRET": cfgSecret, "SOAPBRIDGE_SECURE_KEY": cfgKey,
	}))
	require.NoError(t, err)
	require.Len(t, cfg.Merchants, 3)
	assert.Equal(t, Merchant{Account: restbackend.Account{GoID: 8000000003, ClientID: "three", ClientSecret: cfgSecret}, SecureKey: cfgKey, Currency: "CZK", Lang: "CS", ReplayWindow: day}, cfg.Merchants[2])
}

func TestConfigSingleMerchantByEnv(t *testing.T) {
	cfg, err := loadConfig(nil, envOf(map[string]string{
		"SOAPBRIDGE_GATEWAY_URL": "https://gw.example/api", "SOAPBRIDGE_PUBLIC_URL": "https://bridge.example",
		"SOAPBRIDGE_GOID": "8000000001", "SOAPBRIDGE_CLIENT_ID": "cid",
		"SOAPBRIDGE_CLIENT_SECRET": cfgSecret, "SOAPBRIDGE_SECURE_KEY": cfgKey,
	}))
	require.NoError(t, err)
	assert.False(t, cfg.Demo)
	assert.Equal(t, []Merchant{{Account: restbackend.Account{GoID: 8000000001, ClientID: "cid", ClientSecret: cfgSecret}, SecureKey: cfgKey, Currency: "CZK", Lang: "CS", ReplayWindow: day}}, cfg.Merchants)
}

func TestConfigErrors(t *testing.T) {
	gateway := map[string]string{
		"SOAPBRIDGE_GATEWAY_URL": "https://gw.example/api", "SOAPBRIDGE_PUBLIC_URL": "https://bridge.example",
		"SOAPBRIDGE_GOID": "8000000001", "SOAPBRIDGE_CLIENT_ID": "cid",
		"SOAPBRIDGE_CLIENT_SECRET": cfgSecret, "SOAPBRIDGE_SECURE_KEY": cfgKey,
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range gateway {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	twoMerchants := fmt.Sprintf(`
merchants:
  - {goid: 8000000001, client_id: a, client_secret: %[1]s, secure_key: %[2]s}
  - {goid: 8000000002, client_id: b, client_secret: %[1]s, secure_key: %[2]s}
`, cfgSecret, cfgKey)

	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		want string
	}{
		{name: "missing secret", env: with("SOAPBRIDGE_CLIENT_SECRET", ""), want: "merchant 8000000001: client secret missing (merchants[0].client_secret / SOAPBRIDGE_CLIENT_SECRET)"},
		{name: "missing client id", env: with("SOAPBRIDGE_CLIENT_ID", ""), want: "merchant 8000000001: client id missing"},
		{name: "short secure key", env: with("SOAPBRIDGE_SECURE_KEY", "short-"+cfgSecret[:5]), want: "merchant 8000000001: secure key must have at least 24 characters"},
		{name: "short demo secure key", env: map[string]string{"SOAPBRIDGE_SECURE_KEY": "TopSecret"}, want: "secure key must have at least 24 characters"},
		{name: "bad goid", env: with("SOAPBRIDGE_GOID", "81234x"), want: "SOAPBRIDGE_GOID: `81234x` is not an integer"},
		{name: "negative goid", env: with("SOAPBRIDGE_GOID", "-5"), want: "goid must be a positive integer"},
		{name: "bad goid in file", file: "merchants:\n  - {goid: -1, client_id: a, client_secret: " + cfgSecret + ", secure_key: " + cfgKey + "}\n",
			want: "merchant #1: goid must be a positive integer"},
		{name: "non-numeric goid in file", file: "merchants:\n  - {goid: abc, client_id: a, client_secret: " + cfgSecret + ", secure_key: " + cfgKey + "}\n",
			want: "line 2: merchants[0].goid: `abc` is not an integer"},
		{name: "duplicate goid", file: strings.ReplaceAll(twoMerchants, "8000000002", "8000000001"), env: map[string]string{}, want: "merchant 8000000001: configured twice (merchants[1].goid / SOAPBRIDGE_GOID)"},
		{name: "env merchant ambiguous", file: twoMerchants, env: map[string]string{"SOAPBRIDGE_CLIENT_SECRET": cfgSecret}, want: "SOAPBRIDGE_GOID is not"},
		{name: "unknown key in file", file: "listen: :1\nlisten_port: 2\n", want: "line 2: `listen_port` is not a setting; did you mean `listen`?"},
		{name: "missing file", args: []string{"-config", "/nonexistent/soapbridge.yaml"}, want: "config file"},
		{name: "no merchant with gateway", env: map[string]string{"SOAPBRIDGE_GATEWAY_URL": "https://gw.example/api", "SOAPBRIDGE_PUBLIC_URL": "https://b.example"},
			want: "no merchant configured"},
		{name: "gateway without public url", env: with("SOAPBRIDGE_PUBLIC_URL", ""), want: "public URL is required with a real gateway"},
		{name: "relative gateway url", env: with("SOAPBRIDGE_GATEWAY_URL", "gw.example/api"), want: "gateway URL: not an absolute http(s) URL"},
		{name: "public url with credentials", env: with("SOAPBRIDGE_PUBLIC_URL", "https://user:"+cfgSecret+"@b.example"), want: "public URL: must not carry user info"},
		{name: "bad currency", env: with("SOAPBRIDGE_CURRENCY", "KORUNA"), want: `currency "KORUNA" is not a 3-letter code`},
		{name: "bad lang", env: with("SOAPBRIDGE_LANG", "cze"), want: `language "CZE" is not a 2-letter code`},
		{name: "bad notification url", env: with("SOAPBRIDGE_NOTIFICATION_URL", "ftp://x"), want: "notification URL: not an absolute http(s) URL"},
		{name: "return status timeout zero", env: with("SOAPBRIDGE_RETURN_STATUS_TIMEOUT", "0s"), want: "return status timeout: 0s must be positive"},
		{name: "return status timeout past write timeout", env: with("SOAPBRIDGE_RETURN_STATUS_TIMEOUT", "2m"), want: "within the write timeout (1m0s)"},
		{name: "unknown default goid", env: with("SOAPBRIDGE_DEFAULT_GOID", "1"), want: "default goid 1 is not a configured merchant"},
		{name: "bad listen", args: []string{"-listen", "8080"}, want: `listen: "8080" is not host:port`},
		{name: "bad soap path", env: map[string]string{"SOAPBRIDGE_SOAP_PATH": "axis"}, want: "SOAP path"},
		{name: "bad duration", env: map[string]string{"SOAPBRIDGE_READ_TIMEOUT": "soon"}, want: "SOAPBRIDGE_READ_TIMEOUT: `soon` is not a duration"},
		{name: "bad flag integer", args: []string{"-max-body-bytes", "1M"}, want: "flag -max-body-bytes: `1M` is not an integer"},
		{name: "zero body limit", env: map[string]string{"SOAPBRIDGE_MAX_BODY_BYTES": "0"}, want: "max body bytes must be positive"},
		{name: "bad log level", env: map[string]string{"SOAPBRIDGE_LOG_LEVEL": "loud"}, want: `log level: "loud"`},
		{name: "bad log format", args: []string{"-log-format", "xml"}, want: `log format: "xml"`},
		{name: "unknown flag", args: []string{"-client-secret", cfgSecret}, want: "-client-secret is not a setting (merchant settings are not flags"},
		{name: "positional argument", args: []string{"serve"}, want: `unexpected argument "serve"`},
		{name: "deadline over write timeout", env: with("SOAPBRIDGE_CALL_DEADLINE", "70s"), want: "call deadline 1m10s plus the REST timeout 10s must be shorter than the write timeout 1m0s"},
		{name: "no room to reconcile before the write timeout", env: with("SOAPBRIDGE_CALL_DEADLINE", "55s"),
			want: "call deadline 55s plus the REST timeout 10s must be shorter than the write timeout 1m0s"},
		{name: "deadline under REST timeout", env: with("SOAPBRIDGE_CALL_DEADLINE", "8s"), want: "call deadline 8s must be longer than the REST timeout 10s: a money-moving POST starts only with the REST timeout left"},
		{name: "REST timeout over deadline", args: []string{"-rest-timeout", "30s"}, env: gateway, want: "must be longer than the REST timeout 30s"},
		{name: "shutdown shorter than deadline", env: with("SOAPBRIDGE_SHUTDOWN_TIMEOUT", "20s"), want: "shutdown timeout 20s is shorter than the call deadline 25s"},
		{name: "zero deadline", env: with("SOAPBRIDGE_CALL_DEADLINE", "0s"), want: "call deadline must be positive (call_deadline / SOAPBRIDGE_CALL_DEADLINE / -call-deadline)"},
		{name: "ledger retention under replay window", file: "merchants:\n  - {goid: 8000000001, client_id: a, client_secret: " + cfgSecret + ", secure_key: " + cfgKey + ", replay_window: 800h}\n",
			want: "retention of the ledger 720h0m0s is under the longest replay window 800h0m0s: a repeat inside its window could act again (retain_ledger / SOAPBRIDGE_RETAIN_LEDGER / -retain-ledger)"},
		{name: "tiny replay window", file: "merchants:\n  - {goid: 8000000001, client_id: a, client_secret: " + cfgSecret + ", secure_key: " + cfgKey + ", replay_window: 1s}\n",
			want: "replay window 1s is under a minute"},
		{name: "replay window under deadline plus stale margin", file: "merchants:\n  - {goid: 8000000001, client_id: a, client_secret: " + cfgSecret + ", secure_key: " + cfgKey + ", replay_window: 70s}\n",
			env: with("SOAPBRIDGE_CALL_DEADLINE", "45s"), want: "merchant 8000000001: replay window 1m10s must be longer than the call deadline plus the REST timeout plus 1m20s (2m15s): a repeat of a call still under way would act again, and a recurrence whose reply was lost could be taken for the one before it (merchants[0].replay_window in the config file)"},
		{name: "short session retention", env: with("SOAPBRIDGE_RETAIN_SESSIONS", "100h"), want: "retention of sessions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"-config", writeConfigFile(t, tc.file)}, args...)
			}
			_, err := loadConfig(args, envOf(tc.env))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			for _, secret := range []string{cfgSecret, cfgKey, "TopSecret"} {
				assert.NotContains(t, err.Error(), secret)
			}
		})
	}
}

// The deadlines fit together by default: a POST fits in the call deadline,
// the reply is written before the write timeout, and SIGTERM waits for a
// call in flight.
func TestConfigDeadlineDefaults(t *testing.T) {
	cfg, err := loadConfig(nil, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, 25*time.Second, cfg.CallDeadline)
	assert.Equal(t, 10*time.Second, cfg.RESTTimeout)
	// One default each: the core's call deadline, the REST client's timeout.
	assert.Equal(t, operations.DefaultCallDeadline, cfg.CallDeadline)
	assert.Equal(t, restbackend.DefaultTimeout, cfg.RESTTimeout)
	assert.Greater(t, cfg.CallDeadline, cfg.RESTTimeout)
	assert.Less(t, cfg.CallDeadline, cfg.WriteTimeout)
	assert.Equal(t, 40*time.Second, cfg.ShutdownTimeout, "deadline + REST timeout + margin")
	assert.Equal(t, store.DefaultRetention(), cfg.Retention())
	assert.Equal(t, operations.DefaultReplayWindow, cfg.Merchants[0].ReplayWindow)

	cfg, err = loadConfig([]string{"-call-deadline", "40s", "-retain-ledger", "1000h"}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, 55*time.Second, cfg.ShutdownTimeout)
	assert.Equal(t, 1000*time.Hour, cfg.Retention().Ledger)
}

func TestConfigReportsAllProblems(t *testing.T) {
	_, err := loadConfig(nil, envOf(map[string]string{
		"SOAPBRIDGE_GATEWAY_URL": "https://gw.example/api", "SOAPBRIDGE_PUBLIC_URL": "https://bridge.example",
		"SOAPBRIDGE_GOID": "8000000001", "SOAPBRIDGE_SECURE_KEY": "x",
	}))
	require.Error(t, err)
	for _, want := range []string{"client id missing", "client secret missing", "secure key must have"} {
		assert.Contains(t, err.Error(), want)
	}
}

// -h lists every setting under its three names with its real default
// (run prints it and succeeds); the merchant variables are listed, but no
// merchant flag exists.
func TestHelp(t *testing.T) {
	_, err := loadConfig([]string{"-help"}, envOf(nil))
	assert.ErrorIs(t, err, flag.ErrHelp)
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-h"}, envOf(nil), &out))
	for _, s := range fieldsOf(&Config{}) {
		assert.Regexp(t, "(?m)^  -"+flagName(s.key)+"( |$)", out.String())
		assert.Contains(t, out.String(), "(file "+s.key+", env "+envName(s.key)+")")
	}
	for _, want := range []string{
		"  -read-timeout duration\n", "(file read_timeout, env SOAPBRIDGE_READ_TIMEOUT) (default 30s)\n",
		", env SOAPBRIDGE_REST_TIMEOUT) (default 10s)\n", ", env SOAPBRIDGE_CALL_DEADLINE) (default 25s)\n",
		", env SOAPBRIDGE_RETAIN_LEDGER) (default 720h0m0s)\n", ", env SOAPBRIDGE_RETAIN_SESSIONS) (default 9600h0m0s)\n",
		"  -max-body-bytes int\n", ", env SOAPBRIDGE_MAX_BODY_BYTES) (default 65536)\n",
		"  -sandbox\n", "Default: their sum + 5s", "  -config string\n", "  -version\n",
		"SOAPBRIDGE_CLIENT_SECRET", "SOAPBRIDGE_BASIC_PASSWORD", "SOAPBRIDGE_ALLOWED_NETWORKS",
	} {
		assert.Contains(t, out.String(), want)
	}
	assert.NotContains(t, out.String(), "-client-secret")
	assert.NotContains(t, out.String(), "SOAPBRIDGE_REPLAY_WINDOW")
}

// soapbridge version and -version print the version, the VCS revision and
// the Go version, and start nothing.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"-version"}, {"-listen", "127.0.0.1:1", "-version"}} {
		var out bytes.Buffer
		require.NoError(t, run(t.Context(), args, envOf(nil), &out), args)
		assert.Regexp(t, `^soapbridge \S+, revision \S+.*, go\d+\.\d+`, out.String(), args)
		assert.Contains(t, out.String(), runtime.Version())
	}
}

func TestMerchantStringHidesSecrets(t *testing.T) {
	m := Merchant{Account: restbackend.Account{GoID: 1, ClientID: "cid", ClientSecret: cfgSecret}, SecureKey: cfgKey}
	for _, s := range []string{fmt.Sprint(m), fmt.Sprintf("%+v", m), fmt.Sprintf("%#v", m), fmt.Sprintf("%v", []Merchant{m})} {
		assert.NotContains(t, s, cfgSecret)
		assert.NotContains(t, s, cfgKey)
		assert.Contains(t, s, "cid")
	}
}

// The example file in the repository must stay loadable.
func TestExampleConfigLoads(t *testing.T) {
	cfg, err := loadConfig([]string{"-config", "../../soapbridge.example.yaml"}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, "https://gw.sandbox.gopay.com/api", cfg.GatewayURL)
	assert.Equal(t, defaultConfig().ReadTimeout, cfg.ReadTimeout)
	require.Len(t, cfg.Merchants, 1)
	assert.Equal(t, int64(8123456789), cfg.Merchants[0].GoID)
}

// loadConfig can run again while the bridge serves (a reload): each call
// reads the file anew and returns a Config of its own; nothing is printed
// or kept between calls, and a bad file is an error, not a half-read Config.
func TestLoadConfigRunsAgain(t *testing.T) {
	file := writeConfigFile(t, "sandbox: true\nmerchants:\n  - {goid: 8000000001, client_id: a, client_secret: "+cfgSecret+", secure_key: "+cfgKey+", currency: eur}\n")
	env := envOf(map[string]string{"SOAPBRIDGE_CALL_DEADLINE": "20s"})
	first, err := loadConfig([]string{"-config", file, "-listen", "127.0.0.1:0"}, env)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, []byte("sandbox: true\nmerchants:\n  - {goid: 8000000002, client_id: b, client_secret: "+cfgSecret+", secure_key: "+cfgKey+"}\n"), 0o600))
	second, err := loadConfig([]string{"-config", file, "-listen", "127.0.0.1:0"}, env)
	require.NoError(t, err)
	assert.Equal(t, int64(8000000001), first.Merchants[0].GoID)
	assert.Equal(t, "EUR", first.Merchants[0].Currency)
	assert.Equal(t, int64(8000000002), second.Merchants[0].GoID)
	assert.Equal(t, "CZK", second.Merchants[0].Currency)
	for _, c := range []Config{first, second} {
		assert.Equal(t, 20*time.Second, c.CallDeadline)
		assert.Equal(t, "127.0.0.1:0", c.Listen)
	}

	require.NoError(t, os.WriteFile(file, []byte("merchants:\n  - {goid: 8000000002, secure_key: short}\n"), 0o600))
	_, err = loadConfig([]string{"-config", file}, env)
	assert.ErrorContains(t, err, "secure key must have at least 24 characters (merchants[0].secure_key / SOAPBRIDGE_SECURE_KEY)")

	// The demo merchant is copied, never normalized in place.
	_, err = loadConfig(nil, envOf(nil))
	require.NoError(t, err)
	assert.Empty(t, demoMerchant.Currency)
}

// Every validation problem ends with the settings to change, each a real
// one: a file key with its variable and flag, or a merchant's key path with
// its variable (none for file-only keys).
func TestEveryProblemNamesItsSettings(t *testing.T) {
	file := writeConfigFile(t, fmt.Sprintf(`
gateway_url: gw.example/api
listen: "8080"
soap_path: axis
log_level: loud
log_format: xml
max_connections: -1
rate_limit: -1
read_timeout: -1s
return_status_timeout: 2m
call_deadline: 55s
shutdown_timeout: 20s
retain_sessions: 100h
admin_listen: nowhere
otlp_endpoint: ftp://otel
trusted_proxies: 10.0.0.0/33
admin_hosts: "http://admin.example"
default_goid: 1
merchants:
  - {goid: 8000000001, client_id: a, client_secret: %[1]s, secure_key: short, replay_window: 1s}
  - {goid: 8000000001, client_id: b, client_secret: %[1]s, secure_key: %[2]s, currency: KORUNA, notification_url: "https://u:%[1]s@shop.example/"}
  - {client_id: c, secure_key: %[2]s, basic_user: x, rate_limit: -1}
`, cfgSecret, cfgKey))
	_, err := loadConfig([]string{"-config", file}, envOf(nil))
	require.Error(t, err)
	settingKeys := map[string]bool{}
	for _, s := range fieldsOf(&Config{}) {
		settingKeys[s.key] = true
	}
	merchantKeys := map[string]bool{}
	for _, s := range fieldsOf(&Merchant{}) {
		merchantKeys[s.key] = true
	}
	names := regexp.MustCompile(`\(([^()]*)\)$`)
	merchantKey := regexp.MustCompile(`^merchants\[(\d)\]\.(\w+)`)
	lines := strings.Split(err.Error(), "\n")
	assert.GreaterOrEqual(t, len(lines), 25, err.Error())
	for _, line := range lines {
		assert.NotContains(t, line, cfgSecret)
		assert.NotContains(t, line, cfgKey)
		m := names.FindStringSubmatch(line)
		if !assert.NotNil(t, m, "names no setting: %s", line) {
			continue
		}
		for _, n := range strings.Split(m[1], "; ") {
			if mk := merchantKey.FindStringSubmatch(n); mk != nil {
				assert.True(t, merchantKeys[mk[2]], "not a merchant key: %s", n)
				assert.True(t, n == mk[0]+" in the config file" || n == mk[0]+" / "+envName(mk[2]), n)
				continue
			}
			key, _, _ := strings.Cut(n, " / ")
			assert.True(t, settingKeys[key], "not a setting: %s", n)
			assert.Equal(t, key+" / "+envName(key)+" / -"+flagName(key), n)
		}
	}
	for _, want := range []string{"(soap_path / SOAPBRIDGE_SOAP_PATH / -soap-path)", "(merchants[0].replay_window in the config file)",
		"merchant 8000000001: configured twice (merchants[1].goid / SOAPBRIDGE_GOID)", "merchant #3: goid must be a positive integer",
		"(merchants[2].rate_limit in the config file)", "(call_deadline / SOAPBRIDGE_CALL_DEADLINE / -call-deadline; rest_timeout /"} {
		assert.Contains(t, err.Error(), want)
	}
}

// Errors name the key as the user wrote it, where they wrote it, and
// suggest the setting they probably meant.
func TestConfigErrorsInTheUsersTerms(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		want string
	}{
		{name: "misspelt file key", file: "listen: :1\nlisten_adress: 127.0.0.1:8080\n",
			want: "line 2: `listen_adress` is not a setting; did you mean `listen`?"},
		{name: "file key with dashes", file: "public-url: https://b.example\n", want: "`public-url` is not a setting; did you mean `public_url`?"},
		{name: "file key typo", file: "gateway_ulr: https://gw.example\n", want: "`gateway_ulr` is not a setting; did you mean `gateway_url`?"},
		{name: "unrelated file key", file: "colour: blue\n", want: "line 1: `colour` is not a setting"},
		{name: "misspelt merchant key", file: "merchants:\n  - goid: 1\n    secret_key: x\n",
			want: "line 3: `secret_key` is not a setting; did you mean `secure_key`?"},
		{name: "bare number duration in file", file: "read_timeout: 30\n", want: "line 1: read_timeout: `30` is not a duration, write `30s`"},
		{name: "bare number duration in env", env: map[string]string{"SOAPBRIDGE_IDLE_TIMEOUT": "30"}, want: "SOAPBRIDGE_IDLE_TIMEOUT: `30` is not a duration, write `30s`"},
		{name: "bare number duration as flag", args: []string{"-write-timeout", "2.5"}, want: "flag -write-timeout: `2.5` is not a duration, write `2.5s`"},
		{name: "list for a single value", file: "listen:\n  - :1\n", want: "line 2: listen: a list is not a string"},
		{name: "key set twice", file: "listen: :1\nlisten: :2\n", want: `line 2: mapping key "listen" already defined at line 1`},
		{name: "merchants not a list", file: "merchants: 5\n", want: "line 1: merchants: `5` is not a list"},
		{name: "misspelt flag", args: []string{"-listen-adress", ":1"}, want: "-listen-adress is not a setting; did you mean -listen?"},
		{name: "validation names the keys", env: map[string]string{"SOAPBRIDGE_LOG_FORMAT": "xml"},
			want: `log format: "xml" is not json or console (log_format / SOAPBRIDGE_LOG_FORMAT / -log-format)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"-config", writeConfigFile(t, tc.file)}, args...)
			}
			_, err := loadConfig(args, envOf(tc.env))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestUnknownEnvironmentVariables(t *testing.T) {
	assert.NoError(t, checkEnvNames([]string{"PATH=/bin", "SOAPBRIDGE_LISTEN=:1", "SOAPBRIDGE_CLIENT_SECRET=x", "SOAPBRIDGE_E2E_BINARY=/x"}))
	err := checkEnvNames([]string{"SOAPBRIDGE_GATEWAY_ULR=https://gw.example", "SOAPBRIDGE_LISTEN_ADRESS=:1", "SOAPBRIDGE_CLIENTSECRET=" + cfgSecret})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SOAPBRIDGE_GATEWAY_ULR is not a setting; did you mean SOAPBRIDGE_GATEWAY_URL?")
	assert.Contains(t, err.Error(), "SOAPBRIDGE_LISTEN_ADRESS is not a setting; did you mean SOAPBRIDGE_LISTEN?")
	assert.Contains(t, err.Error(), "SOAPBRIDGE_CLIENTSECRET is not a setting; did you mean SOAPBRIDGE_CLIENT_SECRET?")
	assert.NotContains(t, err.Error(), cfgSecret)
}

// -h must tell the truth about -public-url: without it, callbacks go to the
// listen address, which only a gateway on this host can reach.
func TestHelpPublicURL(t *testing.T) {
	var out bytes.Buffer
	printUsage(&out)
	assert.Contains(t, out.String(), "required with a real gateway")
	assert.Contains(t, out.String(), "http://<listen address>")
	assert.NotContains(t, out.String(), "gateway callbacks); derived from the request when empty")
}

// void_recurrent_reply: per merchant from the file, overridden by the
// environment, any case; an unknown scheme is a start-up error.
func TestConfigVoidRecurrentReply(t *testing.T) {
	file := writeConfigFile(t, fmt.Sprintf(`
gateway_url: https://gw.sandbox.example/api
public_url: https://bridge.example/
merchants:
  - goid: 8000000001
    client_id: php-shop
    client_secret: %[1]s-1
    secure_key: %[2]s-1
  - goid: 8000000002
    client_id: dotnet-shop
    client_secret: %[1]s-2
    secure_key: %[2]s-2
    void_recurrent_reply: PaymentSession
`, cfgSecret, cfgKey))
	cfg, err := loadConfig([]string{"-config", file}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, "", cfg.Merchants[0].VoidRecurrentReply, "default: the PHP library's paymentResult scheme")
	assert.Equal(t, "paymentSession", cfg.Merchants[1].VoidRecurrentReply)

	cfg, err = loadConfig([]string{"-config", file}, envOf(map[string]string{
		"SOAPBRIDGE_GOID": "8000000001", "SOAPBRIDGE_VOID_RECURRENT_REPLY": "paymentsession",
	}))
	require.NoError(t, err)
	assert.Equal(t, "paymentSession", cfg.Merchants[0].VoidRecurrentReply)

	_, err = loadConfig([]string{"-config", file}, envOf(map[string]string{
		"SOAPBRIDGE_GOID": "8000000001", "SOAPBRIDGE_VOID_RECURRENT_REPLY": "both",
	}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "void_recurrent_reply")
	assert.Contains(t, err.Error(), "SOAPBRIDGE_VOID_RECURRENT_REPLY")
}

// The file is YAML as operators write it: anchors, aliases and merge keys
// (a merchant's own keys win over those it merges), JSON, numbers where a
// string belongs; an empty file sets nothing.
func TestConfigFileYAMLFeatures(t *testing.T) {
	cfg, err := loadConfig([]string{"-config", writeConfigFile(t, fmt.Sprintf(`
sandbox: true
shared: &shared {client_secret: %[1]s, secure_key: %[2]s, currency: eur, rate_limit: 2.5}
merchants:
  - {<<: *shared, goid: 8000000001, client_id: 1234567890}
  - <<: *shared
    goid: 8000000002
    client_id: two
    currency: czk
`, cfgSecret, cfgKey))}, envOf(nil))
	require.ErrorContains(t, err, "line 3: `shared` is not a setting", "the anchor's own key is no setting")
	assert.NotContains(t, err.Error(), "merchants[")

	cfg, err = loadConfig([]string{"-config", writeConfigFile(t, fmt.Sprintf(`
sandbox: true
merchants:
  - &first {goid: 8000000001, client_id: 1234567890, client_secret: %[1]s, secure_key: %[2]s, currency: eur, rate_limit: 2.5}
  - <<: *first
    goid: 8000000002
    currency: czk
`, cfgSecret, cfgKey))}, envOf(nil))
	require.NoError(t, err)
	require.Len(t, cfg.Merchants, 2)
	assert.Equal(t, "1234567890", cfg.Merchants[0].ClientID, "an unquoted number is a string's text")
	assert.Equal(t, "EUR", cfg.Merchants[0].Currency)
	assert.Equal(t, 2.5, cfg.Merchants[1].RateLimit)
	assert.Equal(t, "1234567890", cfg.Merchants[1].ClientID)
	assert.Equal(t, int64(8000000002), cfg.Merchants[1].GoID)
	assert.Equal(t, "CZK", cfg.Merchants[1].Currency, "the merchant's own key wins over the merged one")

	cfg, err = loadConfig([]string{"-config", writeConfigFile(t, `{"listen": "127.0.0.1:1", "sandbox": true, "max_depth": 9}`)}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:1", cfg.Listen)
	assert.Equal(t, 9, cfg.MaxDepth)

	for _, empty := range []string{"", "# nothing yet\n"} {
		cfg, err = loadConfig([]string{"-config", writeConfigFile(t, empty)}, envOf(nil))
		require.NoError(t, err)
		assert.Equal(t, defaultConfig().Listen, cfg.Listen)
		assert.True(t, cfg.Demo)
	}
}
