package soapapi

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/legacybridge/soapbridge/operations"
)

// BenchmarkInvokePaymentStatus: a decoded paymentStatus call end to end in
// process: signature check, REST status over HTTP to the sandbox, session
// read from SQLite, mapping and reply signing.
func BenchmarkInvokePaymentStatus(b *testing.B) {
	h := newHarness(b)
	paid(h)
	h.rec.quiet = true
	call := decodeFile(b, filepath.Join(goldenDir, "paymentStatus", "request.xml"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := h.api.Invoke(ctx, call)
		if err != nil || resp.Return.Field("result").Text != operations.CallCompleted {
			b.Fatal(err)
		}
	}
}

// BenchmarkSOAPHandlerPaymentStatus adds decoding the captured PHP request
// and encoding the reply (the whole HTTP handler, without a socket).
func BenchmarkSOAPHandlerPaymentStatus(b *testing.B) {
	h := newHarness(b)
	paid(h)
	h.rec.quiet = true
	body, err := os.ReadFile(filepath.Join(goldenDir, "paymentStatus", "request.xml"))
	if err != nil {
		b.Fatal(err)
	}
	e := echo.New()
	e.POST("/axis/EPaymentServiceV2", h.api.Handler())
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/axis/EPaymentServiceV2", bytes.NewReader(body))
		req.Header.Set("Content-Type", "text/xml; charset=utf-8")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
