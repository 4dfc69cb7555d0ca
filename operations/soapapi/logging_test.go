package soapapi

import (
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
)

// TestLogLinesCarryRequestID: what an operation logs can be matched with the
// access log line of its request.
func TestLogLinesCarryRequestID(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	cfg := unitConfig(t)
	cfg.Logger = zap.New(core)
	s := unitAPI(t, cfg)

	// A paymentStatus whose signature does not verify: refused and logged.
	body, err := os.ReadFile("../../testdata/soapenc/captures/php-soapclient/paymentStatus.xml")
	require.NoError(t, err)
	e := echo.New()
	e.Use(middleware.RequestID())
	e.POST("/axis/EPaymentServiceV2", s.Handler())
	req := httptest.NewRequest(http.MethodPost, "/axis/EPaymentServiceV2",
		strings.NewReader(strings.Replace(string(body), "b37f42dd", "00000000", 1)))
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set(echo.HeaderXRequestID, "rid-42")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), "CALL_FAILED")

	refused := logs.FilterMessage("request refused").All()
	require.Len(t, refused, 1)
	assert.Equal(t, "rid-42", refused[0].ContextMap()["request_id"])
}
