package operations

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	id     int64  // the payment acted on (parent for a recurrence, 0 for a create)
	signed string // what the request's signature verified (SignedDigest): the ledger key
	// act performs the call. nil error: done. A *refusal or *ServerError:
	// the bridge decided before any POST (not done). Any other error is the
	// REST client's, sorted by restbackend.OutcomeOf. An act whose
	// reconciliation needs a baseline records it with setBaseline before
	// its POST.
	act func(ctx context.Context) (store.CallRecord, error)
	// reconcile reads the gateway after an unknown outcome and tells what
	// happened; it may use baseline. nil: nothing can be read.
	reconcile func(ctx context.Context) (store.CallRecord, restbackend.Outcome)
	baseline  string
	// needsBaseline: act always persists a baseline before its POST, so an
	// entry without one never reached the gateway.
	needsBaseline bool
	// doubtWindow, when set, releases an unsettled entry that old for a
	// new call: for a create, which moves no money, so that a lost reply
	// does not block the e-shop's order for the whole replay window.
	doubtWindow time.Duration
	// replayable tells whether a done record may still be replayed
	// (nil: always). false releases the entry and the call acts again.
	replayable func(ctx context.Context, rec store.CallRecord) bool

	setBaseline func(ctx context.Context, b string) error // set by once
}

// baselineMark precedes the baseline in the note of a ledger entry.
const baselineMark = " baseline="

// pendingStale is how long past the call deadline a pending entry is taken
// for a call whose process died: then a repeat reconciles it. It is also
// the least the replay window must exceed beyond the call deadline.
const pendingStale = 30 * time.Second

// MinReplayWindow is what a merchant's replay window must exceed under a
// call deadline: a repeat of a call still under way, or of one whose
// process died and whose entry is not yet stale, must find its entry.
func MinReplayWindow(callDeadline time.Duration) time.Duration { return callDeadline + pendingStale }

// ledgerTimeout bounds each ledger write. The writes run detached from the
// call's context: a call whose deadline passed during its POST must still
// record what happened.
const ledgerTimeout = 5 * time.Second

// createDoubtWindow is how long a createPayment whose reply was lost (or
// whose process died) blocks a repeat: then the repeat creates a new
// payment. The unconfirmed one was never shown to a customer and lapses.
const createDoubtWindow = 5 * time.Minute

// once runs c at most once per ledger key within the merchant's replay
// window. A repeat of a done call gets its record without reaching the
// gateway; a repeat of an in-doubt call (or one whose process died)
// reconciles, whatever its age; a repeat while the first is under way is
// refused. The error is a *refusal or a *ServerError.
func (s *Service) once(ctx context.Context, c *moneyCall) (store.CallRecord, error) {
	key := store.CallKey{GoID: c.m.GoID, Operation: c.op, Hash: store.RequestHash(c.op, c.signed)}
	log := s.logFor(ctx).WithLazy(zap.String("op", c.op), zap.Int64("goid", c.m.GoID), zap.Int64("payment", c.id))
	for range 3 {
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
			if c.replayable != nil && !c.replayable(ctx, call.CallRecord) {
				log.Info("recorded call no longer replayable; acting again", zap.Int64("result_payment", call.PaymentID))
				lctx, cancel := s.ledgerContext(ctx)
				s.finish(log, "released", s.ledger.ReleaseCall(lctx, key, call.Claim))
				cancel()
				continue
			}
			log.Info("repeated call answered from the ledger", zap.Int64("result_payment", call.PaymentID), zap.String("result", call.Result))
			return call.CallRecord, nil
		case store.CallPending:
			if s.now().Sub(call.UpdatedAt) < s.callDeadline+pendingStale {
				log.Info("repeated call refused: the first is in progress")
				return store.CallRecord{}, errInProgress
			}
			log.Warn("pending ledger entry outlived its call; reconciling")
		}
		if c.doubtWindow > 0 && s.now().Sub(call.UpdatedAt) >= c.doubtWindow {
			log.Info("unsettled entry released after its doubt window: the call moves no money")
			s.notDone(ctx, log, key, call.Claim)
			continue
		}
		i := strings.LastIndex(call.Note, baselineMark)
		if i >= 0 {
			c.baseline = call.Note[i+len(baselineMark):]
		}
		var rec store.CallRecord
		out := restbackend.OutcomeUnknown
		if c.needsBaseline && i < 0 && call.State == store.CallPending {
			// The baseline precedes the POST: without one, none was sent.
			out = restbackend.OutcomeNotDone
		} else {
			rec, out = s.reconcile(ctx, c)
		}
		switch out {
		case restbackend.OutcomeDone:
			log.Info("in-doubt call reconciled: the gateway acted", zap.String("result", rec.Result))
			s.done(ctx, log, key, call.Claim, rec)
			return rec, nil
		case restbackend.OutcomeNotDone:
			log.Info("in-doubt call reconciled: the gateway did not act; acting now")
			s.notDone(ctx, log, key, call.Claim)
			continue
		}
		log.Warn("repeated call still in doubt")
		return store.CallRecord{}, errOutcomeUnknown
	}
	return store.CallRecord{}, errInProgress
}

