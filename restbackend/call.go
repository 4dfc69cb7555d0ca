package restbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Retry policy of GETs (status, instruments). POSTs are never retried: a
// refund or capture must not happen twice. The only repeat of a POST is
// after a 401, which means the gateway did not act.
const (
	getAttempts  = 3
	backoffBase  = 50 * time.Millisecond
	maxReplySize = 64 << 20 // statements are files; anything larger is not ours
)

// request is one REST call, relative to the API root.
type request struct {
	op          string // for errors and logs, e.g. "refund"
	method      string
	path        string
	contentType string // "" sends none
	body        []byte
}

// reply is a complete HTTP reply.
type reply struct {
	status int
	header http.Header
	body   []byte
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
		return request{}, fmt.Errorf("restbackend: %s: encode request: %w", op, err)
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

// callJSON runs r and decodes its JSON reply into out.
func (c *Client) callJSON(ctx context.Context, cr Credentials, r request, out validator) error {
	rep, err := c.call(ctx, cr, r)
	if err != nil {
		return err
	}
	return decodeReply(r.op, rep, out)
}

// call runs r with a bearer token of cr and returns a successful reply. A
// 401 drops the token, fetches a fresh one and repeats the call once; GETs
// are retried on transport errors and 5xx with jittered backoff.
func (c *Client) call(ctx context.Context, cr Credentials, r request) (*reply, error) {
	ctx, cancel := c.withDeadline(ctx)
	defer cancel()
	key := c.tokenKey(cr)
	tok, err := c.token(ctx, cr, key)
	if err != nil {
		return nil, err
	}
	renewed := false
	failures := 0
	for attempt := 1; ; attempt++ {
		rep, err := c.send(ctx, r, "Bearer "+tok, attempt)
		if err == nil && rep.status == http.StatusUnauthorized && !renewed {
			renewed = true
			c.dropToken(key, tok)
			if tok, err = c.token(ctx, cr, key); err != nil {
				return nil, err
			}
			continue
		}
		if err == nil {
			if rep.ok() {
				return rep, nil
			}
			err = failure(r.op, rep)
		}
		failures++
		if r.method != http.MethodGet || failures >= getAttempts || !retryable(ctx, err) || !sleepBackoff(ctx, failures) {
			return nil, err
		}
	}
}

// send makes one HTTP exchange and reads the whole reply. Any status is a
// reply; errors are transport failures (and an oversized reply).
func (c *Client) send(ctx context.Context, r request, auth string, attempt int) (*reply, error) {
	var body io.Reader = http.NoBody
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.base+r.path, body)
	if err != nil {
		return nil, fmt.Errorf("restbackend: %s: %w", r.op, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Language", c.cfg.AcceptLanguage)
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	req.Header.Set("Authorization", auth)

	start := time.Now()
	rep, err := c.exchange(req)
	var me *MalformedError
	switch {
	case err == nil:
		if ce := c.log.Check(zap.DebugLevel, "gateway call"); ce != nil {
			ce.Write(append(callFields(r, attempt, start), zap.Int("status", rep.status))...)
		}
		return rep, nil
	case errors.As(err, &me):
		me.Op = r.op
		if ce := c.log.Check(zap.DebugLevel, "gateway call failed"); ce != nil {
			ce.Write(append(callFields(r, attempt, start), zap.Int("status", me.Status), zap.Error(me))...)
		}
		return nil, me
	default:
		terr := transportError(ctx, r.op, err)
		if ce := c.log.Check(zap.DebugLevel, "gateway call failed"); ce != nil {
			ce.Write(append(callFields(r, attempt, start), zap.Bool("timeout", terr.Timeout), zap.Error(terr))...)
		}
		return nil, terr
	}
}

// callFields describe one exchange in the debug log; built only when debug
// is on (each call would otherwise allocate them for nothing).
func callFields(r request, attempt int, start time.Time) []zap.Field {
	return []zap.Field{
		zap.String("op", r.op), zap.String("method", r.method), zap.String("path", r.path),
		zap.Int("attempt", attempt), zap.Duration("duration", time.Since(start)),
	}
}

func (c *Client) exchange(req *http.Request) (*reply, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReplySize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxReplySize {
		return nil, &MalformedError{Status: resp.StatusCode, Err: fmt.Errorf("reply larger than %d bytes", maxReplySize)}
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func transportError(ctx context.Context, op string, err error) *TransportError {
	timeout := errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		timeout = true
	}
	return &TransportError{Op: op, Timeout: timeout, Err: err}
}

// failure turns a non-2xx reply into an APIError, or a MalformedError when
// it carries no error list.
func failure(op string, rep *reply) error {
	var eb ErrorBody
	if err := json.Unmarshal(rep.body, &eb); err != nil {
		return &MalformedError{Op: op, Status: rep.status, Err: fmt.Errorf("failure without an error list: %w", err)}
	}
	if len(eb.Errors) == 0 {
		return &MalformedError{Op: op, Status: rep.status, Err: errors.New("failure without an error list")}
	}
	return &APIError{Op: op, Status: rep.status, Body: eb}
}

// decodeReply decodes a successful JSON reply and checks its required
// fields. Nothing of the body goes into the error: it may hold a token.
func decodeReply(op string, rep *reply, out validator) error {
	if ct := rep.header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &MalformedError{Op: op, Status: rep.status, Err: fmt.Errorf("content type %q, want application/json", ct)}
		}
	}
	if err := json.Unmarshal(rep.body, out); err != nil {
		return &MalformedError{Op: op, Status: rep.status, Err: err}
	}
	if err := out.validate(); err != nil {
		return &MalformedError{Op: op, Status: rep.status, Err: err}
	}
	return nil
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

// sleepBackoff waits before retry n (1, 2, …): exponential with jitter, and
// false when the deadline would pass first.
func sleepBackoff(ctx context.Context, n int) bool {
	d := backoffBase << (n - 1)
	d = d/2 + rand.N(d/2+1)
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
