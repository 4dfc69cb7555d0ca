package sandbox

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/legacybridge/soapbridge/restbackend"
)

// statementFormats are the formats the real service names; the sandbox
// builds the CSV ones below and refuses the others clearly.
var statementFormats = map[string]bool{"XLS_A": true, "XLS_B": true, "XLS_C": true, "CSV_A": true, "CSV_B": true, "CSV_C": true,
	"CSV_D": true, "CSV_E": true, "ABO_A": true, "ABO_B": true, "PDF_A": true}

const supportedFormats = "CSV_A, CSV_B"

// statementLine is one movement of the merchant account.
type statementLine struct {
	at       time.Time
	id       int64
	parentID int64
	order    string
	kind     string
	instr    string
	amount   int64
	currency string
}

// handleStatement: POST /api/accounts/account-statement.
func (g *Gateway) handleStatement(c echo.Context) error {
	var req restbackend.StatementRequest
	if err := readJSON(c, &req); err != nil {
		return err
	}
	v := &validator{}
	from, errFrom := time.ParseInLocation("2006-01-02", req.DateFrom, prague)
	to, errTo := time.ParseInLocation("2006-01-02", req.DateTo, prague)
	for _, f := range []struct {
		name, val string
		err       error
	}{{"date_from", req.DateFrom, errFrom}, {"date_to", req.DateTo, errTo}} {
		switch {
		case f.val == "":
			v.add(codeMandatory, f.name, "%s is required (YYYY-MM-DD)", f.name)
		case f.err != nil:
			v.add(codeWrongFormat, f.name, "%s must be a date YYYY-MM-DD", f.name)
		}
	}
	if errFrom == nil && errTo == nil && to.Before(from) {
		v.add(codeWrongFormat, "date_to", "date_to is before date_from")
	}
	if req.GoID == 0 {
		v.add(codeMandatory, "goid", "goid is required")
	}
	v.currencyField("currency", req.Currency)
	switch {
	case req.Format == "":
		v.add(codeMandatory, "format", "format is required (supported: %s)", supportedFormats)
	case req.Format != "CSV_A" && req.Format != "CSV_B":
		if statementFormats[req.Format] {
			v.add(codeWrongFormat, "format", "format %s is not supported by the sandbox (supported: %s)", req.Format, supportedFormats)
		} else {
			v.add(codeWrongFormat, "format", "unknown format %q (supported: %s)", req.Format, supportedFormats)
		}
	}
	if req.GoID != 0 && req.GoID != goidOf(c) {
		return errForbidden(fmt.Sprintf("goid %d does not belong to this client", req.GoID))
	}
	if err := v.err(); err != nil {
		return err
	}
	end := to.AddDate(0, 0, 1) // date_to is inclusive
	var lines []statementLine
	g.mu.Lock()
	for _, p := range g.order {
		if p.goid != req.GoID || p.req.Currency != req.Currency {
			continue
		}
		for _, m := range p.moves {
			if m.at.Before(from) || !m.at.Before(end) {
				continue
			}
			lines = append(lines, statementLine{at: m.at, id: p.id, parentID: p.parentID, order: p.req.OrderNumber,
				kind: m.kind, instr: p.instrument, amount: m.amount, currency: p.req.Currency})
		}
	}
	g.mu.Unlock()
	sort.SliceStable(lines, func(i, j int) bool {
		if !lines[i].at.Equal(lines[j].at) {
			return lines[i].at.Before(lines[j].at)
		}
		return lines[i].id < lines[j].id
	})
	body := buildCSV(req.Format, lines)
	c.Response().Header().Set("Content-Disposition",
		fmt.Sprintf(`attachment; filename="statement_%d_%s_%s_%s.csv"`, req.GoID, req.Currency, req.DateFrom, req.DateTo))
	return c.Blob(http.StatusOK, "application/octet-stream", body)
}

// buildCSV writes the statement: CSV_A is comma separated with English
// headers and decimal points; CSV_B is semicolon separated with Czech
// headers and decimal commas (opens directly in a Czech spreadsheet).
func buildCSV(format string, lines []statementLine) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	head := []string{"date", "payment_id", "parent_id", "order_number", "movement", "payment_instrument", "amount", "currency"}
	dec := "."
	if format == "CSV_B" {
		w.Comma = ';'
		head = []string{"Datum", "ID platby", "ID původní platby", "Číslo objednávky", "Pohyb", "Platební metoda", "Částka", "Měna"}
		dec = ","
	}
	_ = w.Write(head)
	for _, l := range lines {
		parent := ""
		if l.parentID != 0 {
			parent = strconv.FormatInt(l.parentID, 10)
		}
		_ = w.Write([]string{l.at.In(prague).Format("2006-01-02 15:04:05"), strconv.FormatInt(l.id, 10), parent, l.order,
			l.kind, l.instr, decimal(l.amount, dec), l.currency})
	}
	w.Flush()
	return buf.Bytes()
}

// decimal formats minor units with two decimals.
func decimal(minor int64, sep string) string {
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	return sign + strconv.FormatInt(minor/100, 10) + sep + fmt.Sprintf("%02d", minor%100)
}
