package restbackend

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/legacybridge/soapbridge/internal/backoff"
)

// Retry policy of GETs (status, instruments). POSTs are never retried: a
// refund or capture must not happen twice. The only repeat of a POST is
// after a 401, which means the gateway did not act.
const (
	getAttempts = 3
)

// Reply caps per call kind. A JSON reply of the gateway is a few KiB; the
// cap keeps a misbehaving gateway or proxy from making the bridge hold
// tens of MiB per call. Statements are files and have their own cap
// (Config.MaxStatementSize).
const (
	MaxJSONReply            = 1 << 20
	DefaultMaxStatementSize = 64 << 20
)

// request is one REST call, relative to the API root.
type request struct {
	op          string // for errors and logs, e.g. "refund"
	method      string
	path        string
	contentType string // "" sends none
	body        []byte
	// acts: the call changes the gateway's state (moves money or creates a
	// payment). Its failures carry an outcome other than not-done, it does
	// not start without the REST timeout left before the caller's deadline.
	acts bool
	// limit caps the reply body; MaxJSONReply when zero.
	limit int64
	// stream: a successful reply's body is handed over unread (capped).
	stream bool
}

func (r *request) replyLimit() int64 {
	if r.limit > 0 {
		return r.limit
	}
	return MaxJSONReply
}

// reply is a complete HTTP reply, or for a streamed request a successful
// reply whose body is still to be read.
type reply struct {
	status int
	header http.Header
	body   []byte
	stream io.ReadCloser // stream requests only; the caller closes it
	buf    *[]byte       // the pooled buffer body is read into (release)
}

// replyBufs keeps the buffers replies are read into: a JSON reply is
// decoded into values of its own (decodePayment copies the body into one
// string, encoding/json copies every string), after which callJSON hands
// its buffer back (issue 28: some 0.7 KB of a paymentStatus). A reply
// whose body is handed on (AccountStatement) is never released.
var replyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledReply bounds the buffers kept: a large reply's goes to the
// collector.
const maxPooledReply = 16 << 10

// release zeroes the reply's buffer (a reply may carry a token or a
// payer's data) and hands it back. Nothing may use rep.body afterwards.
func (rep *reply) release() {
	bp := rep.buf
	if bp == nil {
		return
	}
	rep.buf, rep.body = nil, nil
	putReplyBuf(bp)
}

// putReplyBuf zeroes the buffer of bp and hands it back, unless it is too
// large to keep.
func putReplyBuf(bp *[]byte) {
	if cap(*bp) > maxPooledReply {
		return
	}
	clear((*bp)[:cap(*bp)])
	*bp = (*bp)[:0]
	replyBufs.Put(bp)
}

func (r *reply) ok() bool { return r.status >= 200 && r.status < 300 }

// validator is a reply type that knows its required fields.
type validator interface{ validate() error }

// jsonRequest is a JSON POST of v. HTML escaping is off so that URLs keep
// their "&" as the merchant wrote them.
func jsonRequest(op, path string, v any) (request, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return request{}, &RequestError{Op: op, Err: fmt.Errorf("encode request: %w", err)}
	}
	body := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return request{op: op, method: http.MethodPost, path: path, contentType: ctJSON, body: body}, nil
}

// withDeadline gives ctx the configured timeout unless it has a deadline.
func (c *Client) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.cfg.Timeout)
}

// callJSON runs r and decodes its JSON reply into out; check, when not nil,
// compares the decoded reply with the request (the payment asked about).
func (c *Client) callJSON(ctx context.Context, cr *Credentials, r *request, out validator, check func() error) error {
	rep, err := c.call(ctx, cr, r)
	if err != nil {
		return err
	}
	err = decodeReply(r, rep, out)
	rep.release() // out holds copies of what it read, nothing of the buffer
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(); err != nil {
			return &MalformedError{Op: r.op, Status: rep.status, Err: err, outcome: outcomeOf(r, true, rep.status)}
		}
	}
	return nil
}

// sameID checks that a reply is about the payment asked about.
func sameID(field string, got *int64, want int64) func() error {
	return func() error {
		if *got != want {
			return &MismatchError{Field: field, Want: want, Got: *got}
		}
		return nil
	}
}

