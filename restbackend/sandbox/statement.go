package sandbox

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/text/encoding/charmap"
)

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

// statementDoc is what a format writer gets: the lines and the request.
type statementDoc struct {
	goid     int64
	currency string
	from, to string // YYYY-MM-DD as requested
	lines    []statementLine
}

// statementFormat writes one of the formats the facts list, with the
// file-name extension it gets.
type statementFormat struct {
	ext   string
	write func(statementDoc) ([]byte, error)
}

// statementFormats: CSV_A comma/English/decimal point; CSV_B semicolon/Czech/
// decimal comma; CSV_C is CSV_B in windows-1250 (older Czech spreadsheets);
// CSV_D tab-separated, amounts in minor units, RFC 3339 times; CSV_E CSV_A
// with a UTF-8 byte-order mark and CRLF (Excel opens it with diacritics
// intact). XLS_* are Office Open XML workbooks (.xlsx, see statement_files.go);
// ABO_* the Czech banks' fixed-width ABO/GPC export; PDF_A a printable PDF.
var statementFormats = map[string]statementFormat{
	"CSV_A": {"csv", func(d statementDoc) ([]byte, error) { return writeCSV(d, csvEnglish, ',', "\n", false), nil }},
	"CSV_B": {"csv", func(d statementDoc) ([]byte, error) { return writeCSV(d, csvCzech, ';', "\n", false), nil }},
	"CSV_C": {"csv", func(d statementDoc) ([]byte, error) {
		return charmap.Windows1250.NewEncoder().Bytes(writeCSV(d, csvCzech, ';', "\r\n", false))
	}},
	"CSV_D": {"tsv", func(d statementDoc) ([]byte, error) { return writeCSV(d, csvMinor, '\t', "\n", false), nil }},
	"CSV_E": {"csv", func(d statementDoc) ([]byte, error) { return writeCSV(d, csvEnglish, ',', "\r\n", true), nil }},
	"XLS_A": {"xlsx", func(d statementDoc) ([]byte, error) { return writeXLSX(d, csvEnglish, false) }},
	"XLS_B": {"xlsx", func(d statementDoc) ([]byte, error) { return writeXLSX(d, csvCzech, false) }},
	"XLS_C": {"xlsx", func(d statementDoc) ([]byte, error) { return writeXLSX(d, csvEnglish, true) }},
	"ABO_A": {"gpc", func(d statementDoc) ([]byte, error) { return writeABO(d, false) }},
	"ABO_B": {"gpc", func(d statementDoc) ([]byte, error) { return writeABO(d, true) }},
	"PDF_A": {"pdf", writePDF},
}

// AllStatementFormats are the statement formats the facts list
// (Options.StatementFormats).
var AllStatementFormats = func() []string {
	names := make([]string, 0, len(statementFormats))
	for n := range statementFormats {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}()

// handleStatement: POST /api/accounts/account-statement.
func (g *Gateway) handleStatement(c echo.Context) error {
	v := &validator{}
	req, err := readAs(c, v, (*statementIn).rest)
	if err != nil {
		return err
	}
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
	goid := req.GoID
	if goid == 0 {
		v.add(codeMandatory, "goid", "goid is required")
	}
	v.currencyField("currency", req.Currency)
	format, known := statementFormats[req.Format]
	offered := strings.Join(g.opts.StatementFormats, ", ")
	switch {
	case req.Format == "":
		v.add(codeMandatory, "format", "format is required (supported: %s)", offered)
	case !known:
		v.add(codeWrongFormat, "format", "unknown format %q (supported: %s)", req.Format, offered)
	case !contains(g.opts.StatementFormats, req.Format):
		v.add(codeWrongFormat, "format", "format %s is not enabled for this account (supported: %s)", req.Format, offered)
	}
	if goid != 0 && goid != goidOf(c) {
		return errForbidden(fmt.Sprintf("goid %d does not belong to this client", goid))
	}
	if err := v.err(); err != nil {
		return err
	}
	end := to.AddDate(0, 0, 1) // date_to is inclusive
	doc := statementDoc{goid: goid, currency: req.Currency, from: req.DateFrom, to: req.DateTo}
	g.mu.Lock()
	for _, p := range g.order {
		if p.goid != goid || p.req.Currency != req.Currency {
			continue
		}
		for _, m := range p.moves {
			if m.at.Before(from) || !m.at.Before(end) {
				continue
			}
			doc.lines = append(doc.lines, statementLine{at: m.at, id: p.id, parentID: p.parentID, order: p.req.OrderNumber,
				kind: m.kind, instr: p.instrument, amount: m.amount, currency: p.req.Currency})
		}
	}
	g.mu.Unlock()
	sort.SliceStable(doc.lines, func(i, j int) bool {
		if !doc.lines[i].at.Equal(doc.lines[j].at) {
			return doc.lines[i].at.Before(doc.lines[j].at)
		}
		return doc.lines[i].id < doc.lines[j].id
	})
	body, err := format.write(doc)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Disposition",
		fmt.Sprintf(`attachment; filename="statement_%d_%s_%s_%s.%s"`, goid, req.Currency, req.DateFrom, req.DateTo, format.ext))
	return c.Blob(http.StatusOK, "application/octet-stream", body)
}

// columns is a statement's header row and how it shows amounts.
type columns struct {
	head    []string
	decimal string // "" writes minor units
}

var (
	csvEnglish = columns{[]string{"date", "payment_id", "parent_id", "order_number", "movement", "payment_instrument", "amount", "currency"}, "."}
	csvCzech   = columns{[]string{"Datum", "ID platby", "ID původní platby", "Číslo objednávky", "Pohyb", "Platební metoda", "Částka", "Měna"}, ","}
	csvMinor   = columns{[]string{"date", "payment_id", "parent_id", "order_number", "movement", "payment_instrument", "amount_minor", "currency"}, ""}
)

// row is one line's cells as text.
func (cols columns) row(l statementLine) []string {
	parent := ""
	if l.parentID != 0 {
		parent = strconv.FormatInt(l.parentID, 10)
	}
	when := l.at.In(prague).Format("2006-01-02 15:04:05")
	amount := strconv.FormatInt(l.amount, 10)
	if cols.decimal == "" {
		when = l.at.In(prague).Format(time.RFC3339)
	} else {
		amount = decimal(l.amount, cols.decimal)
	}
	return []string{when, strconv.FormatInt(l.id, 10), parent, l.order, l.kind, l.instr, amount, l.currency}
}

func writeCSV(d statementDoc, cols columns, comma rune, eol string, bom bool) []byte {
	var buf bytes.Buffer
	if bom {
		buf.WriteString("\ufeff")
	}
	w := csv.NewWriter(&buf)
	w.Comma = comma
	w.UseCRLF = eol == "\r\n"
	_ = w.Write(cols.head)
	for _, l := range d.lines {
		_ = w.Write(cols.row(l))
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
