package operations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

// Test merchant: the demo merchant of the embedded sandbox.
const (
	testGoID      = 8123456789
	testSecureKey = "DemoSecureKey-0123456789"
)

func TestNewValidates(t *testing.T) {
	secret := "very-secret-client-value"
	cases := map[string]struct {
		edit func(*Config)
		want string
	}{
		"no merchants":   {func(c *Config) { c.Merchants = nil }, "no merchant"},
		"zero goid":      {func(c *Config) { c.Merchants[0].GoID = 0 }, "positive"},
		"short key":      {func(c *Config) { c.Merchants[0].SecureKey = "short-key" }, "at least 24"},
		"no secret":      {func(c *Config) { c.Merchants[0].ClientSecret = "" }, "client secret missing"},
		"duplicate goid": {func(c *Config) { c.Merchants = append(c.Merchants, c.Merchants[0]) }, "configured twice"},
		"default goid":   {func(c *Config) { c.DefaultGoID = 42 }, "default goid 42"},
		"no gateway":     {func(c *Config) { c.Gateway = nil }, "gateway"},
		"no store":       {func(c *Config) { c.Store = nil }, "store"},
		"relative url":   {func(c *Config) { c.PublicURL = "/bridge" }, "absolute"},
		"bad notify": {func(c *Config) { c.Merchants[0].NotificationURL = "ftp://x" },
			"notification URL"},
		// A window under StaleAfter would let a repeat of
		// a call still under way (or of a dead process's) act again.
		"short replay window": {func(c *Config) { c.Merchants[0].ReplayWindow = time.Minute; c.CallDeadline = 40 * time.Second },
			"replay window 1m0s must be longer than the call deadline"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := unitConfig(t)
			cfg.Merchants[0].ClientSecret = secret
			tc.edit(&cfg)
			_, err := New(cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), secret)
			assert.NotContains(t, err.Error(), testSecureKey)
		})
	}
	_, err := New(unitConfig(t))
	require.NoError(t, err)
}

func TestMerchantStringHidesSecrets(t *testing.T) {
	m := testMerchant()
	for _, s := range []string{m.String(), m.GoString()} {
		assert.NotContains(t, s, m.ClientSecret)
		assert.NotContains(t, s, m.SecureKey)
		assert.Contains(t, s, "8123456789")
	}
}

func testMerchant() Merchant {
	return Merchant{Account: restbackend.Account{GoID: testGoID, ClientID: "sandbox-client", ClientSecret: "sandbox-secret"},
		SecureKey: testSecureKey, Currency: "CZK", Lang: "CS"}
}

func unitConfig(t *testing.T) Config {
	return Config{
		Merchants: []Merchant{testMerchant()},
		Gateway:   restbackend.New(restbackend.Config{BaseURL: "http://127.0.0.1:1"}),
		Store:     memStore(t),
		PublicURL: "https://bridge.example",
	}
}
