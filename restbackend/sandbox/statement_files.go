package sandbox

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/xuri/excelize/v2"
	"golang.org/x/text/encoding/charmap"
)

// writeXLSX builds the XLS_* statements. The facts name the formats XLS_A–C
// without saying which Excel file they are; no maintained Go library writes
// the old binary .xls (BIFF8), so the sandbox writes Office Open XML
// (.xlsx), which every spreadsheet program opens, with excelize. Amounts are
// numeric cells; XLS_C adds a "Summary" sheet with totals per movement kind.
func writeXLSX(d statementDoc, cols columns, summary bool) ([]byte, error) {
	f := excelize.NewFile()
	defer f.Close()
	const sheet = "Statement"
	if err := f.SetSheetName("Sheet1", sheet); err != nil {
		return nil, err
	}
	money, err := f.NewStyle(&excelize.Style{NumFmt: 4}) // #,##0.00
	if err != nil {
		return nil, err
	}
	if err := f.SetSheetRow(sheet, "A1", &cols.head); err != nil {
		return nil, err
	}
	totals := map[string]int64{}
	for i, l := range d.lines {
		cells := cols.row(l)
		row := []any{cells[0], l.id, cells[2], l.order, l.kind, l.instr, float64(l.amount) / 100, l.currency}
		if l.parentID != 0 {
			row[2] = l.parentID
		}
		cell := fmt.Sprintf("A%d", i+2)
		if err := f.SetSheetRow(sheet, cell, &row); err != nil {
			return nil, err
		}
		if err := f.SetCellStyle(sheet, fmt.Sprintf("G%d", i+2), fmt.Sprintf("G%d", i+2), money); err != nil {
			return nil, err
		}
		totals[l.kind] += l.amount
	}
	if summary {
		if _, err := f.NewSheet("Summary"); err != nil {
			return nil, err
		}
		rows := [][]any{{"goid", d.goid}, {"currency", d.currency}, {"date_from", d.from}, {"date_to", d.to},
			{"payments", float64(totals["PAYMENT"]) / 100}, {"refunds", float64(totals["REFUND"]) / 100},
			{"balance", float64(totals["PAYMENT"]+totals["REFUND"]) / 100}}
		for i, r := range rows {
			if err := f.SetSheetRow("Summary", fmt.Sprintf("A%d", i+1), &r); err != nil {
				return nil, err
			}
		}
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// The ABO (GPC) export of Czech banks: fixed-width records of 128
// characters in windows-1250, CRLF. "074" opens the statement with the
// balances and turnovers, one "075" per movement (amount in minor units,
// accounting code 1 debit / 2 credit, the payment id as variable symbol).
// ABO_B adds "078"/"079" records after each movement with the order number
// and the payment instrument.
const (
	aboAccount = "0000002000145399" // the sandbox merchant account
)

var aboCurrency = map[string]string{"CZK": "0203", "EUR": "0978", "PLN": "0985", "HUF": "0348", "GBP": "0826", "USD": "0840", "RON": "0946", "BGN": "0975"}

func writeABO(d statementDoc, messages bool) ([]byte, error) {
	var debit, credit int64
	for _, l := range d.lines {
		if l.amount < 0 {
			debit -= l.amount
		} else {
			credit += l.amount
		}
	}
	to, err := time.ParseInLocation("2006-01-02", d.to, prague)
	if err != nil {
		return nil, err
	}
	from, err := time.ParseInLocation("2006-01-02", d.from, prague)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	rec := func(fields ...string) {
		line := strings.Join(fields, "")
		b.WriteString(line)
		b.WriteString("\r\n")
	}
	rec("074", aboAccount, fixed("SANDBOX MERCHANT", 20), from.AddDate(0, 0, -1).Format("020106"),
		num14(0), "+", num14(credit-debit), sign(credit-debit), num14(debit), "0", num14(credit), "0",
		"001", to.Format("020106"), strings.Repeat(" ", 14))
	for _, l := range d.lines {
		code, amount := "2", l.amount
		if amount < 0 {
			code, amount = "1", -amount
		}
		rec("075", aboAccount, strings.Repeat("0", 16), fmt.Sprintf("%013d", l.id%1e13), fmt.Sprintf("%012d", amount), code,
			fmt.Sprintf("%010d", l.id%1e10), "0000000000", "0000000000", l.at.In(prague).Format("020106"),
			fixed(l.kind+" "+l.order, 20), "0", aboCurrency[l.currency], l.at.In(prague).Format("020106"))
		if messages {
			rec("078", fixed("ORDER "+l.order, 125))
			rec("079", fixed("INSTRUMENT "+l.instr, 125))
		}
	}
	return charmap.Windows1250.NewEncoder().Bytes([]byte(b.String()))
}

// fixed pads or cuts s to n characters (runes: the file is single-byte).
func fixed(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = r[:n]
	}
	return string(r) + strings.Repeat(" ", n-len(r))
}

func num14(v int64) string {
	if v < 0 {
		v = -v
	}
	return fmt.Sprintf("%014d", v)
}

func sign(v int64) string {
	if v < 0 {
		return "-"
	}
	return "+"
}

// writePDF prints the statement as a one-table A4 document with fpdf. Its
// core fonts are single-byte, so the text goes through fpdf's cp1250
// translator to keep Czech diacritics.
func writePDF(d statementDoc) ([]byte, error) {
	pdf := fpdf.New("L", "mm", "A4", "")
	pdf.SetTitle("Account statement", true)
	pdf.SetCreator("soapbridge sandbox gateway", true)
	tr := pdf.UnicodeTranslatorFromDescriptor("cp1250")
	pdf.AddPage()
	pdf.SetFont("Helvetica", "B", 14)
	pdf.CellFormat(0, 9, tr(fmt.Sprintf("Account statement %d %s, %s – %s", d.goid, d.currency, d.from, d.to)), "", 1, "L", false, 0, "")
	widths := []float64{38, 28, 28, 70, 24, 38, 30, 18}
	pdf.SetFont("Helvetica", "B", 9)
	for i, h := range csvEnglish.head {
		pdf.CellFormat(widths[i], 7, h, "1", 0, "L", false, 0, "")
	}
	pdf.Ln(-1)
	pdf.SetFont("Helvetica", "", 9)
	var total int64
	for _, l := range d.lines {
		for i, cell := range csvEnglish.row(l) {
			align := "L"
			if i == 6 {
				align = "R"
			}
			pdf.CellFormat(widths[i], 6, tr(cell), "1", 0, align, false, 0, "")
		}
		pdf.Ln(-1)
		total += l.amount
	}
	pdf.SetFont("Helvetica", "B", 9)
	pdf.CellFormat(widths[0]+widths[1]+widths[2]+widths[3]+widths[4]+widths[5], 7, "balance", "1", 0, "R", false, 0, "")
	pdf.CellFormat(widths[6], 7, decimal(total, "."), "1", 0, "R", false, 0, "")
	pdf.CellFormat(widths[7], 7, d.currency, "1", 1, "L", false, 0, "")
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
