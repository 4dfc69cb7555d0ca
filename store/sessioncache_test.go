package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// openSQL opens dsn as the bridge does and returns the SQL store behind it,
// whose cache clock a test can move.
func openSQL(t *testing.T, dsn string) *sqlStore {
	t.Helper()
	st, err := Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	s, ok := st.(*sqlStore)
	require.True(t, ok, "Open returns the SQL store")
	return s
}

// Two replicas (two stores on one database) and what each may read.
func TestSessionCache(t *testing.T) {
	for name, fresh := range map[string]func(testing.TB) string{
		"sqlite":   func(t testing.TB) string { return filepath.Join(t.TempDir(), "bridge.db") },
		"postgres": testenv.PostgresSchema,
	} {
		t.Run(name, func(t *testing.T) { sessionCacheSuite(t, fresh(t)) })
	}
}

func sessionCacheSuite(t *testing.T, dsn string) {
	ctx := context.Background()
	a, b := openSQL(t, dsn), openSQL(t, dsn)
	clock := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	b.sessions.now = func() time.Time { return clock }
	sess := Session{PaymentID: 3000000001, GoID: 8123456789, ProductName: "kůň", OrderNumber: "42", Amount: 12900,
		Currency: "CZK", SuccessURL: "https://shop.example/ok", FailedURL: "https://shop.example/ko",
		CreatedAt: clock.Add(-time.Minute).Truncate(time.Millisecond), TokenHash: HashReturnToken("tok")}

	// A miss is not remembered: the row another replica writes next is found.
	_, err := b.Session(ctx, sess.PaymentID)
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, a.SaveSession(ctx, sess))
	got, err := b.Session(ctx, sess.PaymentID)
	require.NoError(t, err)
	require.Equal(t, sess.ProductName, got.ProductName)
	require.Equal(t, sess.TokenHash, got.TokenHash)
	require.True(t, sess.CreatedAt.Equal(got.CreatedAt))

	// A hit costs no database read: with its reader pool closed, b still
	// answers for the session it read, and only for it.
	b.r.Close()
	got, err = b.Session(ctx, sess.PaymentID)
	require.NoError(t, err)
	require.Equal(t, "42", got.OrderNumber)
	_, err = b.Session(ctx, sess.PaymentID+1)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNotFound)
	reopen(t, b, dsn)

	// The replica that saves a session again (a reused id) reads the new
	// row at once.
	again := sess
	again.ProductName, again.TokenHash = "nový", HashReturnToken("tok2")
	_, err = a.Session(ctx, sess.PaymentID)
	require.NoError(t, err)
	require.NoError(t, a.SaveSession(ctx, again))
	got, err = a.Session(ctx, sess.PaymentID)
	require.NoError(t, err)
	require.Equal(t, "nový", got.ProductName)
	require.Equal(t, HashReturnToken("tok2"), got.TokenHash)

	// Another replica keeps its row for at most the TTL.
	got, err = b.Session(ctx, sess.PaymentID)
	require.NoError(t, err)
	require.Equal(t, "kůň", got.ProductName, "within the TTL the read row is served")
	clock = clock.Add(sessionCacheTTL)
	got, err = b.Session(ctx, sess.PaymentID)
	require.NoError(t, err)
	require.Equal(t, "nový", got.ProductName, "after the TTL the row is read again")

	// A purge empties the purging replica's cache.
	_, err = b.Session(ctx, sess.PaymentID)
	require.NoError(t, err)
	r := Retention{Delivered: time.Hour, Dead: time.Hour, Ledger: time.Hour, Sessions: time.Hour}
	c, err := b.Purge(ctx, sess.CreatedAt.Add(2*time.Hour), r)
	require.NoError(t, err)
	require.Equal(t, int64(1), c.Sessions)
	_, err = b.Session(ctx, sess.PaymentID)
	require.ErrorIs(t, err, ErrNotFound)
}

// reopen gives s a fresh reader pool on dsn's database (a test closed it).
func reopen(t *testing.T, s *sqlStore, dsn string) {
	t.Helper()
	o := openSQL(t, dsn)
	// s runs on o's pools from now on (o's Close closes them): its own
	// writer and statements are closed here rather than left open.
	require.NoError(t, errors.Join(s.ws.close(), s.w.Close()))
	s.r, s.w, s.rs, s.ws = o.r, o.w, o.rs, o.ws
}
