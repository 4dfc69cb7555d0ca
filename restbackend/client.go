package restbackend

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"
)

// Credentials are one merchant's OAuth2 client credentials. String and
// GoString never show the secret.
type Credentials struct {
	ClientID     string
	ClientSecret string
	// PreviousSecret, while a client secret is being rotated, is tried
	// when the gateway refuses ClientSecret (the new secret may not be in
	// force at the gateway yet, or no longer the old one): "" for none.
	PreviousSecret string
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
	// Timeout bounds a whole call (including retries of GETs) when the
	// caller's context has no deadline, and each HTTP exchange of the
	// pooled client in any case; DefaultTimeout when zero. A call that acts (moves
	// money, creates a payment) does not start when the caller's deadline
	// is closer than Timeout (NotStartedError).
	Timeout time.Duration
	// HTTPClient replaces the pooled client (tests); nil means the default pool.
	HTTPClient *http.Client
	// MaxIdleConns sizes the default pool's idle keep-alive connections to
	// the gateway: about the calls expected in flight at peak.
	// DefaultMaxIdleConns when zero.
	MaxIdleConns int
	Logger       *zap.Logger
	// UserAgent is sent on every call; DefaultUserAgent when empty.
	UserAgent string
	// AcceptLanguage is sent on every call ("cs-CZ" or "en-US"); en-US when empty.
	AcceptLanguage string
	// Now is the clock the token cache uses (tests); time.Now when nil.
	Now func() time.Time
	// MaxStatementSize caps an account statement; DefaultMaxStatementSize
	// when zero. Every other reply is capped at MaxJSONReply.
	MaxStatementSize int64
	// Observer, when set, is told of every HTTP exchange with the gateway
	// (metrics). It lives outside this package so that the client does
	// not depend on a metrics library.
	Observer Observer
	// Tracer, when set, puts a span around every HTTP exchange (tracing),
	// under the caller's context.
	Tracer Tracer
}

// Tracer starts a span for one exchange (endpoint as for Observer) and
// returns the context to send it under and the function that ends it with
// the HTTP status (0: no reply) and the exchange's error.
type Tracer interface {
	StartExchange(ctx context.Context, endpoint, method string) (context.Context, func(status int, err error))
}

// Observer is told of each exchange: the call (endpoint) name such as
// "token", "create payment" or "payment status", the HTTP status (0 when no reply
// came) and how long it took. It must not block.
type Observer interface {
	ObserveGateway(endpoint string, status int, d time.Duration)
}

// DefaultTimeout is Config.Timeout's default, and the bridge's rest_timeout:
// the gateway answers well under a second, and a legacy call's whole
// deadline (operations.CallDeadlineFor) must leave room for the reads before a POST and for
// reconciling a lost reply after it.
const DefaultTimeout = 10 * time.Second

// DefaultUserAgent is sent when Config.UserAgent is empty.
const DefaultUserAgent = "soapbridge-restbackend/1.0"

// Client calls one gateway on behalf of any number of merchants. It is safe
// for concurrent use; its one pooled HTTP client is shared by every call.
type Client struct {
	cfg  Config
	base string // REST root without trailing slash, ending in /api
	hc   *http.Client
	// rt is hc's transport when hc is the pooled client New made, whose
	// Client layer adds nothing to a request with an earlier deadline of
	// its own (exchange); nil for a client given in Config.
	rt  http.RoundTripper
	log *zap.Logger

	mu     sync.Mutex
	tokens map[string]cachedToken // by tokenKey
	flight singleflight.Group     // one token request per key at a time

	// Header values every request carries, set without a copy (send).
	hdrAccept, hdrLang, hdrUA []string
	bearer                    atomic.Pointer[bearerHeader] // the last token's Authorization
}

