package operations

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// onceService is a Service on an in-memory SQLite store (the store's own
// ledger, not a double) with a clock the test moves.
func onceService(t *testing.T) (*Service, *ledgerView, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	st := memStore(t)
	cfg := unitConfig(t)
	cfg.Store, cfg.Now = st, clk.now
	s, err := New(cfg)
	require.NoError(t, err)
	return s, &ledgerView{t: t, st: st, clk: clk}, clk
}

// memStore is a private in-memory SQLite store.
func memStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), ":memory:")
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// ledgerView looks at the entry of a key in the store's ledger.
type ledgerView struct {
	t   *testing.T
	st  store.Store
	clk *fakeClock
}

// entry is the entry of the call named by op and digest, if any.
func (l *ledgerView) entry(op, digest string) (store.Call, bool) {
	l.t.Helper()
	key := ledgerKey(op, digest)
	c, claimed, err := l.st.ClaimCall(context.Background(), key, l.clk.now(), 100*365*24*time.Hour)
	require.NoError(l.t, err)
	if claimed { // there was none: take the probe back
		require.NoError(l.t, l.st.CallNotDone(context.Background(), key, c.Claim))
		return store.Call{}, false
	}
	return c, true
}

// ledgerKey is the ledger key of a test call of op signed over the single
// field name (testCall).
func ledgerKey(op, name string) store.CallKey {
	return store.CallKey{GoID: testGoID, Operation: op, Hash: store.RequestHash(op, name)}
}

// testCall is a call of op on payment 7 as the pipeline hands it to once,
// authenticated with digest.
func testCall(s *Service, op, digest string) *call {
	m, _ := s.merchant(bg, testGoID)
	return &call{s: s, op: op, m: m, known: true, v: verified{key: m.SecureKey, fields: []string{digest}, charset: CharsetUTF8},
		payment: ptr(int64(7)), log: s.log, ctx: context.Background()}
}

// refundLike is a call that records a baseline, then POSTs; post says what
// the POST did, reconcile reads it back (fails on an ended context, like
// the REST client).
type refundLike struct {
	posts     int
	moved     int
	post      func() error // nil: done
	readable  bool
	baselines []*store.RefundBaseline
}

var testBaseline = store.RefundBaseline{PaymentID: 7, Amount: 3000, RefundIDs: []int64{}}

func (r *refundLike) run(ctx context.Context, c *call) (store.CallRecord, error) {
	return c.s.once(ctx, c, r.policy(c))
}

func (r *refundLike) policy(c *call) *money {
	return &money{
		refund: true,
		act: func(ctx context.Context) (store.CallRecord, error) {
			if err := c.setBaseline(ctx, testBaseline); err != nil {
				return store.CallRecord{}, err
			}
			r.posts++
			if r.post != nil {
				return store.CallRecord{}, r.post()
			}
			r.moved++
			return store.CallRecord{PaymentID: 7, Result: Finished}, nil
		},
		reconcile: func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
			r.baselines = append(r.baselines, c.baseline)
			if ctx.Err() != nil || !r.readable {
				return store.CallRecord{}, restbackend.OutcomeUnknown
			}
			if r.moved > 0 {
				return store.CallRecord{PaymentID: 7, Result: Finished}, restbackend.OutcomeDone
			}
			return store.CallRecord{}, restbackend.OutcomeNotDone
		},
	}
}

var errLostReply = errors.New("reset after the request was sent") // not the REST client's: unknown

const refundOp = "partiallyRefundPayment"

