package operations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// DefaultCallDeadline bounds a whole legacy call when Config.CallDeadline
// is zero: under the 60 s a legacy client waits at most (PHP's
// default_socket_timeout, the bridge's write timeout).
const DefaultCallDeadline = 25 * time.Second

// Answers of a money-moving call whose result the bridge cannot give. Each
// is a Server fault: legacy clients take a fault as "try again later", and
// each message says what a retry does.
var (
	errOutcomeUnknown = serverError("outcome unknown: read paymentStatus before retrying")
	errInProgress     = serverError("a call with the same request is in progress: read paymentStatus, then retry if needed")
	errNotDone        = serverError("payment gateway unavailable")
)

// notAttempted answers a POST the REST client did not start because too
// little of the call deadline was left (restbackend.NotStartedError).
// Nothing was done, so a retry may act; a Server fault rather than a FAILED
// result, since a FAILED refund or capture reads as final to a shop.
func notAttempted() *ServerError {
	return serverError("not attempted: too little time was left before the call deadline to reach the payment gateway; nothing was done, the call may be retried")
}

// CallDeadline is the deadline the adapters give each legacy call.
func (s *Service) CallDeadline() time.Duration { return s.callDeadline }

// bound gives ctx the call deadline unless it already ends sooner: the
// core's entry points that move money apply it themselves, so that a
// caller that detached ctx (context.WithoutCancel drops the deadline) is
// still bounded.
func (s *Service) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.callDeadline)
}

// moneyCall is one money-moving call run under the ledger (see once).
type moneyCall struct {
	op     string // ledger operation
	m      Merchant
	id     int64    // the payment acted on (parent for a recurrence, 0 for a create)
	fields []string // the signed request fields: the ledger key
	// act performs the call. nil error: done. A *refusal or *ServerError:
	// the bridge decided before any POST (not done). Any other error is the
	// REST client's, sorted by restbackend.OutcomeOf.
	act func(ctx context.Context) (store.CallRecord, error)
	// reconcile reads the gateway after an unknown outcome and tells what
	// happened; it may use baseline, which act sets before its POST and the
	// ledger keeps while the call is in doubt. nil: nothing can be read.
	reconcile func(ctx context.Context) (store.CallRecord, restbackend.Outcome)
	baseline  string
}

// baselineMark precedes the baseline in the note of an in-doubt entry.
const baselineMark = " baseline="

// pendingStale is how long past the call deadline a pending entry is taken
// for a call whose process died: then a repeat reconciles it.
const pendingStale = 30 * time.Second

// once runs c at most once per ledger key within the merchant's replay
// window. A repeat of a done call gets its record without reaching the
// gateway; a repeat of an in-doubt call (or one whose process died)
// reconciles; a repeat while the first is under way is refused. The error
// is a *refusal or a *ServerError.
func (s *Service) once(ctx context.Context, c *moneyCall) (store.CallRecord, error) {
	key := store.CallKey{GoID: c.m.GoID, Operation: c.op, Hash: store.RequestHash(c.fields...)}
	log := s.logFor(ctx).WithLazy(zap.String("op", c.op), zap.Int64("goid", c.m.GoID), zap.Int64("payment", c.id))
	for range 2 {
		call, claimed, err := s.ledger.ClaimCall(ctx, key, s.now(), c.m.ReplayWindow)
		if err != nil {
			log.Error("ledger claim failed; the call is not attempted", zap.Error(err))
			return store.CallRecord{}, serverError("session store unavailable")
		}
		if claimed {
			return s.act(ctx, log, key, call.Claim, c)
		}
		switch call.State {
		case store.CallDone:
			log.Info("repeated call answered from the ledger", zap.Int64("result_payment", call.PaymentID), zap.String("result", call.Result))
			return call.CallRecord, nil
		case store.CallPending:
			if s.now().Sub(call.UpdatedAt) < s.callDeadline+pendingStale {
				log.Info("repeated call refused: the first is in progress")
				return store.CallRecord{}, errInProgress
			}
			log.Warn("pending ledger entry outlived its call; reconciling")
		}
		if i := strings.LastIndex(call.Note, baselineMark); i >= 0 {
			c.baseline = call.Note[i+len(baselineMark):]
		}
		rec, out := s.reconcile(ctx, c)
		switch out {
		case restbackend.OutcomeDone:
			log.Info("in-doubt call reconciled: the gateway acted", zap.String("result", rec.Result))
			s.finish(ctx, log, "done", s.ledger.CallDone(ctx, key, call.Claim, rec))
			return rec, nil
		case restbackend.OutcomeNotDone:
			log.Info("in-doubt call reconciled: the gateway did not act; acting now")
			s.finish(ctx, log, "not done", s.ledger.CallNotDone(ctx, key, call.Claim))
			continue
		}
		log.Warn("repeated call still in doubt")
		return store.CallRecord{}, errOutcomeUnknown
	}
	return store.CallRecord{}, errInProgress
}

