package store_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/store"
)

func TestRequestHash(t *testing.T) {
	a := store.RequestHash("3000000001", "3000", "first refund")
	assert.Len(t, a, 64)
	assert.Equal(t, a, store.RequestHash("3000000001", "3000", "first refund"), "stable")
	assert.NotEqual(t, a, store.RequestHash("3000000001", "3000", "second refund"), "another description is another call")
	assert.NotEqual(t, store.RequestHash("ab", "c"), store.RequestHash("a", "bc"), "fields are delimited")
}

func ledgerSuite(t *testing.T, fresh freshDSN) {
	ctx := context.Background()
	const window = 24 * time.Hour
	key := store.CallKey{GoID: 8123456789, Operation: "partiallyRefundPayment", Hash: store.RequestHash("3000000001", "3000", "r1")}

	t.Run("LedgerLifecycle", func(t *testing.T) {
		s := open(t, fresh(t))
		c, claimed, err := s.ClaimCall(ctx, key, t0, window)
		require.NoError(t, err)
		require.True(t, claimed, "the first call acts")
		assert.Equal(t, store.CallPending, c.State)
		assert.Len(t, c.Claim, 32)

		again, claimed, err := s.ClaimCall(ctx, key, t0.Add(time.Second), window)
		require.NoError(t, err)
		assert.False(t, claimed, "a repeat while the first is under way does not act")
		assert.Equal(t, store.CallPending, again.State)
		assert.Equal(t, c.Claim, again.Claim)

		rec := store.CallRecord{PaymentID: 3000000001, Result: "FINISHED", Description: "refunded", Reply: `{"x":1}`}
		assert.ErrorIs(t, s.CallDone(ctx, key, "not-my-claim", rec, t0), store.ErrNotClaimed)
		require.NoError(t, s.CallDone(ctx, key, c.Claim, rec, t0))

		replay, claimed, err := s.ClaimCall(ctx, key, t0.Add(time.Hour), window)
		require.NoError(t, err)
		assert.False(t, claimed)
		assert.Equal(t, store.CallDone, replay.State)
		assert.Equal(t, rec, replay.CallRecord, "a repeat gets the first call's result")
		assert.Equal(t, key, replay.Key)
		assert.Equal(t, t0, replay.CreatedAt)

		assert.ErrorIs(t, s.CallInDoubt(ctx, key, c.Claim, "late", t0), store.ErrNotClaimed, "done is final")
		assert.ErrorIs(t, s.CallNotDone(ctx, key, c.Claim), store.ErrNotClaimed, "done is final")
		assert.ErrorIs(t, s.ReleaseCall(ctx, key, "not-my-claim"), store.ErrNotClaimed)

		// Past the window the same fields are a new call.
		fresh, claimed, err := s.ClaimCall(ctx, key, t0.Add(window+time.Second), window)
		require.NoError(t, err)
		assert.True(t, claimed, "outside the replay window the call acts again")
		assert.NotEqual(t, c.Claim, fresh.Claim)
		assert.ErrorIs(t, s.CallDone(ctx, key, c.Claim, rec, t0), store.ErrNotClaimed, "the old claim is fenced off")
		require.NoError(t, s.CallDone(ctx, key, fresh.Claim, store.CallRecord{Result: "FINISHED"}, t0))

		other := key
		other.GoID = 1
		_, claimed, err = s.ClaimCall(ctx, other, t0, window)
		require.NoError(t, err)
		assert.True(t, claimed, "keys are per merchant")
		other = key
		other.Operation = "refundPayment"
		_, claimed, err = s.ClaimCall(ctx, other, t0, window)
		require.NoError(t, err)
		assert.True(t, claimed, "keys are per operation")
	})

	t.Run("LedgerInDoubtAndNotDone", func(t *testing.T) {
		s := open(t, fresh(t))
		c, claimed, err := s.ClaimCall(ctx, key, t0, window)
		require.NoError(t, err)
		require.True(t, claimed)
		require.NoError(t, s.CallInDoubt(ctx, key, c.Claim, "gateway refund: "+strings.Repeat("x", 10000), t0))

		doubt, claimed, err := s.ClaimCall(ctx, key, t0.Add(time.Minute), window)
		require.NoError(t, err)
		assert.False(t, claimed, "a repeat of an in-doubt call reconciles instead of acting")
		assert.Equal(t, store.CallInDoubt, doubt.State)
		assert.LessOrEqual(t, len(doubt.Note), store.MaxNote)
		assert.True(t, strings.HasPrefix(doubt.Note, "gateway refund: "))

		// The repeat reconciled: the refund did not happen. It releases
		// the entry and claims it afresh to act.
		require.NoError(t, s.CallNotDone(ctx, key, doubt.Claim))
		assert.ErrorIs(t, s.CallNotDone(ctx, key, doubt.Claim), store.ErrNotClaimed)
		c2, claimed, err := s.ClaimCall(ctx, key, t0.Add(2*time.Minute), window)
		require.NoError(t, err)
		assert.True(t, claimed, "after not-done a retry may act")
		require.NoError(t, s.CallNotDone(ctx, key, c2.Claim), "refused by the gateway: not done")
		c3, claimed, err := s.ClaimCall(ctx, key, t0.Add(3*time.Minute), window)
		require.NoError(t, err)
		require.True(t, claimed)

		// In doubt, then reconciled as done.
		require.NoError(t, s.CallInDoubt(ctx, key, c3.Claim, "reset after sending", t0))
		require.NoError(t, s.CallDone(ctx, key, c3.Claim, store.CallRecord{PaymentID: 5, Result: "FINISHED"}, t0))
		got, _, err := s.ClaimCall(ctx, key, t0.Add(4*time.Minute), window)
		require.NoError(t, err)
		assert.Equal(t, store.CallDone, got.State)
		assert.Empty(t, got.Note)

		_, _, err = s.ClaimCall(ctx, store.CallKey{GoID: 1}, t0, window)
		assert.Error(t, err, "a key needs operation and hash")
		_, _, err = s.ClaimCall(ctx, key, t0, 0)
		assert.Error(t, err, "a window must be positive")
		assert.Error(t, s.CallDone(ctx, key, got.Claim, store.CallRecord{Reply: strings.Repeat("r", 70<<10)}, t0))
	})

	// Past the window only a done entry is a new call: a pending or
	// in-doubt one may have moved money and must be reconciled first.
	t.Run("LedgerUnsettledOutlivesWindow", func(t *testing.T) {
		s := open(t, fresh(t))
		c, claimed, err := s.ClaimCall(ctx, key, t0, window)
		require.NoError(t, err)
		require.True(t, claimed)
		// The baseline is written before the POST, on the claim only.
		at := t0.Add(3 * time.Second)
		b := store.RefundBaseline{PaymentID: 3000000001, Amount: 3000, RefundIDs: []int64{7, 3000000009}}
		assert.ErrorIs(t, s.SetBaseline(ctx, key, "not-my-claim", b, at), store.ErrNotClaimed)
		require.NoError(t, s.SetBaseline(ctx, key, c.Claim, b, at))

		old, claimed, err := s.ClaimCall(ctx, key, t0.Add(window+time.Hour), window)
		require.NoError(t, err)
		assert.False(t, claimed, "a pending entry past the window is not replaced")
		assert.Equal(t, store.CallPending, old.State)
		require.NotNil(t, old.Baseline)
		assert.Equal(t, b, *old.Baseline, "the baseline reads back typed")
		assert.Equal(t, at, old.UpdatedAt, "stamped with the caller's clock")

		require.NoError(t, s.CallInDoubt(ctx, key, c.Claim, "lost reply", t0.Add(5*time.Second)))
		old, claimed, err = s.ClaimCall(ctx, key, t0.Add(3*window), window)
		require.NoError(t, err)
		assert.False(t, claimed, "an in-doubt entry past the window is not replaced")
		assert.Equal(t, store.CallInDoubt, old.State)
		assert.Equal(t, "lost reply", old.Note)
		require.NotNil(t, old.Baseline, "the baseline outlives the in-doubt note")
		assert.Equal(t, b, *old.Baseline)
		assert.Equal(t, t0.Add(5*time.Second), old.UpdatedAt, "stamped with the caller's clock")
		assert.ErrorIs(t, s.SetBaseline(ctx, key, c.Claim, b, at), store.ErrNotClaimed, "a baseline only before the outcome")

		// Reconciled as done: past the window, a new call.
		require.NoError(t, s.CallDone(ctx, key, c.Claim, store.CallRecord{Result: "FINISHED"}, t0.Add(3*window+time.Minute)))
		_, claimed, err = s.ClaimCall(ctx, key, t0.Add(4*window), window)
		require.NoError(t, err)
		assert.True(t, claimed, "a done entry past the window is replaced")
	})

	// A done entry that may no longer be replayed is released by its
	// claim; the same request then acts again.
	t.Run("LedgerRelease", func(t *testing.T) {
		s := open(t, fresh(t))
		c, _, err := s.ClaimCall(ctx, key, t0, window)
		require.NoError(t, err)
		assert.ErrorIs(t, s.ReleaseCall(ctx, key, c.Claim), store.ErrNotClaimed, "only a done entry is released")
		require.NoError(t, s.CallDone(ctx, key, c.Claim, store.CallRecord{PaymentID: 1, Result: "CALL_COMPLETED"}, t0))
		require.NoError(t, s.ReleaseCall(ctx, key, c.Claim))
		_, claimed, err := s.ClaimCall(ctx, key, t0.Add(time.Minute), window)
		require.NoError(t, err)
		assert.True(t, claimed)
	})

	t.Run("LedgerDurable", func(t *testing.T) {
		dsn := fresh(t)
		s := open(t, dsn)
		c, _, err := s.ClaimCall(ctx, key, t0, window)
		require.NoError(t, err)
		require.NoError(t, s.CallDone(ctx, key, c.Claim, store.CallRecord{PaymentID: 9, Result: "FINISHED", Description: "ok"}, t0))
		require.NoError(t, s.Close())
		s = open(t, dsn)
		got, claimed, err := s.ClaimCall(ctx, key, t0.Add(time.Hour), window)
		require.NoError(t, err)
		assert.False(t, claimed, "a restart does not forget a recorded call")
		assert.Equal(t, int64(9), got.PaymentID)
	})

	t.Run("LedgerConcurrentClaims", func(t *testing.T) {
		dsn := fresh(t)
		// Two stores on one database stand for two replicas; many repeats
		// of one call arrive at once, for several calls.
		stores := []store.Store{open(t, dsn), open(t, dsn)}
		const calls, repeats = 5, 16
		var mu sync.Mutex
		won := map[string]int{}
		var wg sync.WaitGroup
		for i := range calls * repeats {
			wg.Go(func() {
				k := key
				k.Hash = store.RequestHash(fmt.Sprint("call-", i%calls))
				_, claimed, err := stores[i%2].ClaimCall(ctx, k, t0, window)
				assert.NoError(t, err)
				if claimed {
					mu.Lock()
					won[k.Hash]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		assert.Len(t, won, calls)
		for h, n := range won {
			assert.Equal(t, 1, n, "call %s claimed %d times", h[:8], n)
		}

		// Taking over a done entry past its window: one winner too.
		k0 := store.CallKey{GoID: key.GoID, Operation: key.Operation, Hash: store.RequestHash("call-0")}
		c0, claimed, err := stores[0].ClaimCall(ctx, k0, t0, window)
		require.NoError(t, err)
		require.False(t, claimed)
		require.NoError(t, stores[0].CallDone(ctx, k0, c0.Claim, store.CallRecord{Result: "FINISHED"}, t0))
		won = map[string]int{}
		later := t0.Add(window + time.Hour)
		for i := range repeats {
			wg.Go(func() {
				_, claimed, err := stores[i%2].ClaimCall(ctx, store.CallKey{GoID: key.GoID, Operation: key.Operation,
					Hash: store.RequestHash("call-0")}, later, window)
				assert.NoError(t, err)
				if claimed {
					mu.Lock()
					won["x"]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 1, won["x"])
	})

	// Refunds of a payment whose POST may have been sent (a baseline) and
	// whose outcome is not settled, others than the asking one.
	t.Run("LedgerUnsettledRefunds", func(t *testing.T) {
		s := open(t, fresh(t))
		k := func(h string) store.CallKey {
			return store.CallKey{GoID: 1, Operation: "partiallyRefundPayment", Hash: h}
		}
		claim := func(h string) string {
			c, claimed, err := s.ClaimCall(ctx, k(h), t0, window)
			require.NoError(t, err)
			require.True(t, claimed)
			return c.Claim
		}
		a, b, c := claim("a"), claim("b"), claim("c")
		claim("d") // pending without a baseline: never reached the gateway
		require.NoError(t, s.SetBaseline(ctx, k("a"), a, store.RefundBaseline{PaymentID: 7, Amount: 3000}, t0))
		require.NoError(t, s.SetBaseline(ctx, k("b"), b, store.RefundBaseline{PaymentID: 7, Amount: 500}, t0))
		require.NoError(t, s.SetBaseline(ctx, k("c"), c, store.RefundBaseline{PaymentID: 8, Amount: 3000}, t0))
		hashes := func(cs []store.Call) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.Key.Hash)
			}
			return out
		}
		got, err := s.UnsettledRefunds(ctx, 1, 7, k("a"))
		require.NoError(t, err)
		assert.Equal(t, []string{"b"}, hashes(got), "a asks; c is another payment's, d sent nothing")
		require.NoError(t, s.CallInDoubt(ctx, k("b"), b, "lost", t0))
		got, err = s.UnsettledRefunds(ctx, 1, 7, k("x"))
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"a", "b"}, hashes(got), "in doubt counts")
		for _, c := range got {
			require.NotNil(t, c.Baseline, "with its baseline and claim, to settle it")
			assert.Equal(t, map[string]int64{"a": 3000, "b": 500}[c.Key.Hash], c.Baseline.Amount)
			assert.Equal(t, map[string]string{"a": a, "b": b}[c.Key.Hash], c.Claim)
		}
		require.NoError(t, s.CallDone(ctx, k("b"), b, store.CallRecord{PaymentID: 7, Result: "FINISHED"}, t0))
		require.NoError(t, s.CallNotDone(ctx, k("a"), a))
		got, err = s.UnsettledRefunds(ctx, 1, 7, k("x"))
		require.NoError(t, err)
		assert.Empty(t, got, "settled")
		got, err = s.UnsettledRefunds(ctx, 2, 7, k("x"))
		require.NoError(t, err)
		assert.Empty(t, got, "another merchant's")
	})

	// The refund lock: one holder across stores (replicas) on one database.
	t.Run("LockOneHolder", func(t *testing.T) {
		dsn := fresh(t)
		a, b := open(t, dsn), open(t, dsn)
		unlock, ok, err := a.TryLock(ctx, "refund/1/3000000001", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		_, ok, err = b.TryLock(ctx, "refund/1/3000000001", time.Minute)
		require.NoError(t, err)
		assert.False(t, ok, "another replica does not get a held lock")
		_, ok, err = a.TryLock(ctx, "refund/1/3000000001", time.Minute)
		require.NoError(t, err)
		assert.False(t, ok, "nor does the same process a second time")
		other, ok, err := b.TryLock(ctx, "refund/1/3000000002", time.Minute)
		require.NoError(t, err)
		assert.True(t, ok, "another payment's lock is free")
		other()
		unlock()
		again, ok, err := b.TryLock(ctx, "refund/1/3000000001", time.Minute)
		require.NoError(t, err)
		require.True(t, ok, "free again once unlocked")
		again()
		_, _, err = a.TryLock(ctx, "", time.Minute)
		assert.Error(t, err, "a lock needs a name")
	})

	// A holder that dies does not keep the lock for ever.
	t.Run("LockOutlivesNoHolder", func(t *testing.T) {
		dsn := fresh(t)
		a, b := open(t, dsn), open(t, dsn)
		var ok bool
		var err error
		if strings.HasSuffix(dsn, ".db") {
			// SQLite: the row expires after its ttl.
			_, ok, err = a.TryLock(ctx, "refund/1/7", time.Nanosecond)
			require.NoError(t, err)
			require.True(t, ok)
			time.Sleep(2 * time.Millisecond) // past the expiry at the store's microsecond precision
		} else {
			// PostgreSQL: the lock ends with the holder's session, as when
			// its process dies and the server drops the connection.
			_, ok, err = a.TryLock(ctx, "refund/1/7", time.Minute)
			require.NoError(t, err)
			require.True(t, ok)
			db, err := sql.Open("pgx", dsn)
			require.NoError(t, err)
			defer db.Close()
			var killed int
			require.NoError(t, db.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l
				WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid <> pg_backend_pid()
				AND ((l.classid::bigint << 32) | l.objid::bigint) =
					('x' || substr(md5(coalesce(current_schema(), '') || '/refund/1/7'), 1, 16))::bit(64)::bigint`).Scan(&killed))
			require.Equal(t, 1, killed, "the holder's session")
		}
		// The server ends a terminated session soon, not at once: wait
		// for it (generously; the test never depends on how soon).
		var unlock func()
		ok = false
		for deadline := time.Now().Add(30 * time.Second); !ok && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			unlock, ok, err = b.TryLock(ctx, "refund/1/7", time.Minute)
			require.NoError(t, err)
		}
		assert.True(t, ok, "taken over from a holder that is gone")
		if ok {
			unlock()
		}
	})
}

// TestRequestHashUnchanged: the hash the ledger stores is the SHA-256 of
// each field's length (8 bytes, big-endian) and bytes, in order, whether
// the fields fit RequestHash's stack buffer or not: entries written before
// keep matching their calls.
func TestRequestHashUnchanged(t *testing.T) {
	// Computed apart (Python hashlib) from the definition above.
	assert.Equal(t, "589d205be992840e310efe6655eaba68d811cdf4cad49f2975d722b0828acc18", store.RequestHash("3000000001", "3000", "první refund"))
	streamed := func(fields ...string) string {
		h := sha256.New()
		var n [8]byte
		for _, f := range fields {
			binary.BigEndian.PutUint64(n[:], uint64(len(f)))
			h.Write(n[:])
			h.Write([]byte(f))
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	for _, fields := range [][]string{nil, {""}, {"a", "bc"}, {strings.Repeat("x", 1000), "y"}, {strings.Repeat("é", 3000)}} {
		assert.Equal(t, streamed(fields...), store.RequestHash(fields...))
	}
}
