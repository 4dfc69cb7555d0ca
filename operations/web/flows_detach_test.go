package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
)

// hangUp stands for a browser that disconnects while the bridge creates its
// payment: the request's context is canceled as the create POST goes out.
type hangUp struct {
	next   http.RoundTripper
	cancel context.CancelFunc
}

func (h hangUp) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.URL.Path == "/api/payments/payment" {
		h.cancel()
	}
	return h.next.RoundTrip(req)
}

// A customer who leaves pay-base-v2 mid-call does not cut the gateway calls
// short: the payment is created and its session saved.
func TestPayBaseDetachedFromBrowser(t *testing.T) {
	sb := sandbox.New(sandbox.Options{Merchants: []sandbox.Merchant{{Account: restbackend.Account{GoID: testGoID, ClientID: "sandbox-client", ClientSecret: "sandbox-secret"}}}})
	srv := httptest.NewServer(sb)
	t.Cleanup(func() { srv.Close(); sb.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memStore(t)
	cfg := unitConfig(t)
	cfg.Store = st
	cfg.Gateway = restbackend.New(restbackend.Config{BaseURL: srv.URL,
		HTTPClient: &http.Client{Transport: hangUp{next: &http.Transport{}, cancel: cancel}}})
	svc, err := operations.New(cfg)
	require.NoError(t, err)
	e := echo.New()
	New(svc, nil).Register(e)

	form := prefixed("paymentCommand.", flCommand("PB-GONE", "https://shop.example/ok", "https://shop.example/ko"))
	req := httptest.NewRequest(http.MethodPost, PathPayBase, strings.NewReader(form.Encode())).WithContext(ctx)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)

	require.Error(t, ctx.Err(), "the browser hung up")
	assert.Equal(t, http.StatusFound, w.Code, w.Body.String())
	sess, err := st.Session(context.Background(), 3000000001)
	require.NoError(t, err, "session saved after the create")
	assert.Equal(t, "PB-GONE", sess.OrderNumber)
}
