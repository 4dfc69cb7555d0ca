package sandbox

import (
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/sandbox")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "sandbox", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update once to create %s", path)
	assert.Equal(t, string(want), string(got), "golden %s (go test -update rewrites it)", path)
}

// statementScenario moves money on 2026-03-02 … 03-06 (Prague).
func statementScenario(e *env) {
	e.t.Helper()
	p1 := e.create(nil)
	e.mustHelper(p1.ID, "pay", nil)
	p2 := e.create(func(r *restbackend.PaymentRequest) { r.Amount = 25050; r.OrderNumber = "OBJ-2, \"gift\"" })
	e.mustHelper(p2.ID, "pay", Action{Swift: "KOMBCZPP"})
	eur := e.create(func(r *restbackend.PaymentRequest) { r.Currency = "EUR"; r.OrderNumber = "EUR-1" })
	e.mustHelper(eur.ID, "pay", nil)
	unpaid := e.create(func(r *restbackend.PaymentRequest) { r.OrderNumber = "UNPAID" })
	_ = unpaid
	e.clock.Advance(time.Hour)
	e.mustPost(p2.ID, "refund", amount(5050))
	p4 := e.create(func(r *restbackend.PaymentRequest) {
		r.Preauthorization = true
		r.Amount = 2000
		r.OrderNumber = "PRE-4"
	})
	e.mustHelper(p4.ID, "pay", nil)
	e.mustPost(p4.ID, "capture", restbackend.CaptureRequest{Amount: 1500})
	p5 := e.create(func(r *restbackend.PaymentRequest) {
		r.Amount = 300
		r.OrderNumber = "SUB-5"
		r.Recurrence = &restbackend.Recurrence{RecurrenceCycle: "DAY", RecurrencePeriod: 1, RecurrenceDateTo: "2026-03-04"}
	})
	e.mustHelper(p5.ID, "pay", nil)
	e.clock.Advance(4 * 24 * time.Hour) // children on 03-03 and 03-04 at 11:00
	p6 := e.create(func(r *restbackend.PaymentRequest) { r.OrderNumber = "LATE-6" })
	e.mustHelper(p6.ID, "pay", nil) // 03-06: outside the statement
}

func (e *env) statement(req restbackend.StatementRequest) (int, []byte) {
	return e.call(http.MethodPost, "/api/accounts/account-statement", req)
}

func TestStatementCSV(t *testing.T) {
	e := newEnv(t)
	statementScenario(e)
	for _, format := range []string{"CSV_A", "CSV_B"} {
		t.Run(format, func(t *testing.T) {
			e := e.with(t)
			st, b := e.statement(restbackend.StatementRequest{DateFrom: "2026-03-02", DateTo: "2026-03-04", GoID: testGoID, Currency: "CZK", Format: format})
			require.Equal(t, http.StatusOK, st, string(b))
			golden(t, "statement_"+format+".csv", b)
		})
	}
	t.Run("dates inclusive", func(t *testing.T) {
		e := e.with(t)
		st, b := e.statement(restbackend.StatementRequest{DateFrom: "2026-03-04", DateTo: "2026-03-04", GoID: testGoID, Currency: "CZK", Format: "CSV_A"})
		require.Equal(t, http.StatusOK, st)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		require.Len(t, lines, 2, string(b))
		assert.Contains(t, lines[1], "2026-03-04 11:00:00")
	})
	t.Run("reply headers", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/accounts/account-statement",
			strings.NewReader(`{"date_from":"2026-03-01","date_to":"2026-03-31","goid":8123456789,"currency":"EUR","format":"CSV_A"}`))
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
		assert.Contains(t, resp.Header.Get("Content-Disposition"), "statement_8123456789_EUR_2026-03-01_2026-03-31.csv")
	})
}

