package restbackend

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// SKELETON: signatures are the contract other packages code against; the
// bodies are filled in by the restbackend work.

// Credentials are one merchant's OAuth2 client credentials. String and
// GoString never show the secret.
type Credentials struct {
	ClientID     string
	ClientSecret string
}

func (c Credentials) String() string   { return "Credentials{" + c.ClientID + ", secret:***}" }
func (c Credentials) GoString() string { return c.String() }

// Config configures a Client.
type Config struct {
	// BaseURL is the REST root, e.g. https://gw.sandbox.gopay.com/api ("/api"
	// is appended when missing).
	BaseURL string
	// Scope of the tokens requested; payment-all when empty.
	Scope string
	// Timeout bounds a whole call (including retries of GETs); 30s when zero.
	Timeout time.Duration
	// HTTPClient replaces the pooled client (tests); nil means the default pool.
	HTTPClient *http.Client
	Logger     *zap.Logger
	UserAgent  string
	// AcceptLanguage is sent on every call ("cs-CZ" or "en-US"); en-US when empty.
	AcceptLanguage string
}

// Client calls one gateway on behalf of any number of merchants. It is safe
// for concurrent use.
type Client struct {
	cfg Config
}

// New returns a Client for cfg.
func New(cfg Config) *Client { return &Client{cfg: cfg} }

var errNotImplemented = errors.New("restbackend: not implemented")

// Token returns a cached or new access token for cr.
func (c *Client) Token(ctx context.Context, cr Credentials) (string, error) {
	return "", errNotImplemented
}

// CreatePayment: POST /payments/payment.
func (c *Client) CreatePayment(ctx context.Context, cr Credentials, req *PaymentRequest) (*Payment, error) {
	return nil, errNotImplemented
}

// PaymentStatus: GET /payments/payment/{id}.
func (c *Client) PaymentStatus(ctx context.Context, cr Credentials, id int64) (*Payment, error) {
	return nil, errNotImplemented
}

// Refund: POST /payments/payment/{id}/refund with form amount.
func (c *Client) Refund(ctx context.Context, cr Credentials, id int64, amount int64) (*Result, error) {
	return nil, errNotImplemented
}

// CreateRecurrence: POST /payments/payment/{id}/create-recurrence.
func (c *Client) CreateRecurrence(ctx context.Context, cr Credentials, parentID int64, req *RecurrenceRequest) (*Payment, error) {
	return nil, errNotImplemented
}

// VoidRecurrence: POST /payments/payment/{id}/void-recurrence.
func (c *Client) VoidRecurrence(ctx context.Context, cr Credentials, id int64) (*Result, error) {
	return nil, errNotImplemented
}

// Capture: POST /payments/payment/{id}/capture; req nil captures the whole
// authorized amount, otherwise a partial capture.
func (c *Client) Capture(ctx context.Context, cr Credentials, id int64, req *CaptureRequest) (*Result, error) {
	return nil, errNotImplemented
}

// VoidAuthorization: POST /payments/payment/{id}/void-authorization.
func (c *Client) VoidAuthorization(ctx context.Context, cr Credentials, id int64) (*Result, error) {
	return nil, errNotImplemented
}

// PaymentInstruments: GET /eshops/eshop/{goid}/payment-instruments/{currency}.
func (c *Client) PaymentInstruments(ctx context.Context, cr Credentials, goid int64, currency string) (*InstrumentList, error) {
	return nil, errNotImplemented
}

// AccountStatement: POST /accounts/account-statement; returns the file.
func (c *Client) AccountStatement(ctx context.Context, cr Credentials, req *StatementRequest) ([]byte, error) {
	return nil, errNotImplemented
}

// APIError is a failure answered by the gateway with an HTTP status and an
// error list (401, 403, 404, 409, 5xx).
type APIError struct {
	Status int
	Body   ErrorBody
}

func (e *APIError) Error() string {
	msg := "gateway answered " + http.StatusText(e.Status)
	if len(e.Body.Errors) > 0 {
		it := e.Body.Errors[0]
		msg += ": " + it.ErrorName
		if it.Field != "" {
			msg += " (" + it.Field + ")"
		}
		if it.Message != "" {
			msg += " " + it.Message
		}
	}
	return msg
}

// TransportError is a failure to reach the gateway or to get its whole reply
// (refused, reset, DNS, TLS); Timeout is set when a deadline passed.
type TransportError struct {
	Op      string
	Timeout bool
	Err     error
}

func (e *TransportError) Error() string { return "gateway " + e.Op + ": " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// MalformedError is a reply that could not be understood (bad JSON, wrong
// content type, a status without an error list).
type MalformedError struct {
	Op     string
	Status int
	Err    error
}

func (e *MalformedError) Error() string {
	return "gateway " + e.Op + ": malformed reply: " + e.Err.Error()
}
func (e *MalformedError) Unwrap() error { return e.Err }