// call runs r with a bearer token of cr and returns a successful reply. A
// 401 drops the token, fetches a fresh one and repeats the call once; GETs
// are retried on transport errors and 5xx with jittered backoff.
//
// Deadlines: each exchange is limited to Config.Timeout (sendBounded, or
// http.Client.Timeout for a streamed reply); a call that acts does not
// start when the caller's deadline is closer than Config.Timeout. Other
// calls are bounded as a whole (retries included) by the caller's deadline
// or Config.Timeout.
func (c *Client) call(ctx context.Context, cr *Credentials, r *request) (*reply, error) {
	cancel := func() {}
	if !r.acts {
		ctx, cancel = c.withDeadline(ctx)
	}
	rep, err := c.attempts(ctx, cr, r)
	if err == nil && rep.stream != nil {
		rep.stream = &closeThen{ReadCloser: rep.stream, then: cancel}
		return rep, nil
	}
	cancel()
	return rep, err
}

func (c *Client) attempts(ctx context.Context, cr *Credentials, r *request) (*reply, error) {
	if err := c.mayStart(ctx, r); err != nil {
		return nil, err
	}
	tok, err := c.tokenOf(ctx, cr, "")
	if err != nil {
		return nil, err
	}
	renewed := false
	failures := 0
	for attempt := 1; ; attempt++ {
		rep, err := c.sendBounded(ctx, r, c.bearerValue(tok), attempt)
		if err == nil && rep.status == http.StatusUnauthorized && !renewed {
			renewed = true
			if tok, err = c.tokenOf(ctx, cr, tok); err != nil {
				return nil, err
			}
			continue
		}
		if err == nil {
			if rep.ok() {
				return rep, nil
			}
			err = failure(r, rep)
		}
		failures++
		if r.method != http.MethodGet || failures >= getAttempts || !retryable(ctx, err) || !sleepBackoff(ctx, failures) {
			return nil, err
		}
	}
}

// tokenOf is a token of cr: the cached one, or after refused (the token
// the gateway refused, dropped first) a fresh one. Apart from attempts,
// whose frame is held while the gateway is awaited: the credentials'
// copies live here (issue 28).
//
//go:noinline
func (c *Client) tokenOf(ctx context.Context, cr *Credentials, refused string) (string, error) {
	key := c.tokenKey(*cr)
	if refused != "" {
		c.dropToken(key, refused)
	}
	return c.token(ctx, *cr, key)
}

// mayStart refuses a call that acts when the caller's deadline is closer
// than the REST timeout: the gateway could act after the caller gave up.
func (c *Client) mayStart(ctx context.Context, r *request) error {
	if !r.acts {
		return nil
	}
	dl, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	if left := time.Until(dl); left < c.cfg.Timeout {
		return &TransportError{Op: r.op, Timeout: true, Err: &NotStartedError{Left: left, Need: c.cfg.Timeout},
			outcome: OutcomeNotDone}
	}
	return nil
}

// sendBounded is send under the deadline rules of call: an acting call is
// checked again before each exchange (a token renewal takes time) and, when
// the caller set no deadline, gets Config.Timeout of its own.
func (c *Client) sendBounded(ctx context.Context, r *request, auth *bearerHeader, attempt int) (*reply, error) {
	if r.acts {
		if err := c.mayStart(ctx, r); err != nil {
			return nil, err
		}
	}
	if c.direct(r) {
		// What http.Client.Timeout did: the exchange, its reply read
		// whole, within Config.Timeout.
		if dl := time.Now().Add(c.cfg.Timeout); endsBefore(dl, ctx) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl)
			defer cancel()
		}
		return c.send(ctx, r, auth, attempt)
	}
	if !r.acts {
		return c.send(ctx, r, auth, attempt)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	return c.send(ctx, r, auth, attempt)
}

// send makes one HTTP exchange and reads its reply up to the call's cap.
// Any status is a reply; errors are transport failures and oversized
// replies. Whether the request left the bridge is taken from httptrace:
// once it is written, a failure is of unknown outcome for a call that acts.
func (c *Client) send(ctx context.Context, r *request, auth *bearerHeader, attempt int) (*reply, error) {
	req, st, endSpan, err := c.newRequest(ctx, r, auth)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rep, err := c.exchange(req.Context(), r, req, &st.sent)
	return c.settle(r, attempt, start, &st.sent, endSpan, rep, err)
}