func TestStatementRefusals(t *testing.T) {
	e := newEnv(t)
	ok := restbackend.StatementRequest{DateFrom: "2026-03-01", DateTo: "2026-03-31", GoID: testGoID, Currency: "CZK", Format: "CSV_A"}
	cases := []struct {
		name  string
		mod   func(*restbackend.StatementRequest)
		code  int
		field string
	}{
		{"lower-case format", func(r *restbackend.StatementRequest) { r.Format = "csv_a" }, codeWrongFormat, "format"},
		{"unknown format", func(r *restbackend.StatementRequest) { r.Format = "JSON" }, codeWrongFormat, "format"},
		{"format missing", func(r *restbackend.StatementRequest) { r.Format = "" }, codeMandatory, "format"},
		{"date_from missing", func(r *restbackend.StatementRequest) { r.DateFrom = "" }, codeMandatory, "date_from"},
		{"date_to format", func(r *restbackend.StatementRequest) { r.DateTo = "31.3.2026" }, codeWrongFormat, "date_to"},
		{"date_to before date_from", func(r *restbackend.StatementRequest) { r.DateTo = "2026-02-28" }, codeWrongFormat, "date_to"},
		{"currency", func(r *restbackend.StatementRequest) { r.Currency = "XYZ" }, codeWrongFormat, "currency"},
		{"goid missing", func(r *restbackend.StatementRequest) { r.GoID = 0 }, codeMandatory, "goid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			r := ok
			tc.mod(&r)
			st, b := e.statement(r)
			e.refusal(st, b, http.StatusConflict, tc.code, tc.field)
			if tc.field == "format" && tc.code == codeWrongFormat {
				assert.Contains(t, string(b), "ABO_A, ABO_B, CSV_A, CSV_B, CSV_C, CSV_D, CSV_E, PDF_A, XLS_A, XLS_B, XLS_C")
			}
		})
	}
	t.Run("other merchant's goid 403", func(t *testing.T) {
		e := e.with(t)
		r := ok
		r.GoID = otherGoID
		st, b := e.statement(r)
		e.refusal(st, b, http.StatusForbidden, codeUnauthorized, "")
	})
}

// Without Options.StatementFormats an account offers what earlier sandboxes
// made, CSV_A and CSV_B; the others are refused by name.
func TestStatementFormatsDefault(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.StatementFormats = nil })
	r := restbackend.StatementRequest{DateFrom: "2026-03-01", DateTo: "2026-03-31", GoID: testGoID, Currency: "CZK", Format: "CSV_B"}
	st, _ := e.statement(r)
	assert.Equal(t, http.StatusOK, st)
	r.Format = "XLS_A"
	st, b := e.statement(r)
	e.refusal(st, b, http.StatusConflict, codeWrongFormat, "format")
	assert.Contains(t, string(b), "format XLS_A is not enabled for this account (supported: CSV_A, CSV_B)")
}

func TestPaymentInstruments(t *testing.T) {
	e := newEnv(t)
	get := func(cur string) *restbackend.InstrumentList {
		st, b := e.call(http.MethodGet, "/api/eshops/eshop/"+itoa(testGoID)+"/payment-instruments/"+cur, nil)
		require.Equal(t, http.StatusOK, st, string(b))
		var l restbackend.InstrumentList
		require.NoError(t, jsonUnmarshal(b, &l))
		return &l
	}
	swiftsOf := func(l *restbackend.InstrumentList) (online []string, img string) {
		for _, in := range l.EnabledPaymentInstruments {
			if in.PaymentInstrument == "BANK_ACCOUNT" {
				for _, s := range in.EnabledSwifts {
					if s.IsOnline {
						online = append(online, s.Swift)
					}
					img = s.Image.Normal
				}
			}
		}
		return online, img
	}
	czk := get("CZK")
	assert.Equal(t, map[string]string{"cs": "Platební karta", "en": "Payment card"}, czk.Groups["card-payment"].Label)
	for _, g := range []string{"card-payment", "bank-transfer", "wallet", "others"} {
		assert.Contains(t, czk.Groups, g)
	}
	card := czk.EnabledPaymentInstruments[0]
	assert.Equal(t, "PAYMENT_CARD", card.PaymentInstrument)
	assert.Equal(t, "card-payment", card.Group)
	assert.Nil(t, card.EnabledSwifts)
	assert.Equal(t, e.srv.URL+"/gp-gw/images/PAYMENT_CARD.svg", card.Image.Normal)
	online, img := swiftsOf(czk)
	assert.Contains(t, online, "KOMBCZPP")
	assert.NotContains(t, online, "TATRSKBX")
	assert.Contains(t, img, "/gp-gw/images/")
	eurOnline, _ := swiftsOf(get("EUR"))
	assert.Contains(t, eurOnline, "TATRSKBX")
	assert.NotContains(t, eurOnline, "KOMBCZPP")
	usdOnline, _ := swiftsOf(get("USD"))
	assert.Empty(t, usdOnline)

	// The logos are served.
	resp, err := http.Get(card.Image.Large)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))

	st, b := e.call(http.MethodGet, "/api/eshops/eshop/"+itoa(testGoID)+"/payment-instruments/XYZ", nil)
	e.refusal(st, b, http.StatusConflict, codeWrongFormat, "currency")
}
