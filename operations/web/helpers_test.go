package web

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// Test merchant: the demo merchant of the embedded sandbox.
const (
	testGoID      = 8123456789
	testSecureKey = "DemoSecureKey-0123456789"
)

// unitConfig is a core whose gateway is unreachable.
func unitConfig(t *testing.T) operations.Config {
	return operations.Config{
		Merchants: []operations.Merchant{{Account: restbackend.Account{GoID: testGoID, ClientID: "sandbox-client", ClientSecret: "sandbox-secret"},
			SecureKey: testSecureKey, Currency: "CZK", Lang: "CS"}},
		Gateway:   restbackend.New(restbackend.Config{BaseURL: "http://127.0.0.1:1"}),
		Store:     memStore(t),
		PublicURL: "https://bridge.example",
	}
}

// memStore is a private in-memory SQLite store.
func memStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), ":memory:")
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}
