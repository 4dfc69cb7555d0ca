package operations

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// DefaultCallDeadline bounds a whole legacy call when Config.CallDeadline
// is zero and the REST timeout is under it: under the 60 s a legacy client
// waits at most (PHP's default_socket_timeout, the bridge's write timeout).
// CallDeadlineFor is the whole rule.
const DefaultCallDeadline = 25 * time.Second

// CallDeadlineFor is the default call deadline with REST timeout rest, the
// one rule for it: DefaultCallDeadline, or past a REST timeout that long,
// rest plus half of it (room for the reads before a POST and the
// reconciliation after it).
func CallDeadlineFor(rest time.Duration) time.Duration {
	if DefaultCallDeadline > rest {
		return DefaultCallDeadline
	}
	return rest + DefaultCallDeadline/2
}

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

// CallDeadline is the deadline of each legacy call.
func (s *Service) CallDeadline() time.Duration { return s.callDeadline }

// CallContext is the context a legacy call runs under: detached from the
// client's connection (a client that hangs up must not cut a gateway call
// short: a POST aborted midway has an unknown outcome, and the session
// write after it must still happen) and bounded by the call deadline. The
// adapters take it where the call starts (the SOAP adapter before it reads
// the body, so the deadline bounds the upload too); the pipeline applies
// the deadline again (Bound), which only ever shortens it.
func (s *Service) CallContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.callDeadline)
}

// Bound gives ctx the call deadline unless it already ends sooner: the
// pipeline bounds every call with it (so that a caller that detached ctx
// without CallContext is still bounded), the web adapter every browser
// flow.
func (s *Service) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= s.callDeadline {
		return ctx, func() {} // already bounded (CallContext): no second timer
	}
	return context.WithTimeout(ctx, s.callDeadline)
}

// money is the ledger policy of a money-moving call (see once).
type money struct {
	// op names the call in the ledger when the row's name does not (the
	// two refundPayment forms are kept apart).
	op string
	// payment is the payment acted on, for the log (the parent of a
	// recurrence; 0 for a create).
	payment int64
	// act performs the call. nil error: done. A *refusal or *ServerError:
	// the bridge decided before any POST (not done). Any other error is the
	// REST client's, sorted by restbackend.OutcomeOf.
	act func(ctx context.Context) (store.CallRecord, error)
	// reconcile reads the gateway after an unknown outcome and tells what
	// happened; nil: nothing can be read.
	reconcile func(ctx context.Context) (store.CallRecord, restbackend.Outcome)
	// refund: act runs under the payment's refund lock and records a
	// baseline (call.setBaseline) before its POST, so an entry without one
	// never reached the gateway.
	refund bool
	// doubtWindow, when set, releases an unsettled entry that old for a
	// new call: for a create, which moves no money, so that a lost reply
	// does not block the e-shop's order for the whole replay window.
	doubtWindow time.Duration
	// replayable tells whether a done record may still be replayed
	// (nil: always). false releases the entry and the call acts again.
	replayable func(ctx context.Context, rec store.CallRecord) bool
	// unknown is the answer while the outcome stays unknown
	// (errOutcomeUnknown when nil).
	unknown *ServerError
	// unconfirmed, when set, replaces unknown once the entry has been in
	// doubt for unconfirmedAfter: for a call whose only confirmation is one
	// the gateway sends (a recurrence), so that the e-shop learns it is not
	// coming and the operator is told.
	unconfirmed      *ServerError
	unconfirmedAfter time.Duration
}

// held is a ledger entry a call holds.
type held struct {
	key   store.CallKey
	claim string
}

// staleMargin is what is added to the longest a live call can run before
// its pending entry (and its SQLite refund lock) is taken for one whose
// process died.
const staleMargin = 10 * time.Second

// StaleAfter is how long after its last update a pending ledger entry
// belongs to a call whose process died, so that a repeat reconciles it:
// longer than a live call can run (its deadline, a reconciliation's own
// REST timeout after a reply lost at the deadline, two ledger writes) and a
// margin. A merchant's replay window must exceed it: a repeat of a call
// still under way, or of one whose process died and whose entry is not yet
// stale, must find its entry.
func StaleAfter(callDeadline, restTimeout time.Duration) time.Duration {
	return callDeadline + restTimeout + 2*ledgerTimeout + staleMargin
}

