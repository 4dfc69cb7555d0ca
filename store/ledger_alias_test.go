package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// A call keyed with Legacy is written under both keys with one claim: the
// previous release, which reads the legacy key alone, finds it under way,
// reconciles it from the baseline it writes in its own form, and replays
// it once done; a call that release holds under the legacy key is not
// claimed again. The alias row is not counted twice.
func TestLedgerAliasRows(t *testing.T) {
	for name, fresh := range map[string]func(testing.TB) string{
		"sqlite":   func(t testing.TB) string { return filepath.Join(t.TempDir(), "bridge.db") },
		"postgres": testenv.PostgresSchema,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := openSQL(t, fresh(t))
			at := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
			key := CallKey{GoID: 1, Operation: "partiallyRefundPayment", Hash: RequestHash("new"), Legacy: RequestHash("old")}
			old := key.legacy()

			mine, claimed, err := s.ClaimCall(ctx, key, at, time.Hour)
			require.NoError(t, err)
			require.True(t, claimed)
			seen, claimed, err := s.ClaimCall(ctx, old, at, time.Hour) // the previous release
			require.NoError(t, err)
			require.False(t, claimed, "the previous release finds the call under its key")
			assert.Equal(t, CallPending, seen.State)
			assert.Equal(t, mine.Claim, seen.Claim)
			c, err := s.LedgerCounts(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, c.Pending, "the alias row is not counted")

			require.NoError(t, s.SetBaseline(ctx, key, mine.Claim, RefundBaseline{PaymentID: 7, Amount: 300, RefundIDs: []int64{4, 5}}, at))
			seen, err = s.LookupCall(ctx, old)
			require.NoError(t, err)
			assert.Equal(t, "before the gateway call baseline=ids:300:4,5", seen.Note, "the baseline as the previous release writes and reads it")
			un, err := s.UnsettledRefunds(ctx, 1, 7, CallKey{})
			require.NoError(t, err)
			assert.Len(t, un, 1, "one call, one unsettled refund")

			require.NoError(t, s.CallDone(ctx, key, mine.Claim, CallRecord{PaymentID: 7, Result: "FINISHED"}, at))
			seen, err = s.LookupCall(ctx, old)
			require.NoError(t, err)
			assert.Equal(t, CallDone, seen.State)
			assert.Equal(t, "FINISHED", seen.Result, "the previous release replays the result")
			// A repeat is answered by the claim, the next one by a read
			// (heldEntry): the same entry, under the pair's key.
			byClaim, claimed, err := s.ClaimCall(ctx, key, at, time.Hour)
			require.NoError(t, err)
			require.False(t, claimed)
			require.True(t, s.repeats.Contains(key))
			byRead, claimed, err := s.ClaimCall(ctx, key, at, time.Hour)
			require.NoError(t, err)
			require.False(t, claimed)
			assert.Equal(t, key, byRead.Key, "finishing it finishes both rows")
			assert.Equal(t, byClaim, byRead)

			// The previous release claimed first: the pair is not claimed,
			// and its first row is not left behind.
			key2 := CallKey{GoID: 1, Operation: "capturePayment", Hash: RequestHash("new2"), Legacy: RequestHash("old2")}
			theirs, claimed, err := s.ClaimCall(ctx, key2.legacy(), at, time.Hour)
			require.NoError(t, err)
			require.True(t, claimed)
			got, claimed, err := s.ClaimCall(ctx, key2, at, time.Hour)
			require.NoError(t, err)
			require.False(t, claimed, "the previous release holds the call")
			assert.Equal(t, key2.legacy(), got.Key, "the entry found is the previous release's")
			assert.Equal(t, theirs.Claim, got.Claim)
			_, err = s.LookupCall(ctx, CallKey{GoID: 1, Operation: "capturePayment", Hash: key2.Hash})
			assert.ErrorIs(t, err, ErrNotFound, "the first row was rolled back")

			// Released as not done: both rows go, a repeat claims both.
			key3 := CallKey{GoID: 1, Operation: "capturePayment", Hash: RequestHash("new3"), Legacy: RequestHash("old3")}
			h, claimed, err := s.ClaimCall(ctx, key3, at, time.Hour)
			require.NoError(t, err)
			require.True(t, claimed)
			require.NoError(t, s.CallNotDone(ctx, key3, h.Claim))
			_, err = s.LookupCall(ctx, key3.legacy())
			assert.ErrorIs(t, err, ErrNotFound)
			h, claimed, err = s.ClaimCall(ctx, key3, at, time.Hour)
			require.NoError(t, err)
			assert.True(t, claimed)
			// Finished through the first row's key alone (as UnsettledRefunds
			// lists it): the alias row follows.
			require.NoError(t, s.CallInDoubt(ctx, CallKey{GoID: 1, Operation: "capturePayment", Hash: key3.Hash}, h.Claim, "reset", at))
			seen, err = s.LookupCall(ctx, key3.legacy())
			require.NoError(t, err)
			assert.Equal(t, CallInDoubt, seen.State)
			require.NoError(t, s.CallNotDone(ctx, CallKey{GoID: 1, Operation: "capturePayment", Hash: key3.Hash}, h.Claim))
			_, err = s.LookupCall(ctx, key3.legacy())
			assert.ErrorIs(t, err, ErrNotFound)
		})
	}
}

// Each replica sees the others that beat lately; Beside tells which it may
// serve with.
func TestReplicaBoard(t *testing.T) {
	for name, fresh := range map[string]func(testing.TB) string{
		"sqlite":   func(t testing.TB) string { return filepath.Join(t.TempDir(), "bridge.db") },
		"postgres": testenv.PostgresSchema,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := openSQL(t, fresh(t))
			v, err := s.SchemaVersion()
			require.NoError(t, err)
			assert.GreaterOrEqual(t, v, int64(12))
			a := Replica{ID: "a", Release: "new", Schema: v, RunsBeside: RunsBesideSchema}
			b := Replica{ID: "b", Release: "next", Schema: v + 1, RunsBeside: v + 1}
			_, err = s.Heartbeat(ctx, a, time.Minute)
			require.NoError(t, err)
			live, err := s.Heartbeat(ctx, b, time.Minute)
			require.NoError(t, err)
			require.Len(t, live, 2)
			assert.False(t, a.Beside(live[1]), "a release that stopped writing what this one reads")
			assert.True(t, a.Beside(Replica{Schema: RunsBesideSchema, RunsBeside: 1}))
			require.NoError(t, s.LeaveBoard(ctx, "b"))
			live, err = s.Heartbeat(ctx, a, time.Minute)
			require.NoError(t, err)
			assert.Len(t, live, 1)
		})
	}
}