// newRequest is the HTTP request of r, traced (whether it was written, and
// the exchange's span when tracing is on). Apart from send, whose frame is
// held while the gateway is awaited (issue 28).
//
//go:noinline
func (c *Client) newRequest(ctx context.Context, r *request, auth *bearerHeader) (*http.Request, *sendTrace, func(int, error), error) {
	var body io.Reader = http.NoBody
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	var endSpan func(int, error)
	if t := c.cfg.Tracer; t != nil {
		ctx, endSpan = t.StartExchange(ctx, r.op, r.method)
	}
	st := &sendTrace{}
	st.trace.WroteRequest = st.wroteRequest
	ctx = httptrace.WithClientTrace(ctx, &st.trace)
	req, err := http.NewRequestWithContext(ctx, r.method, c.base+r.path, body)
	if err != nil {
		if endSpan != nil {
			endSpan(0, err)
		}
		return nil, nil, nil, &RequestError{Op: r.op, Err: err}
	}
	if auth.get != nil && r.contentType == "" && c.direct(r) {
		// The token's header, shared: straight to the Client's own
		// transport, which never writes a request's header (a
		// RoundTripper must not), where http.Client (a cookie jar) or a
		// RoundTripper given in Config might. No map filled per request
		// (issue 28: some 380 bytes of a paymentStatus).
		req.Header = auth.get
		return req, st, endSpan, nil
	}
	// Canonical keys, shared values (headerValue): no copy per request.
	h := req.Header
	h["Accept"] = c.hdrAccept
	h["Accept-Language"] = c.hdrLang
	h["User-Agent"] = c.hdrUA
	switch r.contentType {
	case "":
	case ctJSON:
		h["Content-Type"] = hdrJSON
	case ctForm:
		h["Content-Type"] = hdrForm
	default:
		h["Content-Type"] = []string{r.contentType}
	}
	h["Authorization"] = auth.v
	return req, st, endSpan, nil
}

// settle reports an exchange (observer, span, debug log) and types its
// error. Apart from send so that send's frame stays small: send waits for
// the gateway, and every byte of the frames under that wait is held per
// call in flight (issue 28); the log fields of the cold paths live here.
//
//go:noinline
func (c *Client) settle(r *request, attempt int, start time.Time, sent *atomic.Bool, endSpan func(int, error), rep *reply, err error) (*reply, error) {
	if o := c.cfg.Observer; o != nil || endSpan != nil {
		status := 0
		if err == nil {
			status = rep.status
		} else {
			status = malformedStatus(err)
		}
		if o != nil {
			o.ObserveGateway(r.op, status, time.Since(start))
		}
		if endSpan != nil {
			endSpan(status, err)
		}
	}
	// Asked of the core, not through Check: zap's check has a frame of
	// over a KiB, which this path (under the handler's deepest frames)
	// must not need when the debug lines are off.
	debug := c.log.Core().Enabled(zapcore.DebugLevel)
	if err == nil {
		if debug {
			c.logExchange(r, attempt, start, sent, zap.Int("status", rep.status), nil)
		}
		return rep, nil
	}
	// The targets of errors.As live on the heap: declared here, they cost
	// nothing on the way of a reply.
	var me *MalformedError
	var te *TransportError
	switch {
	case errors.As(err, &me):
		if debug {
			c.logExchange(r, attempt, start, sent, zap.Int("status", me.Status), me)
		}
		return nil, me
	case errors.As(err, &te):
		if debug {
			c.logExchange(r, attempt, start, sent, zap.Bool("timeout", te.Timeout), te)
		}
		return nil, te
	default:
		return nil, err
	}
}

// logExchange writes the debug line of an exchange: "gateway call", or
// "gateway call failed" with err.
//
//go:noinline
func (c *Client) logExchange(r *request, attempt int, start time.Time, sent *atomic.Bool, last zap.Field, err error) {
	msg := "gateway call"
	if err != nil {
		msg = "gateway call failed"
	}
	ce := c.log.Check(zap.DebugLevel, msg)
	if ce == nil {
		return
	}
	fields := []zap.Field{
		zap.String("op", r.op), zap.String("method", r.method), zap.String("path", r.path),
		zap.Int("attempt", attempt), zap.Duration("duration", time.Since(start)), zap.Bool("sent", sent.Load()),
		last,
	}
	if err != nil {
		fields = append(fields, zap.Error(err))
	}
	ce.Write(fields...)
}

var hdrJSON, hdrForm = headerValue(ctJSON), headerValue(ctForm)

// sendTrace tells whether the request of one exchange was written (one
// allocation for the flag, the trace and its hook together).
type sendTrace struct {
	sent  atomic.Bool
	trace httptrace.ClientTrace
}

func (s *sendTrace) wroteRequest(i httptrace.WroteRequestInfo) {
	if i.Err == nil {
		s.sent.Store(true)
	}
}

// malformedStatus is the HTTP status a MalformedError carries, else 0.
func malformedStatus(err error) int {
	var me *MalformedError
	if errors.As(err, &me) {
		return me.Status
	}
	return 0
}