// ledgerTimeout bounds each ledger write. The writes run detached from the
// call's context: a call whose deadline passed during its POST must still
// record what happened.
const ledgerTimeout = 5 * time.Second

// createDoubtWindow is how long a createPayment whose reply was lost (or
// whose process died) blocks a repeat: then the repeat creates a new
// payment. The unconfirmed one was never shown to a customer and lapses.
const createDoubtWindow = 5 * time.Minute

// once runs pol for c at most once per signed request within the
// merchant's replay window. A repeat of a done call gets its record without
// reaching the gateway; a repeat of an in-doubt call (or one whose process
// died) reconciles, whatever its age; a repeat while the first is under way
// is refused. The error is a *refusal or a *ServerError.
func (s *Service) once(ctx context.Context, c *call, pol *money) (store.CallRecord, error) {
	op := pol.op
	if op == "" {
		op = c.op
	}
	if s.moneyHold != nil && pol.doubtWindow == 0 { // a create moves no money (doubtWindow): it goes on
		if why := s.moneyHold(); why != "" {
			c.logger().Error("money-moving call refused: "+why, zap.String("op", op), zap.Int64("goid", c.m.GoID))
			return store.CallRecord{}, serverError(why)
		}
	}
	key, err := s.ledgerKey(ctx, c, op)
	if err != nil {
		return store.CallRecord{}, err
	}
	log := c.logger().WithLazy(zap.String("op", op), zap.Int64("goid", c.m.GoID), zap.Int64("payment", acted(c, pol)))
	unknown := pol.unknown
	if unknown == nil {
		unknown = errOutcomeUnknown
	}
	for range 3 {
		entry, claimed, err := s.ledger.ClaimCall(ctx, key, s.now(), c.m.ReplayWindow)
		if err != nil {
			log.Error("ledger claim failed; the call is not attempted", zap.Error(err))
			return store.CallRecord{}, serverError("session store unavailable")
		}
		h := &held{key: entry.Key, claim: entry.Claim} // the entry found may be the previous release's (CallKey.Legacy)
		c.since = entry.CreatedAt
		if claimed {
			c.ledger = h
			return s.act(ctx, c, log, pol, unknown)
		}
		switch entry.State {
		case store.CallDone:
			if pol.replayable != nil && !pol.replayable(ctx, entry.CallRecord) {
				log.Info("recorded call no longer replayable; acting again", zap.Int64("result_payment", entry.PaymentID))
				lctx, cancel := s.ledgerContext(ctx)
				s.finish(log, "released", s.ledger.ReleaseCall(lctx, key, entry.Claim))
				cancel()
				continue
			}
			log.Info("repeated call answered from the ledger", zap.Int64("result_payment", entry.PaymentID), zap.String("result", entry.Result))
			return entry.CallRecord, nil
		case store.CallPending:
			if s.now().Sub(entry.UpdatedAt) < s.staleAfter() {
				log.Info("repeated call refused: the first is in progress", c.replayRefused())
				return store.CallRecord{}, errInProgress
			}
			log.Warn("pending ledger entry outlived its call; reconciling")
		}
		if pol.doubtWindow > 0 && s.now().Sub(entry.UpdatedAt) >= pol.doubtWindow {
			log.Info("unsettled entry released after its doubt window: the call moves no money")
			s.notDone(ctx, log, h)
			continue
		}
		c.baseline = entry.Baseline
		var rec store.CallRecord
		out := restbackend.OutcomeUnknown
		if pol.refund && entry.Baseline == nil && entry.State == store.CallPending {
			// The baseline precedes the POST: without one, none was sent.
			out = restbackend.OutcomeNotDone
		} else {
			rec, out = s.reconcile(ctx, pol)
		}
		switch out {
		case restbackend.OutcomeDone:
			log.Info("in-doubt call reconciled: the gateway acted", zap.String("result", rec.Result))
			s.done(ctx, log, h, rec)
			return rec, nil
		case restbackend.OutcomeNotDone:
			log.Info("in-doubt call reconciled: the gateway did not act; acting now")
			s.notDone(ctx, log, h)
			continue
		}
		if pol.unconfirmed != nil && s.now().Sub(entry.CreatedAt) >= pol.unconfirmedAfter {
			log.Error("repeated call still in doubt long after it was made: the gateway never confirmed it; an operator must look",
				zap.Time("made", entry.CreatedAt))
			return store.CallRecord{}, pol.unconfirmed
		}
		log.Warn("repeated call still in doubt", c.replayRefused())
		return store.CallRecord{}, unknown
	}
	return store.CallRecord{}, errInProgress
}

