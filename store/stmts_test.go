package store

import (
	"context"
	"database/sql/driver"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// On SQLite the hot statements are prepared once, on the pool that runs
// them; PostgreSQL has pgx's own cache and none here.
func TestHotStatementsPrepared(t *testing.T) {
	s := openSQL(t, filepath.Join(t.TempDir(), "bridge.db"))
	for _, q := range []string{s.lq.insert, s.lq.takeOver, s.lq.get, s.lq.done, s.q.saveSession, s.q.saveToken, s.q.enqueue} {
		require.NotNil(t, s.ws.of(q), "writer statement not prepared: %.60s", q)
	}
	require.NotNil(t, s.rs.of(s.q.session))
	require.NotNil(t, s.rs.of(s.lq.get))
	require.Nil(t, s.rs.of(s.lq.insert), "the readers are query_only: no write is prepared on them")
	// And the store runs them: closed, the reads that use them fail.
	ctx := context.Background()
	require.NoError(t, s.ws.of(s.lq.get).Close())
	_, err := s.LookupCall(ctx, CallKey{GoID: 1, Operation: "capturePayment", Hash: "feed"})
	require.ErrorContains(t, err, "statement is closed", "LookupCall reads with the writer's prepared statement")
	require.NoError(t, s.rs.of(s.q.session).Close())
	_, err = s.Session(ctx, 3000000001)
	require.ErrorContains(t, err, "statement is closed", "Session reads with the readers' prepared statement")

	mem := openSQL(t, "file::memory:")
	require.Same(t, mem.ws, mem.rs, ":memory: has one pool")
	require.NotNil(t, mem.ws.of(mem.lq.get))
	require.NotNil(t, mem.rs.of(mem.q.session), "the readers' statements too")

	pg := openSQL(t, testenv.PostgresSchema(t))
	require.Nil(t, pg.ws)
	require.Nil(t, pg.rs)
}

// A repeat of a call this process saw repeated finds its entry with a
// read: it does not wait for the write lock that another transaction
// holds (a claim of a new call would), so a retry storm of repeats does
// not queue behind the writer.
// Without the read first, the SQLite claim below waits for the lock and
// fails after busy_timeout. On PostgreSQL the row lock held does not stop
// those statements (the rows do not match the take-over's condition); the
// subtest checks that the read answers what the claim did.
func TestRepeatClaimTakesNoWriteLock(t *testing.T) {
	for name, fresh := range map[string]func(testing.TB) string{
		"sqlite":   func(t testing.TB) string { return filepath.Join(t.TempDir(), "bridge.db") },
		"postgres": testenv.PostgresSchema,
	} {
		t.Run(name, func(t *testing.T) {
			dsn := fresh(t)
			s := openSQL(t, dsn)
			ctx := context.Background()
			now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			key := CallKey{GoID: 8123456789, Operation: "createPayment", Hash: "feed"}
			done := CallKey{GoID: 8123456789, Operation: "createPayment", Hash: "beef"}
			first, claimed, err := s.ClaimCall(ctx, key, now, time.Hour)
			require.NoError(t, err)
			require.True(t, claimed)
			c2, claimed, err := s.ClaimCall(ctx, done, now, time.Hour)
			require.NoError(t, err)
			require.True(t, claimed)
			require.NoError(t, s.CallDone(ctx, done, c2.Claim, CallRecord{PaymentID: 7, Result: "CALL_COMPLETED"}, now))
			// Each is repeated once: from then on this process reads first.
			for _, k := range []CallKey{key, done} {
				_, claimed, err = s.ClaimCall(ctx, k, now, time.Hour)
				require.NoError(t, err)
				require.False(t, claimed)
			}

			// Another connection takes the write lock and keeps it.
			holder := s.w
			if name == "sqlite" {
				holder = openSQL(t, dsn).w
			}
			tx, err := holder.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer tx.Rollback()
			if name == "sqlite" {
				// _txlock=immediate: BEGIN took the write lock; make sure.
				_, err = tx.ExecContext(ctx, `UPDATE ledger SET note = note WHERE 0`)
			} else {
				_, err = tx.ExecContext(ctx, `SELECT 1 FROM ledger FOR UPDATE`)
			}
			require.NoError(t, err)

			wait, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			got, claimed, err := s.ClaimCall(wait, key, now.Add(time.Minute), time.Hour)
			require.NoError(t, err, "a pending entry is answered with a read")
			require.False(t, claimed)
			require.Equal(t, CallPending, got.State)
			require.Equal(t, first.Claim, got.Claim)

			got, claimed, err = s.ClaimCall(wait, done, now.Add(time.Minute), time.Hour)
			require.NoError(t, err, "a done entry within the window is answered with a read")
			require.False(t, claimed)
			require.Equal(t, CallDone, got.State)
			require.Equal(t, int64(7), got.PaymentID)
			require.NoError(t, tx.Rollback())

			// Past the window the read decides nothing: the claim takes the
			// entry over, as before.
			_, claimed, err = s.ClaimCall(ctx, done, now.Add(2*time.Hour), time.Hour)
			require.NoError(t, err)
			require.True(t, claimed)
		})
	}
}

// The writer's connection, replaced after an error (a bad connection is
// dropped by database/sql), gets the statements prepared again on the new
// one: outside a transaction on first use, inside one by tx.StmtContext on
// the connection the transaction holds (no wait for another, which the
// single writer could not give).
func TestPreparedAfterWriterReplaced(t *testing.T) {
	s := openSQL(t, filepath.Join(t.TempDir(), "bridge.db"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	claimDone := func(hash string) {
		t.Helper()
		key := CallKey{GoID: 8123456789, Operation: "capturePayment", Hash: hash, Legacy: hash + "-old"}
		c, claimed, err := s.ClaimCall(ctx, key, now, time.Hour)
		require.NoError(t, err)
		require.True(t, claimed)
		require.NoError(t, s.CallDone(ctx, key, c.Claim, CallRecord{PaymentID: 7, Result: "FINISHED"}, now))
		got, claimed, err := s.ClaimCall(ctx, key, now, time.Hour)
		require.NoError(t, err)
		require.False(t, claimed)
		require.Equal(t, "FINISHED", got.Result)
	}
	claimDone("a1")

	// The writer's one connection goes bad: database/sql closes it.
	conn, err := s.w.Conn(ctx)
	require.NoError(t, err)
	require.ErrorIs(t, conn.Raw(func(any) error { return driver.ErrBadConn }), driver.ErrBadConn)
	require.Zero(t, s.w.Stats().OpenConnections, "the connection is gone")

	claimDone("b2") // a pair: its claim and its outcome are transactions
	_, err = s.Enqueue(ctx, Notification{Key: "k1", GoID: 8123456789, PaymentID: 7, URL: "https://shop.example/n",
		NextAttempt: now, CreatedAt: now})
	require.NoError(t, err)
	require.NoError(t, ctx.Err())
}
