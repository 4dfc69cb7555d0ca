package operations

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/operations/usage"
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

// StatementRequest is the legacy statementRequest of
// get-account-statement, each value exactly as sent.
type StatementRequest struct {
	DateFrom, DateTo, TargetGoID, Currency, ContentType, EncryptedSignature string
}

// StatementFile is a statement to hand to the e-shop. Body streams the
// gateway's file as it arrives (capped by the REST client's statement
// limit, so a statement is never held whole in memory); the caller must
// close it. A read error midway means the file is incomplete.
type StatementFile struct {
	Name        string
	ContentType string
	Body        io.ReadCloser
}

// Statement serves get-account-statement: the REST account statement file
// of the request, signed as statementRequest. Errors: *RequestError (bad
// request), *BadParamError / *UnknownMerchantError (goid), ErrBadSignature,
// *RefusedError (the gateway refused) and ErrGatewayDown.
func (s *Service) Statement(ctx context.Context, r *StatementRequest) (*StatementFile, error) {
	c := s.begin(ctx, usage.FlowStatement)
	file, err := c.statement(ctx, r)
	c.finish(flowResult(err), r)
	return file, err
}

func (c *call) statement(ctx context.Context, r *StatementRequest) (*StatementFile, error) {
	s := c.s
	t := strings.TrimSpace
	from, to := t(r.DateFrom), t(r.DateTo)
	df, err1 := time.Parse(time.DateOnly, from)
	dt, err2 := time.Parse(time.DateOnly, to)
	switch {
	case err1 != nil:
		return nil, &RequestError{"statementRequest.dateFrom must be a date yyyy-MM-dd"}
	case err2 != nil:
		return nil, &RequestError{"statementRequest.dateTo must be a date yyyy-MM-dd"}
	case dt.Before(df):
		return nil, &RequestError{"statementRequest.dateTo is before statementRequest.dateFrom"}
	}
	if err := c.flowMerchant("statementRequest.targetGoId", t(r.TargetGoID)); err != nil {
		return nil, err
	}
	m := c.m
	// The Java 2.4 and .NET libraries send no currency and sign four fields
	// instead of five; each form is verified with its own scheme. The REST
	// statement is of one account currency (its currency field is
	// mandatory), and one file cannot join several formatted statements, so
	// a request without currency gets the merchant's default currency.
	currency := strings.ToUpper(t(r.Currency))
	alts := [][]string{StatementRequestFields(r.DateFrom, r.DateTo, r.TargetGoID, r.Currency)}
	if currency == "" {
		currency = m.Currency
		// An empty currency parameter signed as an empty fifth field also
		// verifies.
		alts = append([][]string{StatementRequestFieldsNoCurrency(r.DateFrom, r.DateTo, r.TargetGoID)}, alts...)
	}
	// Legacy client libraries write the format as TYPE_CSV, TYPE_XLS, TYPE_ABO.
	kind := strings.TrimPrefix(strings.ToUpper(t(r.ContentType)), "TYPE_")
	if kind == "" {
		kind = "CSV"
	}
	format, ok := statementFormats[kind]
	if !ok {
		return nil, &RequestError{"statementRequest.contentType must be CSV, XLS or ABO"}
	}
	// The signature covers the values as the e-shop sent them.
	if err := c.flowVerify(ctx, "statementRequest", r.EncryptedSignature, alts...); err != nil {
		return nil, err
	}
	// This POST only reads, so unlike pay-base-v2 it stays on the request's
	// context: a caller that hangs up stops the download.
	body, err := s.gw.AccountStatementStream(ctx, m.Credentials(), &restbackend.StatementRequest{
		DateFrom: from, DateTo: to, GoID: m.GoID, Currency: currency, Format: format.REST,
	})
	if err != nil {
		var ae *restbackend.APIError
		if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 {
			s.logFor(ctx).Info("statement refused", zap.Int64("goid", m.GoID), zap.Error(err))
			return nil, &RefusedError{Desc: "the gateway refused the statement: " + ae.Error()}
		}
		s.logFor(ctx).Warn("statement failed", zap.Int64("goid", m.GoID), zap.Error(err))
		return nil, ErrGatewayDown
	}
	return &StatementFile{
		Name:        "statement-" + FormatInt(m.GoID) + "-" + from + "-" + to + "." + format.Ext,
		ContentType: format.ContentType,
		Body:        body,
	}, nil
}