// staleAfter is StaleAfter of the service's deadline and REST timeout.
func (s *Service) staleAfter() time.Duration { return StaleAfter(s.callDeadline, s.gw.Timeout()) }

// ledgerKey is the ledger key of c's money call op: its signed fields
// (ledgerText), written also under the key the previous release gives the
// same request (Legacy: the digest with the key the request verified
// with), so that a previous-release replica serving beside this one finds
// it and the claim finds that release's entry; or the key an earlier
// version gave the same request with the merchant's other key when such an
// entry exists (legacyDigests). A ledger that cannot be read fails the
// call: taking "no entry" for granted could act twice.
func (s *Service) ledgerKey(ctx context.Context, c *call, op string) (store.CallKey, error) {
	key := store.CallKey{GoID: c.m.GoID, Operation: op, Hash: store.RequestHash(op, c.v.ledgerText()),
		Legacy: store.RequestHash(op, digestOf(c.v.key, c.v.fields, c.v.charset))}
	for _, d := range c.v.legacyDigests(c.m) {
		old := store.CallKey{GoID: c.m.GoID, Operation: op, Hash: store.RequestHash(op, d)}
		if old.Hash == key.Legacy {
			continue // the claim reads it
		}
		_, err := s.ledger.LookupCall(ctx, old)
		switch {
		case err == nil:
			return old, nil
		case !errors.Is(err, store.ErrNotFound):
			c.logger().Error("ledger read failed; the call is not attempted", zap.String("op", op), zap.Error(err))
			return store.CallKey{}, serverError("session store unavailable")
		}
	}
	return key, nil
}

// setBaseline records a refund's baseline on the entry c holds, before
// the refund's POST; without it the POST must not be sent.
func (c *call) setBaseline(ctx context.Context, b store.RefundBaseline) error {
	lctx, cancel := c.s.ledgerContext(ctx)
	defer cancel()
	if err := c.s.ledger.SetBaseline(lctx, c.ledger.key, c.ledger.claim, b, c.s.now()); err != nil {
		c.logger().Error("baseline not recorded; the call is not attempted", zap.Error(err))
		return serverError("session store unavailable")
	}
	c.baseline = &b
	return nil
}

// act performs a claimed call and records its outcome.
func (s *Service) act(ctx context.Context, c *call, log *zap.Logger, pol *money, unknown *ServerError) (rec store.CallRecord, err error) {
	h := c.ledger
	defer func() {
		// A panic may come after the POST: the entry stays in doubt (not
		// pending until it goes stale) and a repeat reconciles.
		if p := recover(); p != nil {
			s.inDoubt(ctx, log, h, fmt.Sprint("panic: ", p))
			panic(p)
		}
	}()
	if pol.refund {
		unlock, err := s.lockRefunds(ctx, c.m, acted(c, pol))
		if err != nil {
			s.notDone(ctx, log, h)
			return store.CallRecord{}, err
		}
		defer unlock()
		// Another refund of the payment whose outcome is not settled would
		// make this one's reconciliation (or its own) take the other's
		// refund for its own: one at a time until it is settled.
		if err := s.otherRefundsSettled(ctx, c, h.key, acted(c, pol)); err != nil {
			s.notDone(ctx, log, h)
			return store.CallRecord{}, err
		}
	}
	rec, err = pol.act(ctx)
	if err == nil {
		s.settle(ctx, log, h, rec)
		return rec, nil
	}
	var r *refusal
	var se *ServerError
	if errors.As(err, &r) || errors.As(err, &se) {
		s.notDone(ctx, log, h)
		return store.CallRecord{}, err
	}
	if restbackend.OutcomeOf(err) == restbackend.OutcomeNotDone {
		s.notDone(ctx, log, h)
		var ns *restbackend.NotStartedError
		if errors.As(err, &ns) {
			log.Warn("gateway call not attempted: too little time left", zap.Error(err))
			return store.CallRecord{}, notAttempted()
		}
		return store.CallRecord{}, s.gatewayFailed(ctx, h.key.Operation, c.m.GoID, acted(c, pol), err)
	}
	// Unknown: sent without a usable reply, or an error that is not the
	// REST client's (taken as unknown, never as not done).
	log.Warn("gateway call sent, no usable reply: reconciling", zap.Error(err))
	rec, out := s.reconcile(ctx, pol)
	switch out {
	case restbackend.OutcomeDone:
		log.Info("reconciled: the gateway acted", zap.String("result", rec.Result))
		s.settle(ctx, log, h, rec)
		return rec, nil
	case restbackend.OutcomeNotDone:
		log.Info("reconciled: the gateway did not act")
		s.notDone(ctx, log, h)
		return store.CallRecord{}, errNotDone
	}
	log.Warn("outcome unknown; the call stays in doubt")
	s.inDoubt(ctx, log, h, "no usable reply: "+err.Error())
	return store.CallRecord{}, unknown
}