// Finding 2: a POST whose reply is lost as the call's deadline passes.
// The ledger still records the entry in doubt with its baseline (written
// before the POST), and a repeat reconciles with that baseline instead of
// acting.
func TestOnceLostReplyAtDeadlineKeepsBaseline(t *testing.T) {
	s, l, _ := onceService(t)
	r := &refundLike{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	r.post = func() error { r.moved++; cancel(); return errLostReply } // the gateway refunded; the deadline passed
	_, err := r.run(ctx, testCall(s, refundOp, "digest"))
	assert.Equal(t, errOutcomeUnknown, err)

	e, ok := l.entry(refundOp, "digest")
	require.True(t, ok)
	assert.Equal(t, store.CallInDoubt, e.State, "recorded although the call's context ended")
	assert.Equal(t, &testBaseline, e.Baseline)

	r.post, r.readable = nil, true
	rec, err := r.run(context.Background(), testCall(s, refundOp, "digest"))
	require.NoError(t, err)
	assert.Equal(t, Finished, rec.Result)
	assert.Equal(t, 1, r.posts, "the repeat reconciled, it did not POST")
	assert.Equal(t, 1, r.moved)
	assert.Equal(t, []*store.RefundBaseline{&testBaseline, &testBaseline}, r.baselines, "the repeat used the persisted baseline")
	e, _ = l.entry(refundOp, "digest")
	assert.Equal(t, store.CallDone, e.State)
}

// The reconciliation after a lost reply runs on a context of its own when
// the call's has ended, so the first call can already tell what happened.
func TestOnceReconcilesAfterDeadline(t *testing.T) {
	s, l, _ := onceService(t)
	r := &refundLike{readable: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	r.post = func() error { r.moved++; cancel(); return errLostReply }
	rec, err := r.run(ctx, testCall(s, refundOp, "digest"))
	require.NoError(t, err)
	assert.Equal(t, Finished, rec.Result)
	e, _ := l.entry(refundOp, "digest")
	assert.Equal(t, store.CallDone, e.State)
}

// A repeat while the first call is under way is refused; once the pending
// entry outlives its call (the process died) it is reconciled, and without
// a baseline (written before every POST) it is known not done: the repeat
// acts. A pending entry with a baseline whose outcome cannot be read is
// answered "outcome unknown", never acted on.
func TestOncePendingEntries(t *testing.T) {
	s, l, clk := onceService(t)
	key := ledgerKey(refundOp, "digest")
	_, claimed, err := l.st.ClaimCall(context.Background(), key, clk.now(), time.Hour)
	require.NoError(t, err)
	require.True(t, claimed)

	r := &refundLike{readable: true}
	_, err = r.run(context.Background(), testCall(s, refundOp, "digest"))
	assert.Equal(t, errInProgress, err)
	assert.Zero(t, r.posts)

	clk.add(s.staleAfter())
	rec, err := r.run(context.Background(), testCall(s, refundOp, "digest"))
	require.NoError(t, err, "a stale entry without a baseline never reached the gateway")
	assert.Equal(t, Finished, rec.Result)
	assert.Equal(t, 1, r.posts)

	// A stale pending entry that has its baseline: reconciled, not acted on.
	key2 := key
	key2.Hash = ledgerKey(refundOp, "digest2").Hash
	c, _, err := l.st.ClaimCall(context.Background(), key2, clk.now(), time.Hour)
	require.NoError(t, err)
	require.NoError(t, l.st.SetBaseline(context.Background(), key2, c.Claim, testBaseline, clk.now()))
	clk.add(s.staleAfter())
	r2 := &refundLike{}
	_, err = r2.run(context.Background(), testCall(s, refundOp, "digest2"))
	assert.Equal(t, errOutcomeUnknown, err)
	assert.Zero(t, r2.posts)
	assert.Equal(t, []*store.RefundBaseline{&testBaseline}, r2.baselines)
}

// Finding 5: an in-doubt entry older than the replay window is reconciled,
// never taken over by a new call.
func TestOnceInDoubtOutlivesWindow(t *testing.T) {
	s, l, clk := onceService(t)
	r := &refundLike{post: func() error { return errLostReply }}
	_, err := r.run(context.Background(), testCall(s, refundOp, "digest"))
	assert.Equal(t, errOutcomeUnknown, err)
	clk.add(3 * DefaultReplayWindow)
	r.post = nil
	_, err = r.run(context.Background(), testCall(s, refundOp, "digest"))
	assert.Equal(t, errOutcomeUnknown, err, "still unknown: no second POST")
	assert.Equal(t, 1, r.posts)
	e, _ := l.entry(refundOp, "digest")
	assert.Equal(t, store.CallInDoubt, e.State)
}

// failingClaims is a store whose ledger claims fail.
type failingClaims struct {
	store.Store
	err error
}

func (f failingClaims) ClaimCall(context.Context, store.CallKey, time.Time, time.Duration) (store.Call, bool, error) {
	return store.Call{}, false, f.err
}

// A ledger that cannot be written: nothing is attempted.
func TestOnceLedgerDown(t *testing.T) {
	cfg := unitConfig(t)
	cfg.Store = failingClaims{Store: memStore(t), err: errors.New("database is locked")}
	s, err := New(cfg)
	require.NoError(t, err)
	r := &refundLike{}
	_, err = r.run(context.Background(), testCall(s, refundOp, "digest"))
	var se *ServerError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Error(), "session store unavailable")
	assert.Zero(t, r.posts)
}

// Finding 6: a FAILED result is answered but not kept, so a legitimate
// retry acts.
func TestOnceFailedIsNotReplayed(t *testing.T) {
	s, l, _ := onceService(t)
	n := 0
	pol := &money{act: func(ctx context.Context) (store.CallRecord, error) {
		n++
		return store.CallRecord{PaymentID: 7, Result: Failed, Description: "the payment gateway answered FAILED"}, nil
	}}
	rec, err := s.once(context.Background(), testCall(s, "capturePayment", "d"), pol)
	require.NoError(t, err)
	assert.Equal(t, Failed, rec.Result)
	_, ok := l.entry("capturePayment", "d")
	assert.False(t, ok, "a FAILED result leaves no entry")
	_, err = s.once(context.Background(), testCall(s, "capturePayment", "d"), pol)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the retry acted")
}

// A panic after the POST leaves the entry in doubt, not pending.
func TestOncePanicLeavesInDoubt(t *testing.T) {
	s, l, _ := onceService(t)
	r := &refundLike{post: func() error { panic("boom") }}
	assert.Panics(t, func() { _, _ = r.run(context.Background(), testCall(s, refundOp, "digest")) })
	e, _ := l.entry(refundOp, "digest")
	assert.Equal(t, store.CallInDoubt, e.State)
	assert.Equal(t, &testBaseline, e.Baseline)
}

// Finding 3: a create whose reply was lost blocks its repeats only for
// createDoubtWindow (it moves no money), then a repeat creates anew.
func TestOnceCreateDoubtWindow(t *testing.T) {
	s, _, clk := onceService(t)
	n := 0
	pol := func(lost bool) *money {
		return &money{doubtWindow: createDoubtWindow,
			act: func(ctx context.Context) (store.CallRecord, error) {
				n++
				if lost {
					return store.CallRecord{}, errLostReply
				}
				return store.CallRecord{PaymentID: 9, Result: CallCompleted}, nil
			}}
	}
	c := func() *call { c := testCall(s, "createPayment", "d"); c.payment = nil; return c }
	_, err := s.once(context.Background(), c(), pol(true))
	assert.Equal(t, errOutcomeUnknown, err)
	_, err = s.once(context.Background(), c(), pol(false))
	assert.Equal(t, errOutcomeUnknown, err, "within the doubt window")
	clk.add(createDoubtWindow)
	rec, err := s.once(context.Background(), c(), pol(false))
	require.NoError(t, err)
	assert.Equal(t, int64(9), rec.PaymentID)
	assert.Equal(t, 2, n)
}

// Finding 4: the refund reconciliation compares refund ids, not counts.
func TestRefundOutcomeByIDs(t *testing.T) {
	const ok, failed, requested = restbackend.RefundSucceeded, restbackend.RefundFailed, restbackend.RefundRequested
	base := refundBaselineOf(7, []restbackend.Refund{{ID: 1, Amount: 3000, State: requested}, {ID: 2, Amount: 500, State: ok}}, 3000)

	// (b) the REQUESTED refund of the baseline failed since, and this
	// refund happened: done, though the count of live refunds is unchanged.
	res, out := refundOutcome(&base, []restbackend.Refund{{ID: 1, Amount: 3000, State: failed}, {ID: 2, Amount: 500, State: ok},
		{ID: 3, Amount: 3000, State: ok}})
	assert.Equal(t, restbackend.OutcomeDone, out)
	assert.Equal(t, restbackend.ResultFinished, res)

	// Nothing new of the amount: not done (another amount does not count).
	_, out = refundOutcome(&base, []restbackend.Refund{{ID: 1, Amount: 3000, State: ok}, {ID: 2, Amount: 500, State: ok}, {ID: 4, Amount: 700, State: ok}})
	assert.Equal(t, restbackend.OutcomeNotDone, out)

	// (a) two new refunds of the same amount: which one is this call's
	// cannot be told.
	_, out = refundOutcome(&base, []restbackend.Refund{{ID: 1, Amount: 3000}, {ID: 3, Amount: 3000, State: ok}, {ID: 4, Amount: 3000, State: ok}})
	assert.Equal(t, restbackend.OutcomeUnknown, out)

	res, out = refundOutcome(&base, []restbackend.Refund{{ID: 5, Amount: 3000, State: requested}})
	assert.Equal(t, restbackend.OutcomeDone, out)
	assert.Equal(t, restbackend.ResultAccepted, res)
	res, out = refundOutcome(&base, []restbackend.Refund{{ID: 5, Amount: 3000, State: failed}})
	assert.Equal(t, restbackend.OutcomeDone, out)
	assert.Equal(t, restbackend.ResultFailed, res, "the gateway refused it: answered FAILED, and a retry may act")

	_, out = refundOutcome(nil, nil)
	assert.Equal(t, restbackend.OutcomeUnknown, out, "no baseline: unknown")
	_, out = refundOutcome(&store.RefundBaseline{Amount: -1}, nil)
	assert.Equal(t, restbackend.OutcomeUnknown, out, "an unreadable old baseline is not trusted")
}

// Refunds of one payment are serialised (the store's lock; its expiry
// and takeover are the store's own tests).
func TestLockRefunds(t *testing.T) {
	s, _, _ := onceService(t)
	m, _ := s.merchant(bg, testGoID)
	unlock, err := s.lockRefunds(context.Background(), m, 7)
	require.NoError(t, err)
	_, err = s.lockRefunds(context.Background(), m, 7)
	var se *ServerError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Error(), "another refund of this payment is in progress")
	other, err := s.lockRefunds(context.Background(), m, 8)
	require.NoError(t, err, "another payment is not locked")
	other()
	unlock()
	again, err := s.lockRefunds(context.Background(), m, 7)
	require.NoError(t, err)
	again()
}