func (c *Client) exchange(ctx context.Context, r *request, req *http.Request, sent *atomic.Bool) (*reply, error) {
	var resp *http.Response
	var err error
	if c.direct(r) {
		resp, err = c.rt.RoundTrip(req)
		if err != nil {
			err = roundTripError(req, err)
		}
	} else {
		resp, err = c.hc.Do(req)
	}
	if err != nil {
		return nil, transportError(ctx, r, sent.Load(), 0, err)
	}
	return readResponse(ctx, r, resp)
}

// readResponse reads the reply of an exchange up to r's cap. Apart from
// exchange, whose frame is held while the gateway is awaited (issue 28).
//
//go:noinline
func readResponse(ctx context.Context, r *request, resp *http.Response) (*reply, error) {
	limit := r.replyLimit()
	tooLarge := func() error {
		return &MalformedError{Op: r.op, Status: resp.StatusCode,
			Err: fmt.Errorf("%w: over %d bytes", ErrReplyTooLarge, limit), outcome: outcomeOf(r, true, resp.StatusCode)}
	}
	if resp.ContentLength > limit {
		resp.Body.Close()
		return nil, tooLarge()
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if r.stream && ok {
		return &reply{status: resp.StatusCode, header: resp.Header,
			stream: &cappedBody{rc: resp.Body, left: limit, r: r, status: resp.StatusCode, ctx: ctx}}, nil
	}
	defer resp.Body.Close()
	bp := replyBufs.Get().(*[]byte)
	b, err := readReplyInto((*bp)[:0], resp.Body, resp.ContentLength, limit)
	if err != nil {
		putReplyBuf(bp) // what was read of this reply is dropped
		return nil, transportError(ctx, r, true, resp.StatusCode, err)
	}
	if int64(len(b)) > limit {
		putReplyBuf(bp) // what was read of this reply is dropped
		return nil, tooLarge()
	}
	*bp = b // the buffer b was read into, the pooled one or a larger one
	return &reply{status: resp.StatusCode, header: resp.Header, body: b, buf: bp}, nil
}

// direct tells whether r goes straight to the pooled transport: the
// http.Client around it would add nothing but frames and work. Its
// redirect policy hands a 3xx back as it is, as the transport does; it has
// no cookie jar and no credentials in the URL; its Timeout is the bound
// sendBounded puts on the exchange, and its error wrapping is done the
// same way in exchange. A streamed reply, read after the call returns,
// keeps the http.Client (its Timeout then bounds the reading). The frames
// matter: a call waiting for the gateway holds every one of them per call
// in flight, and the http.Client's (some 1.2 KiB) kept the handler's
// goroutine from fitting in 8 KiB of stack (issue 28).
func (c *Client) direct(r *request) bool { return c.rt != nil && !r.stream }

// endsBefore tells whether t is before ctx's deadline, or ctx has none.
func endsBefore(t time.Time, ctx context.Context) bool { //nolint:revive // reads as a sentence
	dl, ok := ctx.Deadline()
	return !ok || t.Before(dl)
}

// roundTripError is the error http.Client.Do returns for err of
// RoundTrip: a TLS record that is the start of an HTTP reply becomes
// http.ErrSchemeMismatch ("server gave HTTP response to HTTPS client", a
// gateway URL of https:// for a server that speaks plain HTTP), and the
// whole is a *url.Error. Not the suffix "(Client.Timeout exceeded while
// awaiting headers)" http.Client adds when its own Timeout fired: here the
// bound is a context deadline, and the error context.DeadlineExceeded (a
// timeout to TransportError as before). Apart from exchange, whose frame
// is held while the gateway is awaited (issue 28).
//
//go:noinline
func roundTripError(req *http.Request, err error) error {
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && string(rh.RecordHeader[:]) == "HTTP/" {
		err = http.ErrSchemeMismatch
	}
	return &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(), Err: err}
}

// urlErrorOp is the Op of the *url.Error http.Client.Do returns: "Get",
// "Post".
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	if lower := strings.ToLower(method); len(method) > 1 {
		return method[:1] + lower[1:]
	}
	return method
}

// readReply is io.ReadAll(io.LimitReader(r, limit+1)) with its buffer
// sized for the declared length (one byte more, so that the end is read
// without growing it): one allocation for a reply that says its length,
// where ReadAll starts at 512 bytes and grows.
func readReply(r io.Reader, declared, limit int64) ([]byte, error) {
	return readReplyInto(nil, r, declared, limit)
}

