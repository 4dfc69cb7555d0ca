package soapapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/operations"
)

// resultLog is an Observer that keeps the results it is told.
type resultLog struct {
	mu      sync.Mutex
	results []string
}

func (r *resultLog) Observe(_ context.Context, o operations.CallOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, o.Result.String())
}

// The stages in order, with the real Guard and core: the access rules
// before the core, the rate only once the core verified the signature. The
// merchant's bucket is empty: a forged call is answered as forged (a
// reply, not the rate's fault), a correctly signed one gets the rate's
// fault, and a call from a refused network is refused before either.
func TestGuardStagesAroundVerification(t *testing.T) {
	g, err := access.NewGuard(map[int64]access.Rules{testGoID: {AllowedNetworks: "192.0.2.0/24", RateLimit: 0.001, RateBurst: 1}}, access.Options{})
	require.NoError(t, err)
	require.NoError(t, g.Spend(context.Background(), testGoID)) // the shop's one call at once: the bucket is empty now
	obs := &resultLog{}
	cfg := unitConfig(t)
	cfg.Observer = obs
	svc, err := operations.New(cfg)
	require.NoError(t, err)
	api, err := New(Config{Service: svc, Guard: g})
	require.NoError(t, err)
	e := echo.New()
	e.POST("/axis/EPaymentServiceV2", api.Handler())
	call := func(from, sig string) string {
		ids, goid := "3000000001", strconv.FormatInt(testGoID, 10)
		env := `<?xml version="1.0" encoding="UTF-8"?><SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" ` +
			`xmlns:ns1="http://axis.web.gopay.cz" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:ns2="http://gate.gopay.cz/ws" ` +
			`xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/"><SOAP-ENV:Body><ns1:paymentStatus>` +
			`<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo"><encryptedSignature xsi:type="SOAP-ENC:string">` + sig +
			`</encryptedSignature><paymentSessionId xsi:type="SOAP-ENC:long">` + ids + `</paymentSessionId>` +
			`<targetGoId xsi:type="SOAP-ENC:long">` + goid + `</targetGoId></paymentSessionInfo>` +
			`</ns1:paymentStatus></SOAP-ENV:Body></SOAP-ENV:Envelope>`
		req := httptest.NewRequest(http.MethodPost, "/axis/EPaymentServiceV2", strings.NewReader(env))
		req.Header.Set("Content-Type", "text/xml; charset=utf-8")
		req.RemoteAddr = from + ":4000"
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		return w.Body.String()
	}
	signed, err := operations.Sign(testSecureKey, operations.PaymentSessionFields(strconv.FormatInt(testGoID, 10), "3000000001")...)
	require.NoError(t, err)

	for range 5 {
		body := call("192.0.2.7", "00")
		assert.NotContains(t, body, "Fault", "a forged call is answered as forged, never by the rate")
		assert.Contains(t, body, "invalid encryptedSignature")
	}
	assert.Contains(t, call("198.51.100.1", signed), "access denied: calls for goid 8123456789 are not accepted from address 198.51.100.1")
	assert.Contains(t, call("192.0.2.7", signed), "rate limit exceeded: goid 8123456789 may make at most 0.001 calls per second")
	assert.Equal(t, []string{"bad_signature", "bad_signature", "bad_signature", "bad_signature", "bad_signature", "denied", "rate_limited"}, obs.results)
}
