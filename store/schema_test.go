package store_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/store"
)

// Inspect reads and never writes: an empty PostgreSQL schema stays empty
// (not even goose's table), a missing SQLite file is not created; both say
// every migration is pending.
func TestInspectChangesNothing(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.PostgresSchema(t)
	state, server, err := store.Inspect(ctx, dsn)
	require.NoError(t, err)
	assert.False(t, state.Exists)
	assert.Equal(t, int64(0), state.Version)
	assert.Equal(t, state.Latest, state.Pending[len(state.Pending)-1])
	assert.Equal(t, int64(1), state.Pending[0])
	assert.False(t, state.Current())
	assert.Contains(t, state.String(), "empty: ")
	require.NotNil(t, server)
	assert.Positive(t, server.Max)
	assert.Positive(t, server.InUse)
	assert.Equal(t, 0, testenv.RelationsInSchema(t, dsn), "inspect created something")

	// Opened without migrating: nothing created either.
	s, err := store.OpenWith(ctx, dsn, store.Options{NoMigrate: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Equal(t, 0, testenv.RelationsInSchema(t, dsn), "open without migrating created something")

	file := filepath.Join(t.TempDir(), "never.db")
	state, server, err = store.Inspect(ctx, file)
	require.NoError(t, err)
	assert.Nil(t, server)
	assert.False(t, state.Exists)
	assert.NotEmpty(t, state.Pending)
	_, err = os.Stat(file)
	assert.True(t, os.IsNotExist(err), "inspect created the SQLite file")
}

// Migrate applies what is pending and reports it; again it applies
// nothing; a schema a newer binary migrated is reported as such, and
// opening it (migrating) leaves the newer version in place.
func TestMigrateAndInspect(t *testing.T) {
	for name, fresh := range map[string]freshDSN{"sqlite": sqliteDSN, "postgres": testenv.PostgresSchema} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dsn := fresh(t)
			applied, state, err := store.Migrate(ctx, dsn)
			require.NoError(t, err)
			assert.Equal(t, state.Latest, int64(len(applied)), "every migration applied, one by one")
			assert.True(t, state.Exists)
			assert.True(t, state.Current(), state.String())
			assert.Equal(t, state.Latest, state.Version)
			assert.Equal(t, "current (version "+strconv.FormatInt(state.Latest, 10)+")", state.String())

			applied, state, err = store.Migrate(ctx, dsn)
			require.NoError(t, err)
			assert.Empty(t, applied)
			assert.True(t, state.Current())

			// A newer binary's migration.
			driver := "sqlite"
			if name == "postgres" {
				driver = "pgx"
			}
			db, err := sql.Open(driver, dsn)
			require.NoError(t, err)
			_, err = db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, true)`)
			require.NoError(t, err)
			require.NoError(t, db.Close())
			state, _, err = store.Inspect(ctx, dsn)
			require.NoError(t, err)
			assert.True(t, state.Newer())
			assert.True(t, state.Current())
			assert.Equal(t, int64(99), state.Version)
			assert.Contains(t, state.String(), "newer than this binary")
			s, err := store.Open(ctx, dsn)
			require.NoError(t, err)
			require.NoError(t, s.Close())
		})
	}
}

// With MaxConns 2 one connection serves the refund locks and one the
// queries: a second lock waits for the first to be released while the
// queries of the refund holding the first go on. (Sharing one pool, the
// second lock would take the last connection and the queries would wait.)
func TestLockConnectionsApart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testenv.PostgresSchema(t)
	s, err := store.OpenWith(ctx, dsn, store.Options{MaxConns: 2})
	require.NoError(t, err)
	defer s.Close()
	unlockA, ok, err := s.TryLock(ctx, "refund/a", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	second := make(chan error, 1)
	go func() {
		unlockB, ok, err := s.TryLock(ctx, "refund/b", time.Minute)
		if err == nil && ok {
			unlockB()
		}
		second <- err
	}()
	require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 1, ProductName: "during a lock"}))
	got, err := s.Session(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, "during a lock", got.ProductName)
	unlockA()
	require.NoError(t, <-second)

	_, err = store.OpenWith(ctx, dsn, store.Options{MaxConns: 1})
	assert.ErrorContains(t, err, "too few")
	assert.Equal(t, 4, store.LockConns(16))
	assert.Equal(t, 1, store.LockConns(2))
}
