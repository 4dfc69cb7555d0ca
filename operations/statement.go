package operations

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
)

// statementFormat is one statement file format: the REST format asked for,
// and how the file is served.
type statementFormat struct {
	REST        string
	ContentType string
	Ext         string
}

// statementFormats maps the legacy contentType values (CSV, XLS, ABO) to the
// REST formats of the same family ("_A" variant) and also accepts the REST
// names themselves, so an e-shop can ask for any of them.
var statementFormats = map[string]statementFormat{
	"CSV":   {"CSV_A", "text/csv", "csv"},
	"XLS":   {"XLS_A", "application/vnd.ms-excel", "xls"},
	"ABO":   {"ABO_A", "text/plain", "gpc"},
	"CSV_A": {"CSV_A", "text/csv", "csv"},
	"CSV_B": {"CSV_B", "text/csv", "csv"},
	"CSV_C": {"CSV_C", "text/csv", "csv"},
	"CSV_D": {"CSV_D", "text/csv", "csv"},
	"CSV_E": {"CSV_E", "text/csv", "csv"},
	"XLS_A": {"XLS_A", "application/vnd.ms-excel", "xls"},
	"XLS_B": {"XLS_B", "application/vnd.ms-excel", "xls"},
	"XLS_C": {"XLS_C", "application/vnd.ms-excel", "xls"},
	"ABO_A": {"ABO_A", "text/plain", "gpc"},
	"ABO_B": {"ABO_B", "text/plain", "gpc"},
	"PDF_A": {"PDF_A", "application/pdf", "pdf"},
}

// statement serves GET /gw/services/get-account-statement: the legacy
// statementRequest.* query, signed as statementRequest, answered with the
// REST account statement file. Errors are plain text (scripts call it).
func (f *Flows) statement(c echo.Context) error {
	q := c.QueryParams()
	get := func(name string) string { return strings.TrimSpace(q.Get("statementRequest." + name)) }
	fail := func(status int, msg string) error {
		return c.String(status, msg+"\n")
	}
	from, to := get("dateFrom"), get("dateTo")
	df, err1 := time.Parse(time.DateOnly, from)
	dt, err2 := time.Parse(time.DateOnly, to)
	switch {
	case err1 != nil:
		return fail(http.StatusBadRequest, "statementRequest.dateFrom must be a date yyyy-MM-dd")
	case err2 != nil:
		return fail(http.StatusBadRequest, "statementRequest.dateTo must be a date yyyy-MM-dd")
	case dt.Before(df):
		return fail(http.StatusBadRequest, "statementRequest.dateTo is before statementRequest.dateFrom")
	}
	m, err := f.merchantOf("statementRequest.targetGoId", get("targetGoId"))
	if err != nil {
		var pe *pageError
		errors.As(err, &pe)
		return fail(pe.Status, pe.EN)
	}
	currency := strings.ToUpper(get("currency"))
	if currency == "" {
		return fail(http.StatusBadRequest, "statementRequest.currency is missing")
	}
	// Legacy client libraries write the format as TYPE_CSV, TYPE_XLS, TYPE_ABO.
	kind := strings.TrimPrefix(strings.ToUpper(get("contentType")), "TYPE_")
	if kind == "" {
		kind = "CSV"
	}
	format, ok := statementFormats[kind]
	if !ok {
		return fail(http.StatusBadRequest, "statementRequest.contentType must be CSV, XLS or ABO")
	}
	// The signature covers the values as the e-shop sent them.
	if !Verify(m.SecureKey, q.Get("statementRequest.encryptedSignature"),
		StatementRequestFields(q.Get("statementRequest.dateFrom"), q.Get("statementRequest.dateTo"),
			q.Get("statementRequest.targetGoId"), q.Get("statementRequest.currency"))...) {
		return fail(http.StatusForbidden, "statementRequest.encryptedSignature does not verify")
	}
	// This POST only reads, so unlike pay-base-v2 it stays on the request's
	// context: a caller that hangs up stops the download.
	body, err := f.svc.gw.AccountStatement(c.Request().Context(), m.Credentials(), &restbackend.StatementRequest{
		DateFrom: from, DateTo: to, GoID: m.GoID, Currency: currency, Format: format.REST,
	})
	if err != nil {
		var ae *restbackend.APIError
		if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 {
			f.logFor(c.Request().Context()).Info("statement refused", zap.Int64("goid", m.GoID), zap.Error(err))
			return fail(http.StatusBadRequest, "the gateway refused the statement: "+ae.Error())
		}
		f.logFor(c.Request().Context()).Warn("statement failed", zap.Int64("goid", m.GoID), zap.Error(err))
		return fail(http.StatusBadGateway, "the payment gateway did not deliver the statement; try again later")
	}
	name := "statement-" + FormatInt(m.GoID) + "-" + from + "-" + to + "." + format.Ext
	h := c.Response().Header()
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, format.ContentType, body)
}
