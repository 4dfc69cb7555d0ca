package soapapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/legacybridge/soapbridge/operations"
)

// Allocation guards (issue 28): testing.AllocsPerRun counts the heap
// allocations of one in-process call through the echo handler (decode,
// operation, REST call to the embedded sandbox over loopback HTTP, SQLite,
// encode), the client's and the sandbox's included. Counts are exact on any
// machine and do not depend on its speed, so these tests cannot flake the
// way timings do; the averages over allocRuns calls absorb the rare
// sync.Pool refill after a GC. The budgets live in allocs_race_off_test.go
// (the race detector changes the counts: under -race the guards skip).
//
// A change that adds allocations to the hot path fails here and must raise
// the budget in the same commit, saying why (docs/performance.md,
// "Allocations"). Print the figures with
//
//	go test ./operations/soapapi -run Allocs -v
const allocRuns = 200

// allocCase is one guarded call: the request bodies to send (next returns
// the body of each run) and what its reply must contain.
type allocCase struct {
	name   string
	budget float64
	next   func() []byte
	want   string
}

func allocsOf(t *testing.T, h *harness, c allocCase) float64 {
	t.Helper()
	e := echo.New()
	e.POST("/axis/EPaymentServiceV2", h.api.Handler())
	h.rec.quiet = true
	var failed []byte
	call := func() {
		req := httptest.NewRequest(http.MethodPost, "/axis/EPaymentServiceV2", bytes.NewReader(c.next()))
		req.Header.Set("Content-Type", "text/xml; charset=utf-8")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(c.want)) {
			failed = w.Body.Bytes()
		}
	}
	for range 5 { // warm: token cached, connections open, pools filled
		call()
	}
	n := testing.AllocsPerRun(allocRuns, call)
	if failed != nil {
		t.Fatalf("%s: reply %.600s", c.name, failed)
	}
	return n
}

var (
	orderNumberElem = regexp.MustCompile(`(<orderNumber[^>]*>)[^<]*(<)`)
	signatureElem   = regexp.MustCompile(`(<encryptedSignature[^>]*>)[0-9a-f]+(</encryptedSignature>)`)
)

func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name, "request.xml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// createRequest is the golden createPayment request for order, signed.
func createRequest(t *testing.T, order string) []byte {
	t.Helper()
	doc := orderNumberElem.ReplaceAll(readGolden(t, "createPayment"), []byte("${1}"+order+"${2}"))
	sig, err := operations.Sign(captureKey, operations.PaymentCommandFields{TargetGoID: "8123456789",
		ProductName: "Objednávka č. 42 – žluťoučký kůň", TotalPrice: "12900", Currency: "CZK", OrderNumber: order,
		FailedURL: "https://eshop.example/failed", SuccessURL: "https://eshop.example/success",
		PreAuthorization: "0", RecurrentPayment: "0", PaymentChannels: "cz_kb,eu_gp_u"}.Fields()...)
	if err != nil {
		t.Fatal(err)
	}
	return signatureElem.ReplaceAll(doc, []byte("${1}"+sig+"${2}"))
}

func same(b []byte) func() []byte { return func() []byte { return b } }

func TestAllocsTouch(t *testing.T) {
	skipAllocsUnderRace(t)
	h := newHarness(t)
	checkAllocs(t, h, allocCase{name: "touch", budget: allocBudgetTouch, next: same(readGolden(t, "touch")), want: ">OK<"})
}

func TestAllocsPaymentStatus(t *testing.T) {
	skipAllocsUnderRace(t)
	h := newHarness(t)
	paid(h)
	checkAllocs(t, h, allocCase{name: "paymentStatus", budget: allocBudgetPaymentStatus,
		next: same(readGolden(t, "paymentStatus")), want: "CALL_COMPLETED"})
}

// TestAllocsCreatePayment: a new payment on every call (a new order
// number, signed), so every call goes to the gateway and the ledger.
func TestAllocsCreatePayment(t *testing.T) {
	skipAllocsUnderRace(t)
	h := newHarness(t)
	var bodies [][]byte
	for i := range allocRuns + 10 {
		bodies = append(bodies, createRequest(t, strconv.Itoa(1000+i)))
	}
	i := 0
	next := func() []byte { i++; return bodies[i-1] }
	checkAllocs(t, h, allocCase{name: "createPayment", budget: allocBudgetCreatePayment, next: next, want: "CALL_COMPLETED"})
}

// TestAllocsCreatePaymentRepeated: the same order again, answered as the
// first time (the ledger's idempotent answer).
func TestAllocsCreatePaymentRepeated(t *testing.T) {
	skipAllocsUnderRace(t)
	h := newHarness(t)
	body := createRequest(t, "42")
	if !bytes.Equal(signatureElem.Find(body), signatureElem.Find(readGolden(t, "createPayment"))) {
		t.Fatal("createRequest signs the golden order differently from the capture")
	}
	checkAllocs(t, h, allocCase{name: "createPayment repeated", budget: allocBudgetCreatePaymentRepeated,
		next: same(body), want: "CALL_COMPLETED"})
}

func checkAllocs(t *testing.T, h *harness, c allocCase) {
	t.Helper()
	got := allocsOf(t, h, c)
	t.Logf("%s: %.1f allocations per call (budget %.0f)", c.name, got, c.budget)
	if got > c.budget {
		t.Errorf("%s: %.1f allocations per call, budget %.0f: find the new ones (go test -bench -memprofile) or raise the budget in the same commit, saying why", c.name, got, c.budget)
	}
}

// The benchmarks of the guarded calls, for -memprofile (go test
// ./operations/soapapi -run '^$' -bench 'Allocs|SOAPHandlerPaymentStatus$'
// -memprofile mem.out); the paymentStatus one is
// BenchmarkSOAPHandlerPaymentStatus (bench_test.go).

// BenchmarkAllocsCreatePaymentRepeated: the guarded repeated createPayment.
func BenchmarkAllocsCreatePaymentRepeated(b *testing.B) {
	h := newHarness(b)
	h.rec.quiet = true
	serveLoop(b, h.api.Handler(), readGolden(b, "createPayment"))
}

// BenchmarkAllocsTouch: the guarded touch.
func BenchmarkAllocsTouch(b *testing.B) {
	h := newHarness(b)
	serveLoop(b, h.api.Handler(), readGolden(b, "touch"))
}

// serveLoop posts body to handler through echo b.N times, as the guards'
// calls do; a reply other than 200 fails the benchmark.
func serveLoop(b *testing.B, handler echo.HandlerFunc, body []byte) {
	b.Helper()
	e := echo.New()
	e.POST("/axis/EPaymentServiceV2", handler)
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
