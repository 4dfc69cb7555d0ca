package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Kustomize base's lock-out: the per-address cap off (as behind a load
// balancer) without trusted_proxies while a merchant relies on the
// caller's address. The bridge refuses such a configuration, naming the
// settings and the merchants; any of the ways out is accepted.
func TestCallersUnseenRefused(t *testing.T) {
	const gw = "gateway_url: https://gw.example/api\npublic_url: https://bridge.example\n"
	merchant := func(extra string) string {
		return fmt.Sprintf("merchants:\n  - {goid: 8000000001, client_id: a, client_secret: %s, secure_key: %s%s}\n", cfgSecret, cfgKey, extra)
	}
	basic := ", basic_user: shop, basic_password: Pass-Word-1"
	for name, tc := range map[string]struct {
		body    string
		refused bool
	}{
		"basic, cap off, no proxies":         {gw + "max_connections_per_ip: 0\n" + merchant(basic), true},
		"networks, cap off, no proxies":      {gw + "max_connections_per_ip: 0\n" + merchant(`, allowed_networks: "192.0.2.0/24"`), true},
		"basic, cap off, proxies":            {gw + "max_connections_per_ip: 0\ntrusted_proxies: 10.0.0.0/8\n" + merchant(basic), false},
		"basic, cap on, no proxies":          {gw + merchant(basic), false},
		"open merchant, cap off, no proxies": {gw + "max_connections_per_ip: 0\n" + merchant(""), false},
		"basic without failure limit":        {gw + "max_connections_per_ip: 0\nbasic_auth_failures_per_minute: 0\n" + merchant(basic), false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig([]string{"-config", writeConfigFile(t, tc.body)}, envOf(nil))
			if !tc.refused {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "max_connections_per_ip is 0 (as behind a load balancer) but trusted_proxies is empty, and merchant(s) 8000000001")
			assert.Contains(t, err.Error(), "SOAPBRIDGE_TRUSTED_PROXIES", "names the settings")
			assert.NotContains(t, err.Error(), cfgSecret)
		})
	}
}
