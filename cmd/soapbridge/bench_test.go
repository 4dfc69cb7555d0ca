package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/legacybridge/soapbridge/operations"
)

// Concurrent SOAP calls through the real bridge (run(): middleware, access
// log, SOAP decode, operation, REST call to the embedded sandbox over
// loopback, SQLite, signed reply) from 64 client goroutines, against a
// baseline of a bare echo handler behind the same client in the same run:
//
//	go test ./cmd/soapbridge -run '^$' -bench Parallel -benchtime 3s
//
// The ratio to the baseline is the bridge's own cost per call.

const benchParallelism = 32 // × GOMAXPROCS client goroutines

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
}

func benchPost(b *testing.B, url string, body []byte, want string) {
	cl := benchClient()
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := cl.Post(url, "text/xml; charset=utf-8", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Contains(got, []byte(want)) {
				b.Errorf("status %d, reply %.300s", resp.StatusCode, got)
				return
			}
		}
	})
}

// BenchmarkBaselineEchoParallel: a bare echo handler returning a fixed touch
// reply, no middleware.
func BenchmarkBaselineEchoParallel(b *testing.B) {
	reply := []byte(`<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><ns1:touchResponse xmlns:ns1="urn:x"><touchReturn>OK</touchReturn></ns1:touchResponse></soapenv:Body></soapenv:Envelope>`)
	e := echo.New()
	e.POST("/axis/EPaymentServiceV2", func(c echo.Context) error {
		io.Copy(io.Discard, c.Request().Body) //nolint:errcheck // the reply does not depend on it
		return c.Blob(http.StatusOK, "text/xml; charset=utf-8", reply)
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	benchPost(b, srv.URL+"/axis/EPaymentServiceV2", []byte(touchEnvelope), ">OK<")
}

// startBenchBridge: info level and the default log sink, as in production
// (one access log line per request, here into memory).
func startBenchBridge(b *testing.B) string {
	return startBenchBridgeLog(b, defaultLogBuffer)
}

func startBenchBridgeLog(b *testing.B, logBuffer int) string {
	return startBenchBridgeEnv(b, map[string]string{"SOAPBRIDGE_LOG_BUFFER": strconv.Itoa(logBuffer)})
}

// startBenchBridgeEnv: info level and the log buffer, with env on top.
func startBenchBridgeEnv(b *testing.B, env map[string]string) string {
	full := map[string]string{"SOAPBRIDGE_LOG_LEVEL": "info", "SOAPBRIDGE_LOG_BUFFER": strconv.Itoa(defaultLogBuffer)}
	for k, v := range env {
		full[k] = v
	}
	return startInProcess(b, full).URL + "/axis/EPaymentServiceV2"
}

// usageOff switches the usage record off: the benchmarks without a suffix
// run with it on (the default), these without, for the ratio of its cost
// on the hot path (client recognition, the context it travels in, the
// record itself):
//
//	go test ./cmd/soapbridge -run '^$' -bench 'Parallel(UsageOff)?$' -benchtime 3s
var usageOff = map[string]string{"SOAPBRIDGE_USAGE_FLUSH_INTERVAL": "0"}

func BenchmarkTouchParallelUsageOff(b *testing.B) {
	benchPost(b, startBenchBridgeEnv(b, usageOff), []byte(touchEnvelope), ">OK<")
}

func BenchmarkPaymentStatusParallelUsageOff(b *testing.B) {
	benchPaymentStatus(b, startBenchBridgeEnv(b, usageOff))
}

func BenchmarkTouchParallel(b *testing.B) {
	benchPost(b, startBenchBridge(b), []byte(touchEnvelope), ">OK<")
}

// BenchmarkTouchSerial and BenchmarkPaymentStatusSerial: the same calls
// from one client goroutine, one at a time. With -cpu 1 nothing else runs
// while the bridge serves a call (touch), or only the embedded sandbox
// (paymentStatus), so an instruction count of the server's handler alone
// is clean (callgrind's --toggle-collect on
// net/http.serverHandler.ServeHTTP; docs/performance.md).
func BenchmarkTouchSerial(b *testing.B) {
	benchSerial(b, startBenchBridge(b), []byte(touchEnvelope), ">OK<")
}

func BenchmarkPaymentStatusSerial(b *testing.B) {
	benchPaymentStatusWith(b, startBenchBridge(b), benchSerial)
}

func benchSerial(b *testing.B, url string, body []byte, want string) {
	cl := benchClient()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := cl.Post(url, "text/xml; charset=utf-8", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(got, []byte(want)) {
			b.Fatalf("status %d, reply %.300s", resp.StatusCode, got)
		}
	}
}

// BenchmarkTouchParallelBufferedLog: access-log lines gathered in a 256 KiB
// buffer (the default before every line had to survive a kill), for the
// ratio; BenchmarkTouchLogToPipe compares the two into a real pipe.
func BenchmarkTouchParallelBufferedLog(b *testing.B) {
	benchPost(b, startBenchBridgeLog(b, 256<<10), []byte(touchEnvelope), ">OK<")
}

var sigElement = regexp.MustCompile(`(<encryptedSignature[^>]*>)[0-9a-f]+(</encryptedSignature>)`)

// resign replaces the encryptedSignature of a request with one over fields.
func resign(b *testing.B, doc []byte, fields []string) []byte {
	sig, err := operations.Sign(demoKey, fields...)
	if err != nil {
		b.Fatal(err)
	}
	return sigElement.ReplaceAll(doc, []byte("${1}"+sig+"${2}"))
}

const demoKey = "DemoSecureKey-0123456789"

// BenchmarkPaymentStatusParallel: paymentStatus of one payment (signature
// check, REST token + GET to the sandbox, session read, signed reply).
func BenchmarkPaymentStatusParallel(b *testing.B) {
	benchPaymentStatus(b, startBenchBridge(b))
}

// benchPaymentStatus creates a payment through the bridge at url, then
// reads its status from every client goroutine.
func benchPaymentStatus(b *testing.B, url string) {
	benchPaymentStatusWith(b, url, benchPost)
}

// benchPaymentStatusWith is benchPaymentStatus with post sending the calls.
func benchPaymentStatusWith(b *testing.B, url string, post func(b *testing.B, url string, body []byte, want string)) {
	create, err := os.ReadFile("../../testdata/operations/createPayment/request.xml")
	if err != nil {
		b.Fatal(err)
	}
	create = resign(b, create, operations.PaymentCommandFields{TargetGoID: "8123456789",
		ProductName: "Objednávka č. 42 – žluťoučký kůň", TotalPrice: "12900", Currency: "CZK", OrderNumber: "42",
		FailedURL: "https://eshop.example/failed", SuccessURL: "https://eshop.example/success",
		PreAuthorization: "0", RecurrentPayment: "0", PaymentChannels: "cz_kb,eu_gp_u"}.Fields())
	resp, err := http.Post(url, "text/xml; charset=utf-8", bytes.NewReader(create))
	if err != nil {
		b.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`<paymentSessionId[^>]*>(\d+)<`).FindSubmatch(got)
	if m == nil || !bytes.Contains(got, []byte("CALL_COMPLETED")) {
		b.Fatalf("createPayment: %.500s", got)
	}
	id := string(m[1])
	status, err := os.ReadFile("../../testdata/operations/paymentStatus/request.xml")
	if err != nil {
		b.Fatal(err)
	}
	status = regexp.MustCompile(`(<paymentSessionId[^>]*>)\d+(<)`).ReplaceAll(status, []byte("${1}"+id+"${2}"))
	status = resign(b, status, operations.PaymentSessionFields("8123456789", id))
	if !strings.Contains(string(status), id) {
		b.Fatal("paymentStatus request without the payment id")
	}
	post(b, url, status, "CALL_COMPLETED")
}
