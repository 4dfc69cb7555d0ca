package operations

import (
	"context"
	"errors"
	"time"

	"github.com/legacybridge/soapbridge/internal/logctx"
	"github.com/legacybridge/soapbridge/operations/usage"
)

// Every entry of the bridge — the SOAP rows, pay-full-v2, pay-base-v2, the
// statement download, the return and notification callbacks, and the calls
// an adapter ends before the core (an unreadable SOAP request, one the
// access rules deny) — ends in one CallOutcome, emitted once by finish
// (or Unserved): the Observer (metrics, the status page) and the usage
// record both read it there, and nowhere else.

// UnknownOperation names a call whose operation could not be read (an
// unreadable SOAP request, an unknown operation): counted by the observer,
// not in the usage record (nothing of it names a merchant or a feature).
const UnknownOperation = "unknown"

// Result is how a call ended: one vocabulary for every entry.
type Result uint8

// Results.
const (
	ResultOK           Result = iota // answered as asked
	ResultRefused                    // refused after reading: a FAILED / CALL_FAILED reply, a 4xx page or answer
	ResultBadSignature               // refused: the signature (or a callback's token) does not verify
	ResultClientFault                // the adapter could not read the request (unreadable, unknown operation)
	ResultDenied                     // refused by the access rules (network, HTTP Basic)
	ResultRateLimited                // refused by the merchant's rate limit
	ResultServerError                // the bridge, the store or the gateway failed
)

var resultNames = [...]string{"ok", "refused", "bad_signature", "client_fault", "denied", "rate_limited", "server_error"}

func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return "server_error"
}

// ClientError tells whether the call failed by the caller's fault (what
// HTTP calls a 4xx): the one place that decides it.
func (r Result) ClientError() bool {
	switch r {
	case ResultRefused, ResultBadSignature, ResultClientFault, ResultDenied, ResultRateLimited:
		return true
	}
	return false
}

// usage is the result as the usage record counts it.
func (r Result) usage() usage.Result {
	switch r {
	case ResultOK:
		return usage.ResultOK
	case ResultClientFault:
		return usage.ResultClientFault
	case ResultDenied, ResultRateLimited:
		return usage.ResultDenied
	case ResultServerError:
		return usage.ResultServerFault
	}
	return usage.ResultRefused
}

// CallOutcome is what the Observer is told of each finished call, whatever
// its entry.
type CallOutcome struct {
	// Operation is the SOAP operation (a row's name, UnknownOperation for
	// a request the adapter could not read) or a usage.Flow* name.
	Operation string
	// Flow: a browser flow or HTTP service, not a SOAP operation.
	Flow bool
	// GoID is the configured merchant the call was for; 0 when it named
	// none the bridge knows (so that no client can grow a label set).
	GoID     int64
	Result   Result
	Duration time.Duration
}

// Observer is told of every call once it is finished (metrics, the status
// page's counts). It is called on the hot path: it must not block.
type Observer interface {
	// Observe is told of the call behind ctx: what ctx carries (the
	// configuration the call pinned) names the call's series.
	Observe(ctx context.Context, o CallOutcome)
}

// isFlow reports whether op is a browser flow's name.
func isFlow(op string) bool {
	for _, f := range usage.Flows {
		if f == op {
			return true
		}
	}
	return false
}

// startOf is when the adapter started reading the call (logctx.WithCall),
// so that its duration counts the reading too; else now.
func startOf(ctx context.Context) time.Time {
	if t, ok := logctx.Start(ctx); ok {
		return t
	}
	return time.Now()
}

// begin starts a call of op.
func (s *Service) begin(ctx context.Context, op string) *call {
	return &call{s: s, op: op, ctx: ctx, start: startOf(ctx)}
}

// finish is the end of every call the core runs: it tells the observer
// and adds the call to the usage record, once. What the request used of
// the legacy interface (in), the client and the adapter's features are
// recorded only for a verified call (a call that names no merchant, touch
// and paymentMethodList, has nothing to verify): an unverified one counts
// as its result for the merchant it names (or none), nothing more.
func (c *call) finish(result Result, in any) {
	s := c.s
	if s.observer != nil {
		o := CallOutcome{Operation: c.op, Flow: isFlow(c.op), Result: result, Duration: time.Since(c.start)}
		if c.known {
			o.GoID = c.m.GoID
		}
		s.observer.Observe(c.ctx, o)
	}
	if s.usage == nil || c.op == UnknownOperation {
		return
	}
	ev := usage.Event{Operation: c.op, Result: result.usage(), Client: usage.Client{Family: usage.FamilyNone}}
	if c.goid != nil {
		ev.GoID = *c.goid
	}
	if !c.verified && ev.GoID != 0 && (result == ResultRefused || result == ResultBadSignature) {
		// Refused before it was verified: anyone may have sent it. It is
		// counted as refused, and moves no merchant's last call or totals.
		ev.Result = usage.ResultUnverified
	}
	if c.verified {
		ev.Client = usage.ClientFrom(c.ctx)
		if _, none := in.(*noInput); !none && in != nil {
			ev.Features, ev.Retired = c.m.LegacyUses(c.op, in)
		}
		ev.Features = append(ev.Features, usage.FeaturesFrom(c.ctx)...)
	}
	s.usage.Record(c.ctx, ev)
}

// Unserved ends a call the adapter refused before the core ran it: a
// request it could not read (UnknownOperation, ResultClientFault), or one the
// access rules deny (ResultDenied, ResultRateLimited) for goid (0: none).
// It is counted with bounded labels, nothing else.
func (s *Service) Unserved(ctx context.Context, op string, goid int64, r Result) {
	c := s.begin(ctx, op)
	if goid != 0 {
		c.goid = &goid
		c.m, c.known = s.merchant(ctx, goid)
	}
	c.finish(r, nil)
}

// flowResult is the Result of a browser flow's error.
func flowResult(err error) Result {
	var (
		bp  *BadParamError
		um  *UnknownMerchantError
		re  *RequestError
		ref *RefusedError
	)
	switch {
	case err == nil:
		return ResultOK
	case errors.Is(err, ErrBadSignature):
		return ResultBadSignature
	case errors.As(err, &bp), errors.As(err, &um), errors.As(err, &re), errors.As(err, &ref),
		errors.Is(err, ErrUnknownPayment), errors.Is(err, ErrNoReturnURL):
		return ResultRefused
	}
	return ResultServerError
}