// acted is the payment a money call acts on (0 for a create).
func acted(c *call, pol *money) int64 {
	if pol.payment != 0 || c.payment == nil {
		return pol.payment
	}
	return *c.payment
}

// reconcile runs pol's reconciliation on a context of its own when the
// call's has too little left: a POST that timed out near the deadline
// would leave none, and the status or history read is what tells the
// e-shop what happened.
func (s *Service) reconcile(ctx context.Context, pol *money) (store.CallRecord, restbackend.Outcome) {
	if pol.reconcile == nil {
		return store.CallRecord{}, restbackend.OutcomeUnknown
	}
	reserve := s.gw.Timeout()
	if dl, ok := ctx.Deadline(); ctx.Err() == nil && (!ok || time.Until(dl) >= reserve) {
		return pol.reconcile(ctx)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reserve)
	defer cancel()
	return pol.reconcile(rctx)
}

func (s *Service) ledgerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), ledgerTimeout)
}

// settle records a known result: a success as done (replayed to repeats),
// a FAILED one released, so that a legitimate retry may act.
func (s *Service) settle(ctx context.Context, log *zap.Logger, h *held, rec store.CallRecord) {
	if rec.Result == Failed {
		s.notDone(ctx, log, h)
		return
	}
	s.done(ctx, log, h, rec)
}

func (s *Service) done(ctx context.Context, log *zap.Logger, h *held, rec store.CallRecord) {
	lctx, cancel := s.ledgerContext(ctx)
	defer cancel()
	s.finish(log, "done", s.ledger.CallDone(lctx, h.key, h.claim, rec, s.now()))
}

func (s *Service) notDone(ctx context.Context, log *zap.Logger, h *held) {
	lctx, cancel := s.ledgerContext(ctx)
	defer cancel()
	s.finish(log, "not done", s.ledger.CallNotDone(lctx, h.key, h.claim))
}

func (s *Service) inDoubt(ctx context.Context, log *zap.Logger, h *held, why string) {
	lctx, cancel := s.ledgerContext(ctx)
	defer cancel()
	s.finish(log, "in doubt", s.ledger.CallInDoubt(lctx, h.key, h.claim, store.Clip(why, 200), s.now()))
}

// finish logs a ledger update that failed: the answer stands (it says what
// the gateway did), a repeat then finds the entry pending or in doubt and
// reconciles.
func (s *Service) finish(log *zap.Logger, what string, err error) {
	if err != nil {
		log.Error("ledger update failed", zap.String("to", what), zap.Error(err))
	}
}