// readReplyInto is readReply reading into buf (its length ignored) when
// it holds the size readReply would allocate.
func readReplyInto(buf []byte, r io.Reader, declared, limit int64) ([]byte, error) {
	size := int64(512)
	if declared >= 0 && declared < limit {
		size = declared + 1
	}
	b := buf[:0]
	if int64(cap(b)) < size {
		b = make([]byte, 0, size)
	}
	for int64(len(b)) <= limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than declared: grow as ReadAll does
		}
		end := int64(cap(b))
		if end > limit+1 {
			end = limit + 1
		}
		n, err := r.Read(b[len(b):end])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF { //nolint:errorlint // as io.ReadAll: the reader's own EOF
				err = nil
			}
			return b, err
		}
	}
	return b, nil
}

// cappedBody is a streamed reply body that fails once it passes its cap,
// so an endless reply is an error and not an endless copy.
type cappedBody struct {
	rc     io.ReadCloser
	left   int64
	r      *request
	status int
	ctx    context.Context
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more tells an oversized body
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = 0
		return n, &MalformedError{Op: b.r.op, Status: b.status,
			Err: fmt.Errorf("%w: over the cap", ErrReplyTooLarge), outcome: outcomeOf(b.r, true, b.status)}
	}
	b.left -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, transportError(b.ctx, b.r, true, b.status, err)
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// closeThen runs then after closing (the cancel of the call's context).
type closeThen struct {
	io.ReadCloser
	then func()
}

func (c *closeThen) Close() error {
	err := c.ReadCloser.Close()
	c.then()
	return err
}

func transportError(ctx context.Context, r *request, sent bool, status int, err error) *TransportError {
	timeout := errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		timeout = true
	}
	return &TransportError{Op: r.op, Timeout: timeout, Sent: sent, Err: err, outcome: outcomeOf(r, sent, status)}
}

// failure turns a non-2xx reply into an APIError, or a MalformedError when
// it carries no error list.
func failure(r *request, rep *reply) error {
	o := outcomeOf(r, true, rep.status)
	var eb ErrorBody
	if err := json.Unmarshal(rep.body, &eb); err != nil {
		return &MalformedError{Op: r.op, Status: rep.status, Err: fmt.Errorf("failure without an error list: %w", err), outcome: o}
	}
	if len(eb.Errors) == 0 {
		return &MalformedError{Op: r.op, Status: rep.status, Err: errors.New("failure without an error list"), outcome: o}
	}
	return &APIError{Op: r.op, Status: rep.status, Body: eb, outcome: o}
}

// decodeReply decodes a successful JSON reply and checks its required
// fields. Nothing of the body goes into the error: it may hold a token.
func decodeReply(r *request, rep *reply, out validator) error {
	o := outcomeOf(r, true, rep.status)
	// The usual value is taken as it is: mime.ParseMediaType builds a map.
	if ct := rep.header.Get("Content-Type"); ct != "" && !strings.EqualFold(ct, "application/json") {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &MalformedError{Op: r.op, Status: rep.status, Err: fmt.Errorf("content type %q, want application/json", ct), outcome: o}
		}
	}
	if err := decodeJSON(rep.body, out); err != nil {
		return &MalformedError{Op: r.op, Status: rep.status, Err: err, outcome: o}
	}
	if err := out.validate(); err != nil {
		return &MalformedError{Op: r.op, Status: rep.status, Err: err, outcome: o}
	}
	return nil
}

// decodeJSON is json.Unmarshal, a Payment decoded by decodePayment when it
// can (every reply the sandbox makes, and the gateway's as recorded).
func decodeJSON(body []byte, out any) error {
	if p, ok := out.(*Payment); ok {
		if decodePayment(body, p) {
			return nil
		}
		*p = Payment{}
	}
	return json.Unmarshal(body, out)
}

// retryable tells whether a failed GET may be tried again: transport
// failures while time remains, and server failures (5xx). Never 4xx.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var te *TransportError
	var ae *APIError
	var me *MalformedError
	switch {
	case errors.As(err, &te):
		return true
	case errors.As(err, &ae):
		return ae.Status >= 500
	case errors.As(err, &me):
		return me.Status >= 500
	}
	return false
}

// getBackoff spaces the retries of a GET: 50 ms doubling, each wait drawn
// from the upper half so that parallel callers spread out.
var getBackoff = backoff.Policy{Base: 50 * time.Millisecond, Jitter: 0.5}

// sleepBackoff waits before retry n (1, 2, …), and false when the deadline
// would pass first.
func sleepBackoff(ctx context.Context, n int) bool {
	d := getBackoff.Delay(n)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