// bearerHeader is the Authorization value of one token, kept so that the
// calls of a merchant do not build it again (the one merchant of most
// bridges; another merchant's call replaces it).
type bearerHeader struct {
	tok string
	v   []string
	// get is the whole header of a request without a body under this
	// token (Accept, Accept-Language, User-Agent, Authorization), shared
	// by such requests and never written once built: see newRequest. nil
	// for a request's own Authorization (the token request's).
	get http.Header
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.Scope == "" {
		cfg.Scope = ScopePaymentAll
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.AcceptLanguage == "" {
		cfg.AcceptLanguage = "en-US"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxStatementSize <= 0 {
		cfg.MaxStatementSize = DefaultMaxStatementSize
	}
	c := &Client{cfg: cfg, base: apiRoot(cfg.BaseURL), hc: cfg.HTTPClient, log: cfg.Logger,
		tokens: map[string]cachedToken{}, hdrAccept: headerValue("application/json"),
		hdrLang: headerValue(cfg.AcceptLanguage), hdrUA: headerValue(cfg.UserAgent)}
	if c.hc == nil {
		c.hc = newPooledHTTPClient(cfg.Timeout, cfg.MaxIdleConns)
		if u, err := url.Parse(c.base); err == nil && u.User == nil {
			c.rt = c.hc.Transport
		}
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	return c
}

// headerValue is a header's value that requests share: full (len = cap),
// so that an Add makes a new slice instead of writing into it.
func headerValue(v string) []string { return []string{v}[:1:1] }

// bearerValue is the Authorization value for tok, with the header of a
// request without a body under it.
func (c *Client) bearerValue(tok string) *bearerHeader {
	if b := c.bearer.Load(); b != nil && b.tok == tok {
		return b
	}
	b := &bearerHeader{tok: tok, v: headerValue("Bearer " + tok)}
	b.get = http.Header{"Accept": c.hdrAccept, "Accept-Language": c.hdrLang, "User-Agent": c.hdrUA, "Authorization": b.v}
	c.bearer.Store(b)
	return b
}

// Timeout is the REST timeout of one call (Config.Timeout or its default):
// a call that acts starts only with this much of its context left.
func (c *Client) Timeout() time.Duration { return c.cfg.Timeout }

// apiRoot appends "/api" to a gateway URL that lacks it, as the official
// clients do, so both "https://gate.gopay.cz" and ".../api" work.
func apiRoot(u string) string {
	u = strings.TrimRight(u, "/")
	if !strings.HasSuffix(u, "/api") {
		u += "/api"
	}
	return u
}

// Content types of requests. The specification spells the capture one
// "x-www-from-urlencoded"; the official clients send the correct spelling.
const (
	ctJSON = "application/json"
	ctForm = "application/x-www-form-urlencoded"
)

// Token returns a cached or new access token for cr.
func (c *Client) Token(ctx context.Context, cr Credentials) (string, error) {
	ctx, cancel := c.withDeadline(ctx)
	defer cancel()
	return c.token(ctx, cr, c.tokenKey(cr))
}

// CreatePayment: POST /payments/payment.
func (c *Client) CreatePayment(ctx context.Context, cr Credentials, req *PaymentRequest) (*Payment, error) {
	r, err := jsonRequest("create payment", PathCreatePayment, req)
	if err != nil {
		return nil, err
	}
	r.acts = true
	p := new(Payment)
	return p, c.callJSON(ctx, &cr, &r, p, nil)
}

// PaymentStatus: GET /payments/payment/{id}. A reply about another payment
// is a MalformedError wrapping a MismatchError.
func (c *Client) PaymentStatus(ctx context.Context, cr Credentials, id int64) (*Payment, error) {
	p := new(Payment)
	r := request{op: "payment status", method: http.MethodGet, path: paymentPath(PathPayment, id)}
	return p, c.callJSON(ctx, &cr, &r, p, sameID("id", &p.ID, id))
}

// Refund: POST /payments/payment/{id}/refund with form amount.
func (c *Client) Refund(ctx context.Context, cr Credentials, id int64, amount int64) (*Result, error) {
	body := url.Values{"amount": {strconv.FormatInt(amount, 10)}}.Encode()
	r := request{op: "refund", method: http.MethodPost, path: paymentPath(PathRefund, id),
		contentType: ctForm, body: []byte(body), acts: true}
	res := new(Result)
	return res, c.callJSON(ctx, &cr, &r, res, sameID("id", &res.ID, id))
}

// RefundHistory: GET /payments/payment/{id}/refunds, the refunds made so far.
func (c *Client) RefundHistory(ctx context.Context, cr Credentials, id int64) ([]Refund, error) {
	r := request{op: "refund history", method: http.MethodGet, path: paymentPath(PathRefunds, id)}
	var l refundList
	if err := c.callJSON(ctx, &cr, &r, &l, nil); err != nil {
		return nil, err
	}
	return l, nil
}

// CreateRecurrence: POST /payments/payment/{id}/create-recurrence. The
// reply must be a child of parentID (parent_id) and not the parent itself.
func (c *Client) CreateRecurrence(ctx context.Context, cr Credentials, parentID int64, req *RecurrenceRequest) (*Payment, error) {
	r, err := jsonRequest("create recurrence", paymentPath(PathCreateRecurrence, parentID), req)
	if err != nil {
		return nil, err
	}
	r.acts = true
	p := new(Payment)
	return p, c.callJSON(ctx, &cr, &r, p, func() error {
		if p.ParentID != parentID {
			return &MismatchError{Field: "parent_id", Want: parentID, Got: p.ParentID}
		}
		if p.ID == parentID {
			return &MismatchError{Field: "id", Want: 0, Got: p.ID} // the parent, not a child
		}
		return nil
	})
}

// VoidRecurrence: POST /payments/payment/{id}/void-recurrence.
func (c *Client) VoidRecurrence(ctx context.Context, cr Credentials, id int64) (*Result, error) {
	return c.operation(ctx, cr, "void recurrence", PathVoidRecurrence, id)
}

// Capture: POST /payments/payment/{id}/capture; req nil captures the whole
// authorized amount, otherwise a partial capture.
func (c *Client) Capture(ctx context.Context, cr Credentials, id int64, req *CaptureRequest) (*Result, error) {
	if req == nil {
		return c.operation(ctx, cr, "capture", PathCapture, id)
	}
	r, err := jsonRequest("partial capture", paymentPath(PathCapture, id), req)
	if err != nil {
		return nil, err
	}
	r.acts = true
	res := new(Result)
	return res, c.callJSON(ctx, &cr, &r, res, sameID("id", &res.ID, id))
}

// VoidAuthorization: POST /payments/payment/{id}/void-authorization.
func (c *Client) VoidAuthorization(ctx context.Context, cr Credentials, id int64) (*Result, error) {
	return c.operation(ctx, cr, "void authorization", PathVoidAuthorization, id)
}

// operation is a bodiless form POST on payment id answered by an operation
// result about that payment.
func (c *Client) operation(ctx context.Context, cr Credentials, op, path string, id int64) (*Result, error) {
	r := request{op: op, method: http.MethodPost, path: paymentPath(path, id), contentType: ctForm, acts: true}
	res := new(Result)
	return res, c.callJSON(ctx, &cr, &r, res, sameID("id", &res.ID, id))
}

// PaymentInstruments: GET /eshops/eshop/{goid}/payment-instruments/{currency}.
func (c *Client) PaymentInstruments(ctx context.Context, cr Credentials, goid int64, currency string) (*InstrumentList, error) {
	path := FillPath(PathInstruments, strconv.FormatInt(goid, 10), currency)
	r := request{op: "payment instruments", method: http.MethodGet, path: path}
	l := new(InstrumentList)
	return l, c.callJSON(ctx, &cr, &r, l, nil)
}

// AccountStatement: POST /accounts/account-statement; returns the whole
// file, at most Config.MaxStatementSize bytes. AccountStatementStream
// does the same without holding the file in memory.
func (c *Client) AccountStatement(ctx context.Context, cr Credentials, req *StatementRequest) ([]byte, error) {
	r, err := jsonRequest("account statement", PathStatement, req)
	if err != nil {
		return nil, err
	}
	r.limit = c.cfg.MaxStatementSize
	rep, err := c.call(ctx, &cr, &r)
	if err != nil {
		return nil, err
	}
	return rep.body, nil
}

// AccountStatementStream: POST /accounts/account-statement; returns the
// file as it arrives. Reading it fails with a MalformedError wrapping
// ErrReplyTooLarge past Config.MaxStatementSize, and with a TransportError
// when the connection breaks. The caller must close it; the call's
// deadline (ctx's, or Config.Timeout) runs until then.
func (c *Client) AccountStatementStream(ctx context.Context, cr Credentials, req *StatementRequest) (io.ReadCloser, error) {
	r, err := jsonRequest("account statement", PathStatement, req)
	if err != nil {
		return nil, err
	}
	r.limit = c.cfg.MaxStatementSize
	r.stream = true
	rep, err := c.call(ctx, &cr, &r)
	if err != nil {
		return nil, err
	}
	return rep.stream, nil
}

// APIError is a failure answered by the gateway with an HTTP status and an
// error list (401, 403, 404, 409, 5xx).
type APIError struct {
	Op      string // the call, e.g. "refund"
	Status  int
	Body    ErrorBody
	outcome Outcome
}

// Outcome is not done for a 4xx (refused) and, for a call that acts,
// unknown for a 5xx.
func (e *APIError) Outcome() Outcome { return e.outcome }

func (e *APIError) Error() string {
	msg := "gateway " + e.Op + ": " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status)
	if len(e.Body.Errors) > 0 {
		it := e.Body.Errors[0]
		msg += ": " + strconv.Itoa(it.ErrorCode)
		if it.ErrorName != "" {
			msg += " " + it.ErrorName
		}
		if it.Field != "" {
			msg += " (" + it.Field + ")"
		}
		if it.Message != "" {
			msg += " " + it.Message
		}
		if n := len(e.Body.Errors); n > 1 {
			msg += " and " + strconv.Itoa(n-1) + " more"
		}
	}
	return msg
}

// Has reports whether the error list holds code.
func (e *APIError) Has(code int) bool {
	for _, it := range e.Body.Errors {
		if it.ErrorCode == code {
			return true
		}
	}
	return false
}

// TransportError is a failure to reach the gateway or to get its whole reply
// (refused, reset, DNS, TLS); Timeout is set when a deadline passed, Sent
// when the request had been written before the failure. A call that acts
// and was not started for lack of time wraps a NotStartedError.
type TransportError struct {
	Op      string
	Timeout bool
	Sent    bool
	Err     error
	outcome Outcome
}

// Outcome is unknown for a call that acts once its request was sent, not
// done before.
func (e *TransportError) Outcome() Outcome { return e.outcome }

func (e *TransportError) Error() string { return "gateway " + e.Op + ": " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// MalformedError is a reply that could not be understood (bad JSON, wrong
// content type, a failure status without an error list, a success without a
// required field). Status is the HTTP status of that reply.
type MalformedError struct {
	Op      string
	Status  int
	Err     error
	outcome Outcome
}

// Outcome is not done for a 4xx and, for a call that acts, unknown for any
// other status: the gateway may have acted and said so unreadably.
func (e *MalformedError) Outcome() Outcome { return e.outcome }

func (e *MalformedError) Error() string {
	return "gateway " + e.Op + ": malformed reply (HTTP " + strconv.Itoa(e.Status) + "): " + e.Err.Error()
}
func (e *MalformedError) Unwrap() error { return e.Err }

// RequestError is a call that could not be built (its body not encoded,
// its URL not valid); nothing was sent.
type RequestError struct {
	Op  string
	Err error
}

func (e *RequestError) Error() string    { return "gateway " + e.Op + ": " + e.Err.Error() }
func (e *RequestError) Unwrap() error    { return e.Err }
func (e *RequestError) Outcome() Outcome { return OutcomeNotDone }