// act performs a claimed call and records its outcome.
func (s *Service) act(ctx context.Context, log *zap.Logger, key store.CallKey, claim string, c *moneyCall) (rec store.CallRecord, err error) {
	c.setBaseline = func(ctx context.Context, b string) error {
		lctx, cancel := s.ledgerContext(ctx)
		defer cancel()
		if err := s.ledger.SetNote(lctx, key, claim, "before the gateway call"+baselineMark+b, s.now()); err != nil {
			log.Error("baseline not recorded; the call is not attempted", zap.Error(err))
			return serverError("session store unavailable")
		}
		c.baseline = b
		return nil
	}
	defer func() {
		// A panic may come after the POST: the entry stays in doubt (not
		// pending until it goes stale) and a repeat reconciles.
		if p := recover(); p != nil {
			s.inDoubt(ctx, log, key, claim, c, fmt.Sprint("panic: ", p))
			panic(p)
		}
	}()
	rec, err = c.act(ctx)
	if err == nil {
		s.settle(ctx, log, key, claim, rec)
		return rec, nil
	}
	var r *refusal
	var se *ServerError
	if errors.As(err, &r) || errors.As(err, &se) {
		s.notDone(ctx, log, key, claim)
		return store.CallRecord{}, err
	}
	if restbackend.OutcomeOf(err) == restbackend.OutcomeNotDone {
		s.notDone(ctx, log, key, claim)
		var ns *restbackend.NotStartedError
		if errors.As(err, &ns) {
			log.Warn("gateway call not attempted: too little time left", zap.Error(err))
			return store.CallRecord{}, notAttempted()
		}
		return store.CallRecord{}, s.gatewayFailed(ctx, c.op, c.m.GoID, c.id, err)
	}
	// Unknown: sent without a usable reply, or an error that is not the
	// REST client's (taken as unknown, never as not done).
	log.Warn("gateway call sent, no usable reply: reconciling", zap.Error(err))
	rec, out := s.reconcile(ctx, c)
	switch out {
	case restbackend.OutcomeDone:
		log.Info("reconciled: the gateway acted", zap.String("result", rec.Result))
		s.settle(ctx, log, key, claim, rec)
		return rec, nil
	case restbackend.OutcomeNotDone:
		log.Info("reconciled: the gateway did not act")
		s.notDone(ctx, log, key, claim)
		return store.CallRecord{}, errNotDone
	}
	log.Warn("outcome unknown; the call stays in doubt")
	s.inDoubt(ctx, log, key, claim, c, "no usable reply: "+err.Error())
	return store.CallRecord{}, errOutcomeUnknown
}

// reconcile runs c's reconciliation on a context of its own when the
// call's has too little left: a POST that timed out near the deadline
// would leave none, and the status or history read is what tells the
// e-shop what happened.
func (s *Service) reconcile(ctx context.Context, c *moneyCall) (store.CallRecord, restbackend.Outcome) {
	if c.reconcile == nil {
		return store.CallRecord{}, restbackend.OutcomeUnknown
	}
	reserve := s.gw.Timeout()
	if dl, ok := ctx.Deadline(); ctx.Err() == nil && (!ok || time.Until(dl) >= reserve) {
		return c.reconcile(ctx)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reserve)
	defer cancel()
	return c.reconcile(rctx)
}

func (s *Service) ledgerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), ledgerTimeout)
}

// settle records a known result: a success as done (replayed to repeats),
// a FAILED one released, so that a legitimate retry may act.
func (s *Service) settle(ctx context.Context, log *zap.Logger, key store.CallKey, claim string, rec store.CallRecord) {
	if rec.Result == Failed {
		s.notDone(ctx, log, key, claim)
		return
	}
	s.done(ctx, log, key, claim, rec)
}

func (s *Service) done(ctx context.Context, log *zap.Logger, key store.CallKey, claim string, rec store.CallRecord) {
	lctx, cancel := s.ledgerContext(ctx)
	defer cancel()
	s.finish(log, "done", s.ledger.CallDone(lctx, key, claim, rec, s.now()))
}

func (s *Service) notDone(ctx context.Context, log *zap.Logger, key store.CallKey, claim string) {
	lctx, cancel := s.ledgerContext(ctx)
	defer cancel()
	s.finish(log, "not done", s.ledger.CallNotDone(lctx, key, claim))
}

func (s *Service) inDoubt(ctx context.Context, log *zap.Logger, key store.CallKey, claim string, c *moneyCall, why string) {
	note := clipNote(why, 200)
	if c.baseline != "" {
		note += baselineMark + c.baseline
	}
	lctx, cancel := s.ledgerContext(ctx)
	defer cancel()
	s.finish(log, "in doubt", s.ledger.CallInDoubt(lctx, key, claim, note, s.now()))
}

