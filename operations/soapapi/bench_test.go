package soapapi

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/soapenc"
	"github.com/legacybridge/soapbridge/store"
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
	serveLoop(b, h.api.Handler(), readGolden(b, "paymentStatus"))
}

// BenchmarkSOAPHandlerPaymentStatusGuarded: the same with the bridge's
// access guard (open rules, a rate that never runs out), as the binary
// serves: the access rules checked before the core, the rate spent once it
// verified the call.
func BenchmarkSOAPHandlerPaymentStatusGuarded(b *testing.B) {
	h := newHarness(b)
	paid(h)
	h.rec.quiet = true
	g, err := access.NewGuard(map[int64]access.Rules{testGoID: {RateLimit: 1e9, RateBurst: 1 << 30}}, access.Options{})
	if err != nil {
		b.Fatal(err)
	}
	api, err := New(Config{Service: h.svc, Guard: g})
	if err != nil {
		b.Fatal(err)
	}
	serveLoop(b, api.Handler(), readGolden(b, "paymentStatus"))
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

// BenchmarkSOAPHandlerTouchUsage: the whole touch handler with the usage
// record off and on. On: the client recognised from the wire and carried
// in the call's context (this adapter), plus one Recorder.Record per call,
// as the core's pipeline makes it. The ratio on/off is the record's cost
// on the hot path at its cheapest call:
//
//	go test ./operations/soapapi -run '^$' -bench TouchUsage -count 6
func BenchmarkSOAPHandlerTouchUsage(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "soapenc", "captures", "php-soapclient", "touch.xml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[on]
		b.Run(name, func(b *testing.B) {
			h := newHarness(b)
			cfg := Config{Service: h.svc, Logger: zap.NewNop()}
			var rec *usage.Recorder
			if on {
				st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "usage.db"))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { st.Close() })
				rec, err = usage.New(usage.Config{Store: st.(usage.Store)})
				if err != nil {
					b.Fatal(err)
				}
				cfg.Usage = rec
			}
			api, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			e := echo.New()
			e.POST("/axis/EPaymentServiceV2", api.Handler(), func(next echo.HandlerFunc) echo.HandlerFunc {
				if rec == nil {
					return next
				}
				return func(c echo.Context) error { // the pipeline's call
					err := next(c)
					rec.Record(c.Request().Context(), usage.Event{Operation: "touch", Result: usage.ResultOK})
					return err
				}
			})
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/axis/EPaymentServiceV2", bytes.NewReader(body))
				req.Header.Set("Content-Type", "text/xml; charset=utf-8")
				req.Header.Set("User-Agent", "PHP-SOAP/8.2.36")
				w := httptest.NewRecorder()
				e.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatal(w.Code)
				}
			}
			// CPU time, unlike wall time, hardly moves with what else runs on
			// a shared machine.
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time (user and system) this process has used, in
// nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkUsagePerCall: all the usage record adds to one call, alone:
// the client recognised from a captured PHP request (User-Agent, dialect),
// the context carrying it, and the Record the core's pipeline makes.
func BenchmarkUsagePerCall(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(wireDir, "php-soapclient-paymentStatus.http"))
	if err != nil {
		b.Fatal(err)
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		b.Fatal(err)
	}
	call, err := soapenc.ReadRequest(req, soapenc.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "usage.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	rec, err := usage.New(usage.Config{Store: st.(usage.Store)})
	if err != nil {
		b.Fatal(err)
	}
	ev := usage.Event{GoID: testGoID, Operation: "paymentStatus", Result: usage.ResultOK}
	b.ReportAllocs()
	for b.Loop() {
		ctx := usage.WithClient(context.Background(), ClientOf(req, call.Wire))
		rec.Record(ctx, ev)
	}
}