// act performs a claimed call and records its outcome.
func (s *Service) act(ctx context.Context, log *zap.Logger, key store.CallKey, claim string, c *moneyCall) (store.CallRecord, error) {
	rec, err := c.act(ctx)
	if err == nil {
		s.finish(ctx, log, "done", s.ledger.CallDone(ctx, key, claim, rec))
		return rec, nil
	}
	var r *refusal
	var se *ServerError
	if errors.As(err, &r) || errors.As(err, &se) {
		s.finish(ctx, log, "not done", s.ledger.CallNotDone(ctx, key, claim))
		return store.CallRecord{}, err
	}
	switch restbackend.OutcomeOf(err) {
	case restbackend.OutcomeNotDone:
		s.finish(ctx, log, "not done", s.ledger.CallNotDone(ctx, key, claim))
		var ns *restbackend.NotStartedError
		if errors.As(err, &ns) {
			log.Warn("gateway call not attempted: too little time left", zap.Error(err))
			return store.CallRecord{}, notAttempted()
		}
		return store.CallRecord{}, s.gatewayFailed(ctx, c.op, c.m.GoID, c.id, err)
	case restbackend.OutcomeDone: // not an error of the REST client
		s.finish(ctx, log, "not done", s.ledger.CallNotDone(ctx, key, claim))
		log.Error("operation failed", zap.Error(err))
		return store.CallRecord{}, serverError("internal error")
	}
	log.Warn("gateway call sent, no usable reply: reconciling", zap.Error(err))
	rec, out := s.reconcile(ctx, c)
	switch out {
	case restbackend.OutcomeDone:
		log.Info("reconciled: the gateway acted", zap.String("result", rec.Result))
		s.finish(ctx, log, "done", s.ledger.CallDone(ctx, key, claim, rec))
		return rec, nil
	case restbackend.OutcomeNotDone:
		log.Info("reconciled: the gateway did not act")
		s.finish(ctx, log, "not done", s.ledger.CallNotDone(ctx, key, claim))
		return store.CallRecord{}, errNotDone
	}
	note := "no usable reply: " + err.Error()
	if c.baseline != "" {
		note = clipNote(note, 200) + baselineMark + c.baseline
	}
	log.Warn("outcome unknown; the call stays in doubt")
	s.finish(ctx, log, "in doubt", s.ledger.CallInDoubt(ctx, key, claim, note))
	return store.CallRecord{}, errOutcomeUnknown
}

func (s *Service) reconcile(ctx context.Context, c *moneyCall) (store.CallRecord, restbackend.Outcome) {
	if c.reconcile == nil {
		return store.CallRecord{}, restbackend.OutcomeUnknown
	}
	return c.reconcile(ctx)
}

