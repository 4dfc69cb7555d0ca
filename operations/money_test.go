package operations

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// fakeLedger is store.Ledger in memory with the SQL store's rules (fencing
// claims, only a done entry past the window replaced). Like a database
// driver, it refuses work on a context that has ended.
type fakeLedger struct {
	mu        sync.Mutex
	calls     map[store.CallKey]store.Call
	failClaim error
	n         int
}

func newFakeLedger() *fakeLedger { return &fakeLedger{calls: map[store.CallKey]store.Call{}} }

func (l *fakeLedger) ClaimCall(ctx context.Context, key store.CallKey, now time.Time, window time.Duration) (store.Call, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return store.Call{}, false, err
	}
	if l.failClaim != nil {
		return store.Call{}, false, l.failClaim
	}
	if c, ok := l.calls[key]; ok && !(c.State == store.CallDone && c.CreatedAt.Before(now.Add(-window))) {
		return c, false, nil
	}
	l.n++
	c := store.Call{Key: key, State: store.CallPending, Claim: strings.Repeat("c", l.n), CreatedAt: now, UpdatedAt: now}
	l.calls[key] = c
	return c, true, nil
}

func (l *fakeLedger) update(ctx context.Context, key store.CallKey, claim string, states []store.CallState, f func(*store.Call)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	c, ok := l.calls[key]
	if !ok || c.Claim != claim {
		return store.ErrNotClaimed
	}
	for _, st := range states {
		if c.State == st {
			f(&c)
			l.calls[key] = c
			return nil
		}
	}
	return store.ErrNotClaimed
}

func (l *fakeLedger) SetNote(ctx context.Context, key store.CallKey, claim, note string, now time.Time) error {
	return l.update(ctx, key, claim, []store.CallState{store.CallPending}, func(c *store.Call) { c.Note, c.UpdatedAt = note, now })
}

func (l *fakeLedger) CallDone(ctx context.Context, key store.CallKey, claim string, rec store.CallRecord, now time.Time) error {
	return l.update(ctx, key, claim, []store.CallState{store.CallPending, store.CallInDoubt}, func(c *store.Call) {
		c.State, c.CallRecord, c.Note, c.UpdatedAt = store.CallDone, rec, "", now
	})
}

func (l *fakeLedger) CallInDoubt(ctx context.Context, key store.CallKey, claim, note string, now time.Time) error {
	return l.update(ctx, key, claim, []store.CallState{store.CallPending}, func(c *store.Call) {
		c.State, c.Note, c.UpdatedAt = store.CallInDoubt, note, now
	})
}

func (l *fakeLedger) CallNotDone(ctx context.Context, key store.CallKey, claim string) error {
	err := l.update(ctx, key, claim, []store.CallState{store.CallPending, store.CallInDoubt}, func(c *store.Call) {})
	if err == nil {
		l.mu.Lock()
		delete(l.calls, key)
		l.mu.Unlock()
	}
	return err
}

func (l *fakeLedger) ReleaseCall(ctx context.Context, key store.CallKey, claim string) error {
	err := l.update(ctx, key, claim, []store.CallState{store.CallDone}, func(c *store.Call) {})
	if err == nil {
		l.mu.Lock()
		delete(l.calls, key)
		l.mu.Unlock()
	}
	return err
}

// only returns the single entry of the ledger.
func (l *fakeLedger) only(t *testing.T) (store.Call, bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.LessOrEqual(t, len(l.calls), 1)
	for _, c := range l.calls {
		return c, true
	}
	return store.Call{}, false
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func onceService(t *testing.T) (*Service, *fakeLedger, *fakeClock) {
	t.Helper()
	l, clk := newFakeLedger(), &fakeClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	cfg := unitConfig()
	cfg.Ledger, cfg.Now = l, clk.now
	s, err := New(cfg)
	require.NoError(t, err)
	return s, l, clk
}

// refundLike is a call that records a baseline, then POSTs; post says what
// the POST did, reconcile reads it back (fails on an ended context, like
// the REST client).
type refundLike struct {
	posts     int
	moved     int
	post      func() error // nil: done
	readable  bool
	baselines []string
}

func (r *refundLike) call(s *Service) *moneyCall {
	c := &moneyCall{op: "partiallyRefundPayment", m: s.merchants[testGoID], id: 7, signed: "digest", needsBaseline: true}
	c.act = func(ctx context.Context) (store.CallRecord, error) {
		if err := c.setBaseline(ctx, "3000:[]"); err != nil {
			return store.CallRecord{}, err
		}
		r.posts++
		if r.post != nil {
			return store.CallRecord{}, r.post()
		}
		r.moved++
		return store.CallRecord{PaymentID: 7, Result: Finished}, nil
	}
	c.reconcile = func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
		r.baselines = append(r.baselines, c.baseline)
		if ctx.Err() != nil || !r.readable {
			return store.CallRecord{}, restbackend.OutcomeUnknown
		}
		if r.moved > 0 {
			return store.CallRecord{PaymentID: 7, Result: Finished}, restbackend.OutcomeDone
		}
		return store.CallRecord{}, restbackend.OutcomeNotDone
	}
	return c
}

