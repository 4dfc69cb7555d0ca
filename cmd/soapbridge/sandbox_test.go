package main

import (
	"bytes"
	"fmt"
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
			cfg, err := loadConfig(args, envOf(tc.env), &bytes.Buffer{})
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
