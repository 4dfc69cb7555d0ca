package operations

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// Test merchant: the demo merchant of the embedded sandbox.
const (
	testGoID      = 8123456789
	testSecureKey = "DemoSecureKey-0123456789"
)

func testMerchant() Merchant {
	return Merchant{Account: restbackend.Account{GoID: testGoID, ClientID: "sandbox-client", ClientSecret: "sandbox-secret"},
		SecureKey: testSecureKey, Currency: "CZK", Lang: "CS"}
}

// memStore is an in-memory session store for unit tests.
type memStore struct {
	store.Store
	mu       sync.Mutex
	sessions map[int64]store.Session
	failSave error
}

func (m *memStore) SaveSession(ctx context.Context, s store.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failSave != nil {
		return m.failSave
	}
	if m.sessions == nil {
		m.sessions = map[int64]store.Session{}
	}
	m.sessions[s.PaymentID] = s
	return nil
}

func (m *memStore) Session(ctx context.Context, id int64) (store.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return store.Session{}, store.ErrNotFound
	}
	return s, nil
}

func unitConfig() Config {
	return Config{
		Merchants: []Merchant{testMerchant()},
		Gateway:   restbackend.New(restbackend.Config{BaseURL: "http://127.0.0.1:1"}),
		Store:     &memStore{},
		PublicURL: "https://bridge.example",
	}
}

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
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := unitConfig()
			cfg.Merchants[0].ClientSecret = secret
			tc.edit(&cfg)
			_, err := New(cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), secret)
			assert.NotContains(t, err.Error(), testSecureKey)
		})
	}
	s, err := New(unitConfig())
	require.NoError(t, err)
	assert.Len(t, s.OperationNames(), 12)
}

func TestMerchantStringHidesSecrets(t *testing.T) {
	m := testMerchant()
	for _, s := range []string{m.String(), m.GoString()} {
		assert.NotContains(t, s, m.ClientSecret)
		assert.NotContains(t, s, m.SecureKey)
		assert.Contains(t, s, "8123456789")
	}
}

func postSOAP(t *testing.T, h echo.HandlerFunc, body string) *httptest.ResponseRecorder {
	t.Helper()
	e := echo.New()
	e.POST("/axis/EPaymentServiceV2", h)
	req := httptest.NewRequest(http.MethodPost, "/axis/EPaymentServiceV2", strings.NewReader(body))
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func TestTouchOverHTTP(t *testing.T) {
	s, err := New(unitConfig())
	require.NoError(t, err)
	for _, f := range []string{"touch", "touch-axis"} {
		body, err := os.ReadFile("../testdata/operations/" + f + "/request.xml")
		require.NoError(t, err)
		rec := postSOAP(t, s.SOAPHandler(), string(body))
		assert.Equal(t, http.StatusOK, rec.Code, f)
		assert.Contains(t, rec.Body.String(), `<ns1:touchResponse`)
		assert.Contains(t, rec.Body.String(), `<touchReturn xsi:type="soapenc:string">OK</touchReturn>`)
	}
}

func TestUnknownOperationIsClientFault(t *testing.T) {
	s, err := New(unitConfig())
	require.NoError(t, err)
	body := `<?xml version="1.0"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><ns1:fly xmlns:ns1="http://axis.web.gopay.cz"/></soapenv:Body></soapenv:Envelope>`
	rec := postSOAP(t, s.SOAPHandler(), body)
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, rec.Body.String(), "Client")
	assert.Contains(t, rec.Body.String(), `unknown operation 'fly'`)

	// A huge name is not echoed back whole.
	long := strings.Repeat("x", 50000)
	rec = postSOAP(t, s.SOAPHandler(), strings.ReplaceAll(body, "fly", long))
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, rec.Body.String(), "unknown operation")
	assert.Less(t, rec.Body.Len(), 2000)
}