var errLostReply = errors.New("reset after the request was sent") // not the REST client's: unknown

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
	_, err := s.once(ctx, r.call(s))
	assert.Equal(t, errOutcomeUnknown, err)

	e, ok := l.only(t)
	require.True(t, ok)
	assert.Equal(t, store.CallInDoubt, e.State, "recorded although the call's context ended")
	assert.Contains(t, e.Note, baselineMark+"3000:[]")

	r.post, r.readable = nil, true
	rec, err := s.once(context.Background(), r.call(s))
	require.NoError(t, err)
	assert.Equal(t, Finished, rec.Result)
	assert.Equal(t, 1, r.posts, "the repeat reconciled, it did not POST")
	assert.Equal(t, 1, r.moved)
	assert.Equal(t, []string{"3000:[]", "3000:[]"}, r.baselines, "the repeat used the persisted baseline")
	e, _ = l.only(t)
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
	rec, err := s.once(ctx, r.call(s))
	require.NoError(t, err)
	assert.Equal(t, Finished, rec.Result)
	e, _ := l.only(t)
	assert.Equal(t, store.CallDone, e.State)
}

// A repeat while the first call is under way is refused; once the pending
// entry outlives its call (the process died) it is reconciled, and without
// a baseline (written before every POST) it is known not done: the repeat
// acts. A pending entry with a baseline whose outcome cannot be read is
// answered "outcome unknown", never acted on.
func TestOncePendingEntries(t *testing.T) {
	s, l, clk := onceService(t)
	key := store.CallKey{GoID: testGoID, Operation: "partiallyRefundPayment", Hash: store.RequestHash("partiallyRefundPayment", "digest")}
	_, claimed, err := l.ClaimCall(context.Background(), key, clk.now(), time.Hour)
	require.NoError(t, err)
	require.True(t, claimed)

	r := &refundLike{readable: true}
	_, err = s.once(context.Background(), r.call(s))
	assert.Equal(t, errInProgress, err)
	assert.Zero(t, r.posts)

	clk.add(s.callDeadline + pendingStale)
	rec, err := s.once(context.Background(), r.call(s))
	require.NoError(t, err, "a stale entry without a baseline never reached the gateway")
	assert.Equal(t, Finished, rec.Result)
	assert.Equal(t, 1, r.posts)

	// A stale pending entry that has its baseline: reconciled, not acted on.
	key2 := key
	key2.Hash = store.RequestHash("partiallyRefundPayment", "digest2")
	c, _, err := l.ClaimCall(context.Background(), key2, clk.now(), time.Hour)
	require.NoError(t, err)
	require.NoError(t, l.SetNote(context.Background(), key2, c.Claim, "x"+baselineMark+"3000:[]", clk.now()))
	clk.add(s.callDeadline + pendingStale)
	r2 := &refundLike{}
	call := r2.call(s)
	call.signed = "digest2"
	_, err = s.once(context.Background(), call)
	assert.Equal(t, errOutcomeUnknown, err)
	assert.Zero(t, r2.posts)
	assert.Equal(t, []string{"3000:[]"}, r2.baselines)
}

// Finding 5: an in-doubt entry older than the replay window is reconciled,
// never taken over by a new call.
func TestOnceInDoubtOutlivesWindow(t *testing.T) {
	s, l, clk := onceService(t)
	r := &refundLike{post: func() error { return errLostReply }}
	_, err := s.once(context.Background(), r.call(s))
	assert.Equal(t, errOutcomeUnknown, err)
	clk.add(3 * DefaultReplayWindow)
	r.post = nil
	_, err = s.once(context.Background(), r.call(s))
	assert.Equal(t, errOutcomeUnknown, err, "still unknown: no second POST")
	assert.Equal(t, 1, r.posts)
	e, _ := l.only(t)
	assert.Equal(t, store.CallInDoubt, e.State)
}

// A ledger that cannot be written: nothing is attempted.
func TestOnceLedgerDown(t *testing.T) {
	s, l, _ := onceService(t)
	l.failClaim = errors.New("database is locked")
	r := &refundLike{}
	_, err := s.once(context.Background(), r.call(s))
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
	call := func() *moneyCall {
		return &moneyCall{op: "capturePayment", m: s.merchants[testGoID], id: 7, signed: "d",
			act: func(ctx context.Context) (store.CallRecord, error) {
				n++
				return store.CallRecord{PaymentID: 7, Result: Failed, Description: "the payment gateway answered FAILED"}, nil
			}}
	}
	rec, err := s.once(context.Background(), call())
	require.NoError(t, err)
	assert.Equal(t, Failed, rec.Result)
	_, ok := l.only(t)
	assert.False(t, ok, "a FAILED result leaves no entry")
	_, err = s.once(context.Background(), call())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the retry acted")
}