// resultRecord is the ledger record of an operation result about id. A
// result the bridge does not know is an error of unknown outcome (the
// gateway may have acted): the call is reconciled, never answered FAILED,
// which a shop takes for final and may act on.
func resultRecord(id int64, res *restbackend.Result) (store.CallRecord, error) {
	rec := store.CallRecord{PaymentID: id}
	switch res.Result {
	case restbackend.ResultFinished:
		rec.Result = Finished
	case restbackend.ResultAccepted:
		rec.Result = accepted
	case restbackend.ResultFailed:
		rec.Result, rec.Description = Failed, "the payment gateway answered FAILED"
	default:
		return store.CallRecord{}, fmt.Errorf("payment %d: the payment gateway answered an unknown result %q", id, strings.ToValidUTF8(res.Result, "?"))
	}
	return rec, nil
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

// refundBaselineOf is the baseline of a refund of amount of payment id: the ids of the
// refunds of that amount already in the history, in any state. Counting
// them instead would take another refund of the same amount for this one,
// and a refund that failed since for one that did not happen.
func refundBaselineOf(id int64, hist []restbackend.Refund, amount int64) store.RefundBaseline {
	b := store.RefundBaseline{PaymentID: id, Amount: amount, RefundIDs: []int64{}}
	for _, r := range hist {
		if r.Amount == amount {
			b.RefundIDs = append(b.RefundIDs, r.ID)
		}
	}
	return b
}

// refundOutcome tells from the history whether the refund of baseline b
// happened: done when exactly one new refund of its amount appeared, not
// done when none did, unknown when more did (refunds of one payment are
// serialised by lockRefunds, but the gateway may still be finishing an
// earlier one) or there is no baseline.
func refundOutcome(b *store.RefundBaseline, hist []restbackend.Refund) (string, restbackend.Outcome) {
	if b == nil || b.Amount <= 0 {
		return "", restbackend.OutcomeUnknown
	}
	var fresh []restbackend.Refund
	for _, r := range hist {
		if r.Amount == b.Amount && !slices.Contains(b.RefundIDs, r.ID) {
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

// refundCheck reconciles the refund of c by its baseline (refundOutcome).
func refundCheck(c *call) func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
	m, id := c.m, *c.payment
	return func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
		hist, err := c.s.gw.RefundHistory(ctx, m.Credentials(), id)
		if err != nil {
			c.logger().Warn("reconciliation: refund history not readable", zap.Int64("payment", id), zap.Error(err))
			return store.CallRecord{}, restbackend.OutcomeUnknown
		}
		res, out := refundOutcome(c.baseline, hist)
		if out != restbackend.OutcomeDone {
			return store.CallRecord{}, out
		}
		rec, err := resultRecord(id, &restbackend.Result{ID: id, Result: res})
		if err != nil {
			return store.CallRecord{}, restbackend.OutcomeUnknown
		}
		return rec, out
	}
}

// errRefundUnsettled answers a refund while another refund of the same
// payment may have been sent and is not settled.
var errRefundUnsettled = serverError("another refund of this payment has an unknown outcome or is in progress: nothing was done; " +
	"repeat that refund first (it is settled by its repeat), then retry this one")

// otherRefundsSettled makes sure no other refund of payment id is
// unsettled (an entry with a baseline, so its POST may have been sent,
// pending or in doubt) before this one acts: two unsettled refunds of one
// amount could each take the other's for its own. Another one whose call
// has ended (in doubt, or pending past StaleAfter) is settled here as its
// own repeat would settle it, by its baseline against the history, so that
// a refund nobody repeats does not hold the payment's refunds back; one
// still under way, one the history does not settle, or more than one
// refuse this refund. Called under the payment's refund lock.
func (s *Service) otherRefundsSettled(ctx context.Context, c *call, mine store.CallKey, id int64) error {
	log := c.logger().With(zap.Int64("payment", id))
	others, err := s.ledger.UnsettledRefunds(ctx, c.m.GoID, id, mine)
	if err != nil {
		log.Error("ledger read failed; the refund is not attempted", zap.Error(err))
		return serverError("session store unavailable")
	}
	if len(others) == 0 {
		return nil
	}
	o := others[0]
	if len(others) > 1 || o.State == store.CallPending && s.now().Sub(o.UpdatedAt) < s.staleAfter() {
		log.Warn("refund refused: another refund of the payment is under way or not settled", zap.Int("unsettled", len(others)), c.replayRefused())
		return errRefundUnsettled
	}
	hist, err := s.gw.RefundHistory(ctx, c.m.Credentials(), id)
	if err != nil {
		log.Warn("refund refused: another refund of the payment is not settled and the history is not readable", zap.Error(err), c.replayRefused())
		return errRefundUnsettled
	}
	res, out := refundOutcome(o.Baseline, hist)
	if out == restbackend.OutcomeUnknown {
		log.Warn("refund refused: another refund of the payment has an unknown outcome", zap.String("op", o.Key.Operation), c.replayRefused())
		return errRefundUnsettled
	}
	// As settle does: a success is kept for the other call's repeats, a
	// FAILED refund (or none) released so that its repeat may act.
	rec := store.CallRecord{Result: Failed}
	if out == restbackend.OutcomeDone {
		if rec, err = resultRecord(id, &restbackend.Result{ID: id, Result: res}); err != nil {
			return errRefundUnsettled
		}
	}
	lctx, cancel := s.ledgerContext(ctx)
	defer cancel()
	if rec.Result == Failed {
		err = s.ledger.CallNotDone(lctx, o.Key, o.Claim)
	} else {
		err = s.ledger.CallDone(lctx, o.Key, o.Claim, rec, s.now())
	}
	if err != nil {
		log.Warn("refund refused: an earlier refund of the payment could not be settled", zap.Error(err))
		return errRefundUnsettled
	}
	log.Info("an earlier refund of the payment settled", zap.String("op", o.Key.Operation), zap.Bool("gateway_acted", out == restbackend.OutcomeDone),
		zap.String("result", rec.Result))
	return nil
}

// lockRefunds serialises the refunds of payment id across processes, so
// that a refund's reconciliation sees no other refund appear beside it.
// The lock is the store's (an advisory lock on PostgreSQL): one whose
// holder died ends with it.
func (s *Service) lockRefunds(ctx context.Context, m Merchant, id int64) (unlock func(), err error) {
	name := "refund/" + FormatInt(m.GoID) + "/" + FormatInt(id)
	release, ok, err := s.ledger.TryLock(ctx, name, s.staleAfter())
	if err != nil {
		s.logFor(ctx).Error("refund lock not taken; the refund is not attempted", zap.Int64("payment", id), zap.Error(err))
		return nil, serverError("session store unavailable")
	}
	if !ok {
		return nil, errRefundLocked
	}
	unlockLegacy, err := s.lockRefundsLegacy(ctx, m, id)
	if err != nil {
		release()
		return nil, err
	}
	return func() { unlockLegacy(); release() }, nil
}

var errRefundLocked = serverError("another refund of this payment is in progress: nothing was done, retry when it has finished")

// legacyLockStale is when the previous release takes its refund lock for
// one whose holder died: its call deadline + 30 s after it was taken.
const legacyLockStale = 30 * time.Second

// lockRefundsLegacy takes the refund lock of the releases up to schema
// version 3 (store.LegacyRefundLock, a pending ledger entry), as they take
// it, so that a refund of the payment by such a replica serving beside
// this one waits for this one's (expand and contract,
// docs/money-safety.md). A later release drops it once no such release
// may run.
func (s *Service) lockRefundsLegacy(ctx context.Context, m Merchant, id int64) (unlock func(), err error) {
	key := store.CallKey{GoID: m.GoID, Operation: store.LegacyRefundLock, Hash: FormatInt(id)}
	for range 2 {
		entry, claimed, err := s.ledger.ClaimCall(ctx, key, s.now(), s.callDeadline+legacyLockStale)
		if err != nil {
			s.logFor(ctx).Error("refund lock not taken; the refund is not attempted", zap.Int64("payment", id), zap.Error(err))
			return nil, serverError("session store unavailable")
		}
		if claimed {
			return func() {
				lctx, cancel := s.ledgerContext(ctx)
				defer cancel()
				if err := s.ledger.CallNotDone(lctx, key, entry.Claim); err != nil {
					s.logFor(ctx).Error("refund lock not released", zap.Int64("payment", id), zap.Error(err))
				}
			}, nil
		}
		if s.now().Sub(entry.CreatedAt) < s.callDeadline+legacyLockStale {
			break
		}
		lctx, cancel := s.ledgerContext(ctx)
		_ = s.ledger.CallNotDone(lctx, key, entry.Claim) // stale: its holder died
		cancel()
	}
	return nil, errRefundLocked
}
