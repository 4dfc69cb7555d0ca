package soapapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/legacybridge/soapbridge/operations"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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

// BenchmarkSOAPHandlerTouch: the whole handler for touch with a production
// JSON logger (into io.Discard) at info and at warn: what a call costs
// beyond its operation, and what the request logger costs when its level
// drops every line.
func BenchmarkSOAPHandlerTouch(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "soapenc", "captures", "php-soapclient", "touch.xml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, lvl := range []zapcore.Level{zapcore.InfoLevel, zapcore.WarnLevel} {
		b.Run(lvl.String(), func(b *testing.B) {
			h := newHarness(b)
			log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), lvl))
			api, err := New(Config{Service: h.svc, Logger: log})
			if err != nil {
				b.Fatal(err)
			}
			e := echo.New()
			e.Use(middleware.RequestID())
			e.POST("/axis/EPaymentServiceV2", api.Handler())
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
		})
	}
}

// BenchmarkEncodePaymentStatus: the reply of a paymentStatus rendered from
// the typed core's result (every field set), without the XML writing.
func BenchmarkEncodePaymentStatus(b *testing.B) {
	s, n := "x", int64(1)
	st := &operations.PaymentStatus{Currency: &s, OrderNumber: &s, PaymentSessionID: &n, ProductName: &s,
		Result: "CALL_COMPLETED", SessionState: &s, TargetGoID: &n, TotalPrice: &n, EncryptedSignature: &s}
	c := codec{ns: "urn:x"}
	v := reflect.ValueOf(st)
	b.ReportAllocs()
	for b.Loop() {
		if c.encode("paymentStatusReturn", "tns2:EPaymentStatus", v) == nil {
			b.Fatal("no value")
		}
	}
}