// A panic after the POST leaves the entry in doubt, not pending.
func TestOncePanicLeavesInDoubt(t *testing.T) {
	s, l, _ := onceService(t)
	r := &refundLike{post: func() error { panic("boom") }}
	assert.Panics(t, func() { _, _ = s.once(context.Background(), r.call(s)) })
	e, _ := l.only(t)
	assert.Equal(t, store.CallInDoubt, e.State)
	assert.Contains(t, e.Note, baselineMark+"3000:[]")
}

// Finding 3: a create whose reply was lost blocks its repeats only for
// createDoubtWindow (it moves no money), then a repeat creates anew.
func TestOnceCreateDoubtWindow(t *testing.T) {
	s, _, clk := onceService(t)
	n := 0
	call := func(lost bool) *moneyCall {
		return &moneyCall{op: "createPayment", m: s.merchants[testGoID], signed: "d", doubtWindow: createDoubtWindow,
			act: func(ctx context.Context) (store.CallRecord, error) {
				n++
				if lost {
					return store.CallRecord{}, errLostReply
				}
				return store.CallRecord{PaymentID: 9, Result: CallCompleted}, nil
			}}
	}
	_, err := s.once(context.Background(), call(true))
	assert.Equal(t, errOutcomeUnknown, err)
	_, err = s.once(context.Background(), call(false))
	assert.Equal(t, errOutcomeUnknown, err, "within the doubt window")
	clk.add(createDoubtWindow)
	rec, err := s.once(context.Background(), call(false))
	require.NoError(t, err)
	assert.Equal(t, int64(9), rec.PaymentID)
	assert.Equal(t, 2, n)
}

// Finding 4: the refund reconciliation compares refund ids, not counts.
func TestRefundOutcomeByIDs(t *testing.T) {
	const ok, failed, requested = restbackend.RefundSucceeded, restbackend.RefundFailed, restbackend.RefundRequested
	base := refundBaselineOf([]restbackend.Refund{{ID: 1, Amount: 3000, State: requested}, {ID: 2, Amount: 500, State: ok}}, 3000)

	// (b) the REQUESTED refund of the baseline failed since, and this
	// refund happened: done, though the count of live refunds is unchanged.
	res, out := refundOutcome(base, []restbackend.Refund{{ID: 1, Amount: 3000, State: failed}, {ID: 2, Amount: 500, State: ok},
		{ID: 3, Amount: 3000, State: ok}})
	assert.Equal(t, restbackend.OutcomeDone, out)
	assert.Equal(t, restbackend.ResultFinished, res)

	// Nothing new of the amount: not done (another amount does not count).
	_, out = refundOutcome(base, []restbackend.Refund{{ID: 1, Amount: 3000, State: ok}, {ID: 2, Amount: 500, State: ok}, {ID: 4, Amount: 700, State: ok}})
	assert.Equal(t, restbackend.OutcomeNotDone, out)

	// (a) two new refunds of the same amount: which one is this call's
	// cannot be told.
	_, out = refundOutcome(base, []restbackend.Refund{{ID: 1, Amount: 3000}, {ID: 3, Amount: 3000, State: ok}, {ID: 4, Amount: 3000, State: ok}})
	assert.Equal(t, restbackend.OutcomeUnknown, out)

	res, out = refundOutcome(base, []restbackend.Refund{{ID: 5, Amount: 3000, State: requested}})
	assert.Equal(t, restbackend.OutcomeDone, out)
	assert.Equal(t, restbackend.ResultAccepted, res)
	res, out = refundOutcome(base, []restbackend.Refund{{ID: 5, Amount: 3000, State: failed}})
	assert.Equal(t, restbackend.OutcomeDone, out)
	assert.Equal(t, restbackend.ResultFailed, res, "the gateway refused it: answered FAILED, and a retry may act")

	_, out = refundOutcome("3000:1", nil)
	assert.Equal(t, restbackend.OutcomeUnknown, out, "an old count baseline is not trusted")
}

// Refunds of one payment are serialised; a lock left by a dead process is
// taken over once it outlived a call.
func TestLockRefunds(t *testing.T) {
	s, _, clk := onceService(t)
	m := s.merchants[testGoID]
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
	_, err = s.lockRefunds(context.Background(), m, 7)
	require.NoError(t, err)
	clk.add(s.callDeadline + pendingStale)
	_, err = s.lockRefunds(context.Background(), m, 7)
	assert.NoError(t, err, "a stale lock is taken over")
}

func (l *fakeLedger) LedgerCounts(context.Context) (store.LedgerCounts, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var c store.LedgerCounts
	for _, call := range l.calls {
		switch call.State {
		case store.CallPending:
			c.Pending++
		case store.CallInDoubt:
			c.InDoubt++
		}
	}
	return c, nil
}