// finish logs a ledger update that failed: the answer stands (it says what
// the gateway did), a repeat then finds the entry pending or in doubt and
// reconciles.
func (s *Service) finish(log *zap.Logger, what string, err error) {
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

// refundBaselineOf is the baseline of a refund of amount: the ids of the
// refunds of that amount already in the history, in any state. Counting
// them instead would take another refund of the same amount for this one,
// and a refund that failed since for one that did not happen.
func refundBaselineOf(hist []restbackend.Refund, amount int64) string {
	ids := make([]string, 0, len(hist))
	for _, r := range hist {
		if r.Amount == amount {
			ids = append(ids, strconv.FormatInt(r.ID, 10))
		}
	}
	return fmt.Sprintf("ids:%d:%s", amount, strings.Join(ids, ","))
}

// refundOutcome tells from the history whether the refund of baseline
// happened: done when exactly one new refund of its amount appeared, not
// done when none did, unknown when more did (refunds of one payment are
// serialised by lockRefunds, but the gateway may still be finishing an
// earlier one) or the baseline is not readable.
func refundOutcome(baseline string, hist []restbackend.Refund) (string, restbackend.Outcome) {
	rest, ok := strings.CutPrefix(baseline, "ids:")
	amountText, idsText, ok2 := strings.Cut(rest, ":")
	amount, err := strconv.ParseInt(amountText, 10, 64)
	if !ok || !ok2 || err != nil {
		return "", restbackend.OutcomeUnknown
	}
	seen := map[string]bool{}
	for _, id := range strings.Split(idsText, ",") {
		seen[id] = true
	}
	var fresh []restbackend.Refund
	for _, r := range hist {
		if r.Amount == amount && !seen[strconv.FormatInt(r.ID, 10)] {
			fresh = append(fresh, r)
		}
	}
	switch {
	case len(fresh) == 0:
		return "", restbackend.OutcomeNotDone
	case len(fresh) > 1:
		return "", restbackend.OutcomeUnknown
	}
	switch fresh[0].State {
	case restbackend.RefundSucceeded:
		return restbackend.ResultFinished, restbackend.OutcomeDone
	case restbackend.RefundFailed:
		return restbackend.ResultFailed, restbackend.OutcomeDone
	}
	return restbackend.ResultAccepted, restbackend.OutcomeDone // under way: its money is committed
}

// refundBaseline reads the refund history of id before a refund of amount
// and returns its baseline (refundBaselineOf).
func (s *Service) refundBaseline(ctx context.Context, m Merchant, id, amount int64) (string, error) {
	hist, err := s.gw.RefundHistory(ctx, m.Credentials(), id)
	if err != nil {
		return "", err
	}
	return refundBaselineOf(hist, amount), nil
}

// refundCheck reconciles a refund by c.baseline (refundOutcome).
func (s *Service) refundCheck(m Merchant, id int64, c *moneyCall) func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
	return func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
		hist, err := s.gw.RefundHistory(ctx, m.Credentials(), id)
		if err != nil {
			s.logFor(ctx).Warn("reconciliation: refund history not readable", zap.Int64("payment", id), zap.Error(err))
			return store.CallRecord{}, restbackend.OutcomeUnknown
		}
		res, out := refundOutcome(c.baseline, hist)
		if out != restbackend.OutcomeDone {
			return store.CallRecord{}, out
		}
		return resultRecord(id, &restbackend.Result{ID: id, Result: res}), out
	}
}

// refundLock is the ledger operation of the per-payment refund lock.
const refundLock = "refund-lock"

// lockRefunds serialises the refunds of payment id across processes, so
// that a refund's reconciliation sees no other refund appear beside it.
// The lock is a pending ledger entry; one left by a dead process is taken
// over once it outlived a call.
func (s *Service) lockRefunds(ctx context.Context, m Merchant, id int64) (unlock func(), err error) {
	key := store.CallKey{GoID: m.GoID, Operation: refundLock, Hash: strconv.FormatInt(id, 10)}
	for range 2 {
		call, claimed, err := s.ledger.ClaimCall(ctx, key, s.now(), MinReplayWindow(s.callDeadline))
		if err != nil {
			s.logFor(ctx).Error("refund lock not taken; the refund is not attempted", zap.Int64("payment", id), zap.Error(err))
			return nil, serverError("session store unavailable")
		}
		if claimed {
			return func() {
				lctx, cancel := s.ledgerContext(ctx)
				defer cancel()
				if err := s.ledger.CallNotDone(lctx, key, call.Claim); err != nil {
					s.logFor(ctx).Error("refund lock not released", zap.Int64("payment", id), zap.Error(err))
				}
			}, nil
		}
		if s.now().Sub(call.CreatedAt) < s.callDeadline+pendingStale {
			break
		}
		_ = s.ledger.CallNotDone(ctx, key, call.Claim) // stale: its holder died
	}
	return nil, serverError("another refund of this payment is in progress: nothing was done, retry when it has finished")
}
