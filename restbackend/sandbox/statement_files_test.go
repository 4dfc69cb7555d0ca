package sandbox

import (
	"bytes"
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"
	"golang.org/x/text/encoding/charmap"
)

// Every format the facts list is a valid file of its kind: each is read back
// with a reader of that kind and shows the scenario's seven movements.
func TestStatementFormatsReadBack(t *testing.T) {
	e := newEnv(t)
	statementScenario(e)
	get := func(t *testing.T, format string) ([]byte, string) {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/accounts/account-statement",
			strings.NewReader(`{"date_from":"2026-03-02","date_to":"2026-03-04","goid":"8123456789","currency":"CZK","format":"`+format+`"}`))
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, err = buf.ReadFrom(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, buf.String())
		return buf.Bytes(), resp.Header.Get("Content-Disposition")
	}
	readCSV := func(t *testing.T, b []byte, comma rune) [][]string {
		r := csv.NewReader(bytes.NewReader(b))
		r.Comma = comma
		rows, err := r.ReadAll()
		require.NoError(t, err)
		return rows
	}
	t.Run("CSV_C windows-1250", func(t *testing.T) {
		b, _ := get(t, "CSV_C")
		utf, err := charmap.Windows1250.NewDecoder().Bytes(b)
		require.NoError(t, err)
		rows := readCSV(t, utf, ';')
		require.Len(t, rows, 8)
		assert.Equal(t, "Číslo objednávky", rows[0][3])
		assert.Equal(t, "-50,50", rows[3][6])
		assert.Contains(t, string(b), "\r\n")
	})
	t.Run("CSV_D tab, minor units", func(t *testing.T) {
		b, cd := get(t, "CSV_D")
		assert.Contains(t, cd, ".tsv")
		rows := readCSV(t, b, '\t')
		require.Len(t, rows, 8)
		assert.Equal(t, "-5050", rows[3][6])
		assert.Equal(t, "2026-03-02T11:00:00+01:00", rows[3][0])
	})
	t.Run("CSV_E BOM, CRLF", func(t *testing.T) {
		b, _ := get(t, "CSV_E")
		require.True(t, bytes.HasPrefix(b, []byte("\ufeff")))
		rows := readCSV(t, bytes.TrimPrefix(b, []byte("\ufeff")), ',')
		require.Len(t, rows, 8)
		assert.Equal(t, "-50.50", rows[3][6])
	})
	for _, format := range []string{"XLS_A", "XLS_B", "XLS_C"} {
		t.Run(format, func(t *testing.T) {
			b, cd := get(t, format)
			assert.Contains(t, cd, ".xlsx")
			f, err := excelize.OpenReader(bytes.NewReader(b))
			require.NoError(t, err)
			defer f.Close()
			rows, err := f.GetRows("Statement")
			require.NoError(t, err)
			require.Len(t, rows, 8)
			assert.Equal(t, "OBJ-2, \"gift\"", rows[2][3])
			raw, err := f.GetCellValue("Statement", "G4", excelize.Options{RawCellValue: true})
			require.NoError(t, err)
			assert.Equal(t, "-50.5", raw, "a number, not text")
			sheets := f.GetSheetList()
			if format == "XLS_C" {
				require.Contains(t, sheets, "Summary")
				bal, _ := f.GetCellValue("Summary", "B7", excelize.Options{RawCellValue: true})
				assert.Equal(t, "234", bal, "10 + 250.50 - 50.50 + 15 + 3 × 3")
			} else {
				assert.Equal(t, []string{"Statement"}, sheets)
			}
		})
	}
	for _, format := range []string{"ABO_A", "ABO_B"} {
		t.Run(format, func(t *testing.T) {
			b, cd := get(t, format)
			assert.Contains(t, cd, ".gpc")
			text, err := charmap.Windows1250.NewDecoder().String(string(b))
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSuffix(text, "\r\n"), "\r\n")
			var items []string
			for _, l := range lines {
				require.Len(t, []rune(l), 128, "fixed width: %q", l)
				if strings.HasPrefix(l, "075") {
					items = append(items, l)
				}
			}
			assert.True(t, strings.HasPrefix(lines[0], "074"))
			require.Len(t, items, 7)
			refund := items[2]
			assert.Equal(t, "000000005050", refund[48:60], "amount in minor units")
			assert.Equal(t, "1", refund[60:61], "a debit")
			assert.Equal(t, "0203", refund[118:122], "CZK")
			credit, _ := strconv.ParseInt(lines[0][90:104], 10, 64)
			debit, _ := strconv.ParseInt(lines[0][75:89], 10, 64)
			assert.EqualValues(t, 5050, debit)
			assert.EqualValues(t, 1000+25050+1500+300*3, credit)
			if format == "ABO_B" {
				assert.Contains(t, text, "078ORDER OBJ-2")
			} else {
				assert.NotContains(t, text, "078")
			}
		})
	}
	t.Run("PDF_A", func(t *testing.T) {
		b, cd := get(t, "PDF_A")
		assert.Contains(t, cd, ".pdf")
		conf := model.NewDefaultConfiguration()
		conf.ValidationMode = model.ValidationStrict
		require.NoError(t, api.Validate(bytes.NewReader(b), conf), "a valid PDF")
		n, err := api.PageCount(bytes.NewReader(b), conf)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})
}
