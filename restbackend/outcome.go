package restbackend

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Outcome is what a failed or successful gateway call did to the gateway's
// state. It matters for the calls that move money (create payment, refund,
// capture, the voids, create recurrence): the bridge must know whether to
// answer "done", "refused" or "cannot tell" before it answers an e-shop
// that may retry.
type Outcome int

const (
	// OutcomeDone: the gateway replied, and its reply (checked against the
	// request) says what it did. Only a nil error is done.
	OutcomeDone Outcome = iota
	// OutcomeNotDone: the gateway did not act. Either it refused (a 4xx
	// reply) or the request never left the bridge (dial refused, DNS, TLS,
	// the token call failed, the deadline was too close to start, the
	// request could not be built). A retry may act. Every failure of a call
	// that moves no money (GETs, token, statement) is not done as well.
	OutcomeNotDone
	// OutcomeUnknown: the request was sent and no usable reply came back
	// (reset or EOF after writing, a timeout after writing, a truncated,
	// malformed or oversized body, a 5xx or proxy 502, a redirect, a reply
	// about another payment). The gateway may or may not have acted; the
	// caller must reconcile (read the status) before answering, and must not
	// simply repeat the call.
	OutcomeUnknown
)

func (o Outcome) String() string {
	switch o {
	case OutcomeDone:
		return "done"
	case OutcomeNotDone:
		return "not done"
	case OutcomeUnknown:
		return "unknown"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// OutcomeOf classifies the error of a Client call. Every error the Client
// returns carries its outcome (see the error types); any other non-nil
// error is unknown, the safe answer.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return OutcomeDone
	}
	var o interface{ Outcome() Outcome }
	if errors.As(err, &o) {
		return o.Outcome()
	}
	return OutcomeUnknown
}

// ErrReplyTooLarge is wrapped by the error of a reply longer than the cap of
// its call kind (MaxJSONReply, Config.MaxStatementSize).
var ErrReplyTooLarge = errors.New("reply too large")

// NotStartedError is a call that moves money and was not started because
// its context had less time left than the client's REST timeout: had it
// started, the gateway could have acted after the caller gave up. Its
// outcome is not done. It is wrapped in a TransportError with Timeout set,
// so callers that only know TransportError treat it as an outage.
type NotStartedError struct {
	Left time.Duration // time left on the context
	Need time.Duration // Config.Timeout
}

func (e *NotStartedError) Error() string {
	return fmt.Sprintf("not sent: %s left before the deadline, a gateway call needs %s",
		e.Left.Round(time.Millisecond), e.Need)
}

// MismatchError is a successful reply about another payment than the one
// asked about (or a recurrence child of another parent). It is wrapped in a
// MalformedError; for a call that moves money its outcome is unknown, never
// a success.
type MismatchError struct {
	Field string // "id" or "parent_id"
	Want  int64
	Got   int64
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("reply %s %d, asked about %d", e.Field, e.Got, e.Want)
}

// outcomeOf tells the outcome of a failure of a call r that the gateway
// answered with status (0: no reply), given whether the request was sent.
func outcomeOf(r *request, sent bool, status int) Outcome {
	switch {
	case !r.acts:
		return OutcomeNotDone
	case status >= 400 && status < 500:
		return OutcomeNotDone // refused
	case status != 0:
		return OutcomeUnknown // 2xx unusable, 3xx, 5xx
	case sent:
		return OutcomeUnknown
	}
	return OutcomeNotDone
}
