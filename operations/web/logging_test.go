package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestFlowLogLinesCarryRequestID: the browser flows' log lines, and those of
// the operation a flow runs, carry the request id like a SOAP call's.
func TestFlowLogLinesCarryRequestID(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	cfg := unitConfig(t) // its gateway is unreachable: the flows fail and log
	cfg.Logger = zap.New(core)
	s, err := operations.New(cfg)
	require.NoError(t, err)
	e := echo.New()
	e.Use(middleware.RequestID())
	New(s, cfg.Logger).Register(e)

	form := prefixed("paymentCommand.", flCommand("PB-LOG", "https://shop.example/ok", "https://shop.example/ko"))
	req := httptest.NewRequest(http.MethodPost, PathPayBase, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(echo.HeaderXRequestID, "rid-base")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)

	q := url.Values{"statementRequest.dateFrom": {"2026-01-01"}, "statementRequest.dateTo": {"2026-01-31"},
		"statementRequest.targetGoId": {"8123456789"}, "statementRequest.currency": {"CZK"}}
	sig, err := operations.Sign(testSecureKey, operations.StatementRequestFields("2026-01-01", "2026-01-31", "8123456789", "CZK")...)
	require.NoError(t, err)
	q.Set("statementRequest.encryptedSignature", sig)
	req = httptest.NewRequest(http.MethodGet, PathStatement+"?"+q.Encode(), nil)
	req.Header.Set(echo.HeaderXRequestID, "rid-statement")
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusBadGateway, rec.Code, rec.Body.String())

	want := map[string]string{
		"pay-base-v2: createPayment failed": "rid-base",
		"flow failed":                       "rid-base",
		"statement failed":                  "rid-statement",
	}
	for msg, rid := range want {
		lines := logs.FilterMessage(msg).All()
		require.Len(t, lines, 1, msg)
		assert.Equal(t, rid, lines[0].ContextMap()["request_id"], msg)
	}
	for _, l := range logs.All() {
		assert.Contains(t, []any{"rid-base", "rid-statement"}, l.ContextMap()["request_id"], "%q has no request id", l.Message)
	}
}
