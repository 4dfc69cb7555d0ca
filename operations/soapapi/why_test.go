package soapapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/legacybridge/soapbridge/operations"
)

// TestWhyRefusedReplyUnchanged: through the SOAP adapter, a PHP
// SoapClient's paymentStatus with each of several signature mistakes gets
// the very bytes a random signature gets (the generic refusal), while the
// refusal's log line, keyed by the request id, names the mistake; no key,
// signature or hash text is logged.
func TestWhyRefusedReplyUnchanged(t *testing.T) {
	const vectorKey = "Zf2mlwbW6mQLkGmDWzTXwXHU" // the capture's signature key (signature-vectors.json)
	core, logs := observer.New(zapcore.InfoLevel)
	cfg := unitConfig(t)
	cfg.Logger = zap.New(core)
	other := testMerchant()
	other.GoID, other.SecureKey, other.ClientID = 8000000002, vectorKey, "other-client"
	cfg.Merchants = append(cfg.Merchants, other)
	s := unitAPI(t, cfg)
	e := echo.New()
	e.Use(middleware.RequestID())
	e.POST("/axis/EPaymentServiceV2", s.Handler())
	capture, err := os.ReadFile("../../testdata/soapenc/captures/php-soapclient/paymentStatus.xml")
	require.NoError(t, err)
	const sent = "b37f42dd48ad740a6dec96b299619f489aec519e12e03ea3febf5020ee392e7c8bf5fdf75c5c2e92"
	send := func(sig, rid string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/axis/EPaymentServiceV2", strings.NewReader(strings.Replace(string(capture), sent, sig, 1)))
		req.Header.Set("Content-Type", "text/xml; charset=utf-8")
		req.Header.Set(echo.HeaderXRequestID, rid)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}
	sign := func(key string, fields ...string) string {
		sig, err := operations.Sign(key, fields...)
		require.NoError(t, err)
		return sig
	}
	generic := send(strings.Repeat("00", 40), "rid-generic")
	require.Equal(t, http.StatusOK, generic.Code)
	require.Contains(t, generic.Body.String(), "CALL_FAILED")
	for _, tc := range []struct{ sig, code, field string }{
		{sent, operations.ReasonKeyOtherMerchant, "encryptedSignature"},
		{sign(testSecureKey, "8.123456789E+9", "3000000001"), operations.ReasonFloatString, "targetGoId"},
		{sign(testSecureKey, "8123456789", "3000000002"), operations.ReasonSessionDiffers, "paymentSessionId"},
		{"", operations.ReasonSignatureMissing, "encryptedSignature"},
		{"5f1e8f1a2f0f6f1a0d4b2e3c8a9b7c6d5e4f3a2b", operations.ReasonSignatureNotEncrypted, "encryptedSignature"},
	} {
		rid := "rid-" + tc.code
		rec := send(tc.sig, rid)
		assert.Equal(t, generic.Code, rec.Code, tc.code)
		assert.Equal(t, generic.Header().Get("Content-Type"), rec.Header().Get("Content-Type"), tc.code)
		assert.Equal(t, generic.Body.String(), rec.Body.String(), "%s: the reply is the generic refusal, byte for byte", tc.code)
		assert.Equal(t, rid, rec.Header().Get(echo.HeaderXRequestID))

		var line *observer.LoggedEntry
		for _, l := range logs.FilterMessage("request refused").All() {
			if l.ContextMap()["request_id"] == rid {
				line = &l
			}
		}
		require.NotNil(t, line, tc.code)
		fs := line.ContextMap()
		assert.Equal(t, tc.code, fs["reason_code"], "why: %v", fs["why"])
		assert.Equal(t, tc.field, fs["field"])
		assert.NotEmpty(t, fs["why"])
	}
	for _, l := range logs.All() {
		text := fmt.Sprint(l.Message, l.ContextMap())
		for _, secret := range []string{testSecureKey, vectorKey, sent, "5f1e8f1a2f0f", "541eee034c425d2a776ce0e174976c9a647cc2de"} {
			assert.NotContains(t, text, secret)
		}
	}
}
