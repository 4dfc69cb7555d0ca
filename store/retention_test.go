package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/store"
)

func TestRetentionValidate(t *testing.T) {
	r := store.DefaultRetention()
	require.NoError(t, r.Validate(24*time.Hour))
	assert.ErrorContains(t, r.Validate(60*24*time.Hour), "replay window", "the ledger must outlast every window")
	short := r
	short.Delivered = time.Hour
	assert.ErrorContains(t, short.Validate(time.Hour), "delivered")
	short = r
	short.Sessions = 30 * 24 * time.Hour
	assert.ErrorContains(t, short.Validate(time.Hour), "sessions")
	short = r
	short.Dead = 0
	assert.Error(t, short.Validate(time.Hour))
}

func retentionSuite(t *testing.T, fresh freshDSN, driver string) {
	ctx := context.Background()
	day := 24 * time.Hour

	t.Run("ReturnToken", func(t *testing.T) {
		s := open(t, fresh(t))
		in := store.Session{PaymentID: 21, GoID: 1, ProductName: "p", TokenHash: store.HashReturnToken("tok-9f2c"), CreatedAt: t0}
		require.NoError(t, s.SaveSession(ctx, in))
		got, err := s.Session(ctx, 21)
		require.NoError(t, err)
		assert.Equal(t, store.HashReturnToken("tok-9f2c"), got.TokenHash)

		in.TokenHash, in.ProductName = "", "re-saved"
		require.NoError(t, s.SaveSession(ctx, in))
		got, err = s.Session(ctx, 21)
		require.NoError(t, err)
		assert.Equal(t, "re-saved", got.ProductName)
		assert.Equal(t, store.HashReturnToken("tok-9f2c"), got.TokenHash, "a save without a token keeps the stored one")

		in.TokenHash = store.HashReturnToken("tok-new")
		require.NoError(t, s.SaveSession(ctx, in))
		got, err = s.Session(ctx, 21)
		require.NoError(t, err)
		assert.Equal(t, store.HashReturnToken("tok-new"), got.TokenHash)

		require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 22, GoID: 1}))
		got, err = s.Session(ctx, 22)
		require.NoError(t, err)
		assert.Empty(t, got.TokenHash)
	})

	t.Run("Purge", func(t *testing.T) {
		s := open(t, fresh(t))
		now := t0.Add(1000 * day)
		r := store.DefaultRetention()

		// Sessions: one past retention (with a token), one within.
		old := store.Session{PaymentID: 1, GoID: 1, TokenHash: store.HashReturnToken("old-tok"), CreatedAt: now.Add(-r.Sessions - time.Hour)}
		kept := store.Session{PaymentID: 2, GoID: 1, TokenHash: store.HashReturnToken("new-tok"), CreatedAt: now.Add(-r.Sessions + time.Hour)}
		require.NoError(t, s.SaveSession(ctx, old))
		require.NoError(t, s.SaveSession(ctx, kept))

		// Ledger: one old, one recent.
		oldKey := store.CallKey{GoID: 1, Operation: "capturePayment", Hash: store.RequestHash("old")}
		newKey := store.CallKey{GoID: 1, Operation: "capturePayment", Hash: store.RequestHash("new")}
		_, _, err := s.ClaimCall(ctx, oldKey, now.Add(-r.Ledger-time.Hour), day)
		require.NoError(t, err)
		_, _, err = s.ClaimCall(ctx, newKey, now.Add(-time.Hour), day)
		require.NoError(t, err)

		// Outbox: delivered, dead and pending rows, all enqueued long ago.
		for _, k := range []string{"delivered", "dead", "pending"} {
			_, err := s.Enqueue(ctx, store.Notification{Key: k, URL: "u", NextAttempt: t0, CreatedAt: t0})
			require.NoError(t, err)
		}
		ns, err := s.Claim(ctx, t0, 10, time.Minute)
		require.NoError(t, err)
		for _, n := range ns {
			switch n.Key {
			case "delivered":
				require.NoError(t, s.Delivered(ctx, n.ID))
			case "dead":
				require.NoError(t, s.Dead(ctx, n.ID, "404"))
			}
		}

		// The outbox rows were finished now (wall clock): within retention.
		pc, err := s.Purge(ctx, time.Now(), r)
		require.NoError(t, err)
		assert.Equal(t, store.PurgeCounts{}, pc, "at the wall clock nothing is old enough: the rows were finished just now, the rest dated in the future")

		c, err := s.Purge(ctx, now, r)
		require.NoError(t, err)
		assert.Equal(t, store.PurgeCounts{Delivered: 1, Dead: 1, Ledger: 1, Sessions: 1}, c)

		_, err = s.Session(ctx, 1)
		assert.ErrorIs(t, err, store.ErrNotFound)
		got, err := s.Session(ctx, 2)
		require.NoError(t, err)
		assert.Equal(t, store.HashReturnToken("new-tok"), got.TokenHash)
		counts, err := s.Counts(ctx)
		require.NoError(t, err)
		assert.Equal(t, store.OutboxCounts{Pending: 1}, counts, "pending notifications are never purged")
		_, claimed, err := s.ClaimCall(ctx, newKey, now, day)
		require.NoError(t, err)
		assert.False(t, claimed, "a recent entry is kept")
		_, claimed, err = s.ClaimCall(ctx, oldKey, now.Add(-r.Ledger-time.Hour), 100*day)
		require.NoError(t, err)
		assert.True(t, claimed, "the old entry is gone")

		// A re-created session with the purged payment's id has no token
		// left over from the purged one.
		require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 1, GoID: 1, CreatedAt: now}))
		got, err = s.Session(ctx, 1)
		require.NoError(t, err)
		assert.Empty(t, got.TokenHash)

		_, err = s.Purge(ctx, now, store.Retention{})
		assert.Error(t, err, "zero retention is refused, not 'purge everything'")
	})

	t.Run("PurgeKeepsDedupeWithinRetention", func(t *testing.T) {
		s := open(t, fresh(t))
		r := store.DefaultRetention()
		n := store.Notification{Key: "3000000001:PAID:", URL: "u"}
		_, err := s.Enqueue(ctx, n)
		require.NoError(t, err)
		ns, err := s.Claim(ctx, time.Now(), 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, ns, 1)
		require.NoError(t, s.Delivered(ctx, ns[0].ID))

		_, err = s.Purge(ctx, time.Now().Add(r.Delivered-time.Hour), r)
		require.NoError(t, err)
		added, err := s.Enqueue(ctx, n)
		require.NoError(t, err)
		assert.False(t, added, "within the delivered retention a repeat of the gateway is still dropped")

		c, err := s.Purge(ctx, time.Now().Add(r.Delivered+time.Hour), r)
		require.NoError(t, err)
		assert.Equal(t, int64(1), c.Delivered)
		added, err = s.Enqueue(ctx, n)
		require.NoError(t, err)
		assert.True(t, added, "past it the key is free again")
	})

	t.Run("PurgeBatches", func(t *testing.T) {
		s := open(t, fresh(t))
		r := store.DefaultRetention()
		const total = 2001 // three batches
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < total; i += 8 {
					assert.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: int64(i + 1), GoID: 1,
						TokenHash: store.HashReturnToken(fmt.Sprint("t", i)), CreatedAt: t0}))
				}
			})
		}
		wg.Wait()
		c, err := s.Purge(ctx, t0.Add(r.Sessions+day), r)
		require.NoError(t, err)
		assert.Equal(t, int64(total), c.Sessions)
	})

	t.Run("UpgradeKeepsOldSessions", func(t *testing.T) {
		// A database at the first schema, with a session saved by the old
		// bridge, then opened by this one.
		dsn := fresh(t)
		dialect := goose.DialectPostgres
		dir := "migrations/postgres"
		if driver == "sqlite" {
			dialect, dir = goose.DialectSQLite3, "migrations/sqlite"
		}
		db, err := sql.Open(driver, dsn)
		require.NoError(t, err)
		defer db.Close()
		p, err := goose.NewProvider(dialect, db, os.DirFS(filepath.Clean(dir)), goose.WithDisableGlobalRegistry(true))
		require.NoError(t, err)
		_, err = p.UpTo(ctx, 1)
		require.NoError(t, err)
		q := `INSERT INTO sessions (payment_id, parent_id, goid, product_name, order_number, amount, currency, success_url, failed_url, created_at)
			VALUES (77, 0, 8123456789, 'old', 'OBJ-1', 100, 'CZK', 'https://shop.example/ok', 'https://shop.example/ko', '2030-05-17T10:00:00.000000Z')`
		_, err = db.ExecContext(ctx, q)
		require.NoError(t, err)

		s := open(t, dsn)
		got, err := s.Session(ctx, 77)
		require.NoError(t, err)
		assert.Equal(t, "old", got.ProductName)
		assert.Equal(t, "https://shop.example/ok", got.SuccessURL)
		assert.Empty(t, got.TokenHash, "a session from before the upgrade has no token")
		_, claimed, err := s.ClaimCall(ctx, store.CallKey{GoID: 1, Operation: "x", Hash: "h"}, t0, day)
		require.NoError(t, err)
		assert.True(t, claimed, "the ledger exists after the upgrade")
	})
}