// finish logs a ledger update that failed: the answer stands (it says what
// the gateway did), a repeat then finds the entry pending or in doubt and
// reconciles.
func (s *Service) finish(ctx context.Context, log *zap.Logger, what string, err error) {
	if err != nil {
		log.Error("ledger update failed", zap.String("to", what), zap.Error(err))
	}
}

func clipNote(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// resultRecord is the ledger record of an operation result about id.
func resultRecord(id int64, res *restbackend.Result) store.CallRecord {
	rec := store.CallRecord{PaymentID: id}
	switch res.Result {
	case restbackend.ResultFinished:
		rec.Result = Finished
	case restbackend.ResultAccepted:
		rec.Result = accepted
	case restbackend.ResultFailed:
		rec.Result, rec.Description = Failed, "the payment gateway answered FAILED"
	default:
		rec.Result, rec.Description = Failed, "the payment gateway answered an unknown result "+strings.ToValidUTF8(res.Result, "?")
	}
	return rec
}

// stateCheck reconciles an operation on payment id by its state: done
// when done says so, not done when notDone does, unknown otherwise (or when
// the status cannot be read).
func (s *Service) stateCheck(m Merchant, id int64, done, notDone func(p *restbackend.Payment) bool) func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
	return func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
		p, err := s.gw.PaymentStatus(ctx, m.Credentials(), id)
		if err != nil {
			s.logFor(ctx).Warn("reconciliation: status not readable", zap.Int64("payment", id), zap.Error(err))
			return store.CallRecord{}, restbackend.OutcomeUnknown
		}
		switch {
		case done(p):
			return store.CallRecord{PaymentID: id, Result: Finished}, restbackend.OutcomeDone
		case notDone(p):
			return store.CallRecord{}, restbackend.OutcomeNotDone
		}
		return store.CallRecord{}, restbackend.OutcomeUnknown
	}
}

func stateIn(states ...string) func(p *restbackend.Payment) bool {
	return func(p *restbackend.Payment) bool {
		for _, st := range states {
			if p.State == st {
				return true
			}
		}
		return false
	}
}

// refundsOf counts the refunds of amount in hist that did not fail.
func refundsOf(hist []restbackend.Refund, amount int64) (n int, last restbackend.Refund) {
	for _, r := range hist {
		if r.Amount == amount && r.State != restbackend.RefundFailed {
			n++
			last = r
		}
	}
	return n, last
}

// refundBaseline reads the refund history of id before a refund of amount
// and returns the baseline: "amount:count of such refunds".
func (s *Service) refundBaseline(ctx context.Context, m Merchant, id, amount int64) (string, error) {
	hist, err := s.gw.RefundHistory(ctx, m.Credentials(), id)
	if err != nil {
		return "", err
	}
	n, _ := refundsOf(hist, amount)
	return fmt.Sprintf("%d:%d", amount, n), nil
}

// refundCheck reconciles a refund of c.baseline's amount: done when the
// history holds more refunds of that amount than before the POST.
func (s *Service) refundCheck(m Merchant, id int64, c *moneyCall) func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
	return func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
		var amount int64
		var before int
		if _, err := fmt.Sscanf(c.baseline, "%d:%d", &amount, &before); err != nil {
			return store.CallRecord{}, restbackend.OutcomeUnknown
		}
		hist, err := s.gw.RefundHistory(ctx, m.Credentials(), id)
		if err != nil {
			s.logFor(ctx).Warn("reconciliation: refund history not readable", zap.Int64("payment", id), zap.Error(err))
			return store.CallRecord{}, restbackend.OutcomeUnknown
		}
		n, last := refundsOf(hist, amount)
		if n > before {
			res := restbackend.ResultAccepted // a refund still under way has its money committed
			if last.State == restbackend.RefundSucceeded {
				res = restbackend.ResultFinished
			}
			return resultRecord(id, &restbackend.Result{ID: id, Result: res}), restbackend.OutcomeDone
		}
		return store.CallRecord{}, restbackend.OutcomeNotDone
	}
}
