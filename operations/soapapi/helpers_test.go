package soapapi

import (
	"context"
	"reflect"
	"testing"

	"github.com/legacybridge/soapbridge/store"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/stretchr/testify/require"
)

// Test merchant: the demo merchant of the embedded sandbox.
const (
	testGoID      = 8123456789
	testSecureKey = "DemoSecureKey-0123456789"
)

func testMerchant() operations.Merchant {
	return operations.Merchant{Account: restbackend.Account{GoID: testGoID, ClientID: "sandbox-client", ClientSecret: "sandbox-secret"},
		SecureKey: testSecureKey, Currency: "CZK", Lang: "CS"}
}

// testCredentials are testMerchant's REST credentials.
func testCredentials() restbackend.Credentials {
	m := testMerchant()
	return m.Credentials()
}

func unitConfig(t *testing.T) operations.Config {
	return operations.Config{
		Merchants: []operations.Merchant{testMerchant()},
		Gateway:   restbackend.New(restbackend.Config{BaseURL: "http://127.0.0.1:1"}),
		Store:     memStore(t),
		PublicURL: "https://bridge.example",
	}
}

// unitAPI is the SOAP API of a service whose gateway is unreachable.
func unitAPI(t *testing.T, cfg operations.Config) *API {
	t.Helper()
	s, err := operations.New(cfg)
	require.NoError(t, err)
	a, err := New(Config{Service: s, Logger: cfg.Logger})
	require.NoError(t, err)
	return a
}

// memStore is a private in-memory SQLite store.
func memStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), ":memory:")
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// invoke serves one call of the core's row named op (the table's way, as
// the SOAP adapter does) and returns its typed reply.
func invoke[Out any](t *testing.T, svc *operations.Service, op string, in any) (Out, error) {
	t.Helper()
	for _, r := range operations.Operations() {
		if r.Name() == op && r.Input() == reflect.TypeOf(in).Elem() {
			out, err := svc.Invoke(context.Background(), r, in)
			o, _ := out.(Out)
			return o, err
		}
	}
	t.Fatalf("no row %s for %T", op, in)
	panic("unreachable")
}
