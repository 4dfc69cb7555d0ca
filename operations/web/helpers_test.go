package web

import (
	"context"

	"github.com/legacybridge/soapbridge/store/storetest"

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
func unitConfig() operations.Config {
	return operations.Config{
		Merchants: []operations.Merchant{{Account: restbackend.Account{GoID: testGoID, ClientID: "sandbox-client", ClientSecret: "sandbox-secret"},
			SecureKey: testSecureKey, Currency: "CZK", Lang: "CS"}},
		Gateway:   restbackend.New(restbackend.Config{BaseURL: "http://127.0.0.1:1"}),
		Store:     &storetest.Sessions{},
		Ledger:    memLedger(),
		PublicURL: "https://bridge.example",
	}
}

// memLedger is a private in-memory SQLite store standing for the ledger of
// money-moving calls (createPayment of pay-base-v2 runs under it).
func memLedger() store.Ledger {
	st, err := store.Open(context.Background(), ":memory:")
	if err != nil {
		panic(err)
	}
	return st
}
