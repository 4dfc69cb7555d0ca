package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/store"
)

// freshDSN returns the DSN of a new, empty database that lives until the
// test ends. The suite opens it itself, so it can reopen the same database
// (durability) or open it twice (two processes).
type freshDSN func(t testing.TB) string

func sqliteDSN(t testing.TB) string {
	return filepath.Join(t.TempDir(), "soapbridge.db")
}

func open(t testing.TB, dsn string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// rawDB opens dsn (a test's SQLite file or PostgreSQL URL) with its
// database/sql driver, to see rows as stored.
func rawDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	driver := "sqlite"
	if strings.HasPrefix(dsn, "postgres") {
		driver = "pgx"
	}
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSQLite(t *testing.T) {
	suite(t, sqliteDSN)
	ledgerSuite(t, sqliteDSN)
	retentionSuite(t, sqliteDSN, "sqlite")
}

func TestPostgres(t *testing.T) {
	suite(t, testenv.PostgresSchema)
	ledgerSuite(t, testenv.PostgresSchema)
	retentionSuite(t, testenv.PostgresSchema, "pgx")
}

// t0 is the outbox clock of the tests: Claim takes the time from the
// caller, so no test depends on the wall clock.
var t0 = time.Date(2030, 5, 17, 10, 0, 0, 0, time.UTC)

func suite(t *testing.T, fresh freshDSN) {
	ctx := context.Background()

	t.Run("NotificationKeepsRequestID", func(t *testing.T) {
		s := open(t, fresh(t))
		_, err := s.Enqueue(ctx, store.Notification{GoID: 1, PaymentID: 7, Key: "7:PAID", URL: "http://shop/n?id=7", RequestID: "req-abc"})
		require.NoError(t, err)
		_, err = s.Enqueue(ctx, store.Notification{GoID: 1, PaymentID: 8, Key: "8:PAID", URL: "http://shop/n?id=8"})
		require.NoError(t, err)
		got, err := s.Claim(ctx, time.Now().Add(time.Second), 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, got, 2)
		ids := map[int64]string{}
		for _, n := range got {
			ids[n.PaymentID] = n.RequestID
		}
		assert.Equal(t, map[int64]string{7: "req-abc", 8: ""}, ids)
	})

	// A notification queued unsigned comes back unsigned with its URL as
	// given, while its row's url starts with a scheme no sender knows: a
	// replica of an earlier version fails the attempt instead of sending
	// the shop a notification without its signature.
	t.Run("NotificationUnsigned", func(t *testing.T) {
		dsn := fresh(t)
		s := open(t, dsn)
		_, err := s.Enqueue(ctx, store.Notification{GoID: 1, PaymentID: 9, Key: "9:PAID", URL: "https://shop/n?id=9", Unsigned: true})
		require.NoError(t, err)
		_, err = s.Enqueue(ctx, store.Notification{GoID: 1, PaymentID: 10, Key: "10:PAID", URL: "https://shop/n?id=10&sig=x"})
		require.NoError(t, err)
		got, err := s.Claim(ctx, time.Now().Add(time.Second), 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, got, 2)
		byID := map[int64]store.Notification{got[0].PaymentID: got[0], got[1].PaymentID: got[1]}
		assert.True(t, byID[9].Unsigned)
		assert.Equal(t, "https://shop/n?id=9", byID[9].URL)
		assert.False(t, byID[10].Unsigned)
		assert.Equal(t, "https://shop/n?id=10&sig=x", byID[10].URL)

		var raw string
		require.NoError(t, rawDB(t, dsn).QueryRowContext(ctx, "SELECT url FROM outbox WHERE payment_id = 9").Scan(&raw))
		u, err := url.Parse(raw)
		require.NoError(t, err)
		assert.Equal(t, "unsigned", u.Scheme, "an earlier version's HTTP client refuses the row: %s", raw)
	})

	// The children of a recurring parent: the sessions naming it, oldest
	// payment first, with their tokens.
	t.Run("Children", func(t *testing.T) {
		s := open(t, fresh(t))
		for _, ss := range []store.Session{
			{PaymentID: 30, ParentID: 10, GoID: 1, OrderNumber: "R-2", Amount: 500, Currency: "CZK", CreatedAt: t0.Add(time.Minute)},
			{PaymentID: 20, ParentID: 10, GoID: 1, OrderNumber: "R-1", Amount: 500, Currency: "CZK", CreatedAt: t0, TokenHash: store.HashReturnToken("tok")},
			{PaymentID: 10, GoID: 1, OrderNumber: "P", Amount: 500, Currency: "CZK", CreatedAt: t0},
			{PaymentID: 40, ParentID: 11, GoID: 1, OrderNumber: "X", Amount: 1, Currency: "CZK", CreatedAt: t0},
		} {
			require.NoError(t, s.SaveSession(ctx, ss))
		}
		kids, err := s.Children(ctx, 10)
		require.NoError(t, err)
		require.Len(t, kids, 2)
		assert.Equal(t, []int64{20, 30}, []int64{kids[0].PaymentID, kids[1].PaymentID})
		assert.Equal(t, store.HashReturnToken("tok"), kids[0].TokenHash)
		assert.Equal(t, t0.Add(time.Minute), kids[1].CreatedAt)
		none, err := s.Children(ctx, 20)
		require.NoError(t, err)
		assert.Empty(t, none)
	})

	t.Run("Sessions", func(t *testing.T) {
		s := open(t, fresh(t))
		_, err := s.Session(ctx, 3000000001)
		assert.ErrorIs(t, err, store.ErrNotFound)

		prague := time.FixedZone("CEST", 2*3600)
		in := store.Session{
			PaymentID: 3000000001, ParentID: 3000000000, GoID: 8123456789,
			ProductName: "Čaj – zelený", OrderNumber: "OBJ-42", Amount: 12345, Currency: "CZK",
			SuccessURL: "https://shop.example/ok?x=1&y=2", FailedURL: "https://shop.example/ko",
			CreatedAt:       time.Date(2030, 5, 17, 12, 30, 15, 123456789, prague),
			PaymentChannels: "cz_ge, cz_vb,cz_sms",
		}
		require.NoError(t, s.SaveSession(ctx, in))
		got, err := s.Session(ctx, in.PaymentID)
		require.NoError(t, err)
		want := in
		// Stored in UTC at microsecond precision.
		want.CreatedAt = time.Date(2030, 5, 17, 10, 30, 15, 123456000, time.UTC)
		assert.Equal(t, want, got)

		in.ProductName, in.Amount, in.ParentID, in.PaymentChannels = "Jiný", 500, 0, ""
		require.NoError(t, s.SaveSession(ctx, in), "saving the same payment again replaces it")
		got, err = s.Session(ctx, in.PaymentID)
		require.NoError(t, err)
		assert.Equal(t, "Jiný", got.ProductName)
		assert.Equal(t, int64(500), got.Amount)
		assert.Equal(t, int64(0), got.ParentID)
		assert.Equal(t, "", got.PaymentChannels)

		require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 7, GoID: 1}))
		got, err = s.Session(ctx, 7)
		require.NoError(t, err)
		assert.False(t, got.CreatedAt.IsZero(), "a zero CreatedAt is set on save")
		assert.Equal(t, time.UTC, got.CreatedAt.Location())
	})

	t.Run("Durable", func(t *testing.T) {
		dsn := fresh(t)
		s := open(t, dsn)
		sess := store.Session{PaymentID: 11, GoID: 8123456789, ProductName: "p", OrderNumber: "o",
			Amount: 100, Currency: "EUR", SuccessURL: "s", FailedURL: "f", CreatedAt: t0}
		require.NoError(t, s.SaveSession(ctx, sess))
		added, err := s.Enqueue(ctx, store.Notification{GoID: 8123456789, PaymentID: 11,
			Key: "11:PAID:", URL: "https://shop.example/notify?id=11", NextAttempt: t0, CreatedAt: t0})
		require.NoError(t, err)
		require.True(t, added)
		require.NoError(t, s.Close())

		s = open(t, dsn) // migrations run again: a no-op
		got, err := s.Session(ctx, 11)
		require.NoError(t, err)
		assert.Equal(t, sess, got)
		c, err := s.Counts(ctx)
		require.NoError(t, err)
		assert.Equal(t, store.OutboxCounts{Pending: 1}, c)
		claimed, err := s.Claim(ctx, t0, 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		assert.Equal(t, "https://shop.example/notify?id=11", claimed[0].URL)
		added, err = s.Enqueue(ctx, store.Notification{Key: "11:PAID:", URL: "x"})
		require.NoError(t, err)
		assert.False(t, added, "dedupe survives a restart")
	})

	t.Run("EnqueueDedupe", func(t *testing.T) {
		s := open(t, fresh(t))
		n := store.Notification{GoID: 1, PaymentID: 5, Key: "5:PAID:", URL: "https://shop.example/n?id=5", NextAttempt: t0}
		added, err := s.Enqueue(ctx, n)
		require.NoError(t, err)
		assert.True(t, added)
		added, err = s.Enqueue(ctx, n)
		require.NoError(t, err)
		assert.False(t, added, "the same change announced twice collapses")
		n.Key = "5:REFUNDED:"
		added, err = s.Enqueue(ctx, n)
		require.NoError(t, err)
		assert.True(t, added, "another change of the same payment is a new notification")

		c, err := s.Counts(ctx)
		require.NoError(t, err)
		assert.Equal(t, store.OutboxCounts{Pending: 2}, c)

		_, err = s.Enqueue(ctx, store.Notification{URL: "https://shop.example/n"})
		assert.Error(t, err, "a notification needs a key")
		_, err = s.Enqueue(ctx, store.Notification{Key: "k"})
		assert.Error(t, err, "a notification needs a URL")
	})

	t.Run("ClaimLease", func(t *testing.T) {
		s := open(t, fresh(t))
		for i, due := range []time.Time{t0.Add(time.Minute), t0, t0.Add(time.Second)} {
			_, err := s.Enqueue(ctx, store.Notification{GoID: 1, PaymentID: int64(i), Key: fmt.Sprint("k", i),
				URL: fmt.Sprint("u", i), NextAttempt: due, CreatedAt: t0.Add(-time.Hour)})
			require.NoError(t, err)
		}
		keys := func(ns []store.Notification) []string {
			var k []string
			for _, n := range ns {
				k = append(k, n.Key)
			}
			return k
		}
		claim := func(at time.Time, limit int) []string {
			t.Helper()
			ns, err := s.Claim(ctx, at, limit, 30*time.Second)
			require.NoError(t, err)
			return keys(ns)
		}

		assert.Empty(t, claim(t0.Add(-time.Millisecond), 10), "nothing due yet")
		assert.Equal(t, []string{"k1"}, claim(t0.Add(time.Second), 1), "limit honoured, most overdue first")
		assert.Equal(t, []string{"k2"}, claim(t0.Add(5*time.Second), 10), "k1 leased, k0 not due")
		assert.Empty(t, claim(t0.Add(30*time.Second), 10), "leases still running")
		assert.Equal(t, []string{"k1"}, claim(t0.Add(31*time.Second), 10), "k1's lease ran out: claimable again")
		assert.Equal(t, []string{"k1", "k2", "k0"}, claim(t0.Add(time.Hour), 10))

		ns, err := s.Claim(ctx, t0.Add(2*time.Hour), 10, 30*time.Second)
		require.NoError(t, err)
		require.Len(t, ns, 3)
		n := ns[0]
		assert.Equal(t, "k1", n.Key)
		assert.Equal(t, "u1", n.URL)
		assert.Equal(t, int64(1), n.PaymentID)
		assert.Equal(t, int64(1), n.GoID)
		assert.Equal(t, t0, n.NextAttempt)
		assert.Equal(t, t0.Add(-time.Hour), n.CreatedAt)
		assert.Zero(t, n.Attempts)
		assert.NotZero(t, n.ID)

		_, err = s.Claim(ctx, t0, 10, 0)
		assert.Error(t, err, "a lease must be positive")
		ns, err = s.Claim(ctx, t0.Add(3*time.Hour), 0, time.Second)
		assert.NoError(t, err)
		assert.Empty(t, ns)
	})

	t.Run("RetryDeliveredDead", func(t *testing.T) {
		s := open(t, fresh(t))
		ids := map[string]int64{}
		for _, k := range []string{"a", "b", "c"} {
			_, err := s.Enqueue(ctx, store.Notification{Key: k, URL: "u-" + k, NextAttempt: t0})
			require.NoError(t, err)
		}
		ns, err := s.Claim(ctx, t0, 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, ns, 3)
		for _, n := range ns {
			ids[n.Key] = n.ID
		}

		next := t0.Add(10 * time.Second)
		require.NoError(t, s.Retry(ctx, ids["a"], next, "HTTP 500"))
		require.NoError(t, s.Delivered(ctx, ids["b"]))
		require.NoError(t, s.Dead(ctx, ids["c"], "HTTP 404"))

		c, err := s.Counts(ctx)
		require.NoError(t, err)
		assert.Equal(t, store.OutboxCounts{Pending: 1, Delivered: 1, Dead: 1}, c)

		ns, err = s.Claim(ctx, next.Add(-time.Microsecond), 10, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, ns, "a retry waits for its time (the lease ended with Retry)")
		ns, err = s.Claim(ctx, next, 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, ns, 1, "only the retried one comes back; delivered and dead never do")
		assert.Equal(t, "a", ns[0].Key)
		assert.Equal(t, 1, ns[0].Attempts)
		assert.Equal(t, "HTTP 500", ns[0].LastError)
		assert.Equal(t, next, ns[0].NextAttempt)

		require.NoError(t, s.Retry(ctx, ids["a"], next.Add(time.Minute), strings.Repeat("é", 5000)))
		ns, err = s.Claim(ctx, next.Add(time.Hour), 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, ns, 1)
		assert.Equal(t, 2, ns[0].Attempts)
		assert.LessOrEqual(t, len(ns[0].LastError), 1000, "a huge error is clipped")
		assert.True(t, strings.HasPrefix(ns[0].LastError, "éé"))

		// Late reports on finished rows change nothing.
		require.NoError(t, s.Delivered(ctx, ids["a"]))
		require.NoError(t, s.Retry(ctx, ids["a"], t0, "late"))
		require.NoError(t, s.Dead(ctx, ids["b"], "late"))
		require.NoError(t, s.Delivered(ctx, ids["c"]))
		c, err = s.Counts(ctx)
		require.NoError(t, err)
		assert.Equal(t, store.OutboxCounts{Delivered: 2, Dead: 1}, c)
		ns, err = s.Claim(ctx, t0.Add(24*time.Hour), 10, time.Minute)
		require.NoError(t, err)
		assert.Empty(t, ns)

		assert.ErrorIs(t, s.Delivered(ctx, 987654), store.ErrNotFound)
		assert.ErrorIs(t, s.Retry(ctx, 987654, t0, "x"), store.ErrNotFound)
		assert.ErrorIs(t, s.Dead(ctx, 987654, "x"), store.ErrNotFound)
	})

	t.Run("ConcurrentClaims", func(t *testing.T) {
		dsn := fresh(t)
		// Two stores on one database stand for two bridge processes.
		stores := []store.Store{open(t, dsn), open(t, dsn)}
		const total, workers = 200, 8
		var enq sync.WaitGroup
		for w := range 4 { // the burst itself comes in concurrently
			enq.Go(func() {
				for i := w; i < total; i += 4 {
					_, err := stores[i%2].Enqueue(ctx, store.Notification{PaymentID: int64(i),
						Key: fmt.Sprint("burst:", i), URL: fmt.Sprint("u", i), NextAttempt: t0})
					assert.NoError(t, err)
				}
			})
		}
		enq.Wait()

		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for w := range workers {
			s := stores[w%2]
			wg.Go(func() {
				for {
					// One hour of lease: none runs out during the test.
					ns, err := s.Claim(ctx, t0, 7, time.Hour)
					if !assert.NoError(t, err) || len(ns) == 0 {
						return
					}
					mu.Lock()
					for _, n := range ns {
						seen[n.PaymentID]++
					}
					mu.Unlock()
					for _, n := range ns {
						assert.NoError(t, s.Delivered(ctx, n.ID))
					}
				}
			})
		}
		wg.Wait()
		assert.Len(t, seen, total)
		for id, times := range seen {
			assert.Equal(t, 1, times, "payment %d claimed %d times", id, times)
		}
		c, err := stores[0].Counts(ctx)
		require.NoError(t, err)
		assert.Equal(t, store.OutboxCounts{Delivered: total}, c)
	})

	t.Run("ConcurrentOpen", func(t *testing.T) {
		// Two processes starting at once on a new database both migrate.
		dsn := fresh(t)
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() {
				s, err := store.Open(ctx, dsn)
				if err == nil {
					err = s.SaveSession(ctx, store.Session{PaymentID: int64(i + 1)})
					s.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			assert.NoError(t, err)
		}
	})
}

func TestOpenPostgresOptionsSearchPath(t *testing.T) {
	// The libpq way, options=-csearch_path=..., selects the schema too.
	dsn := testenv.PostgresSchema(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	schema := q.Get("search_path")
	q.Del("search_path")
	q.Set("options", "-csearch_path="+schema)
	u.RawQuery = q.Encode()

	ctx := context.Background()
	a := open(t, u.String())
	require.NoError(t, a.SaveSession(ctx, store.Session{PaymentID: 99, ProductName: "via options"}))
	b := open(t, dsn)
	got, err := b.Session(ctx, 99)
	require.NoError(t, err)
	assert.Equal(t, "via options", got.ProductName)
}

func TestOpenErrorHidesPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, dsn := range []string{
		"postgres://bridge:Sup3rSecretPw@127.0.0.1:1/db?sslmode=disable&connect_timeout=2",
		"postgresql://bridge@127.0.0.1:1/db?password=Sup3rSecretPw&sslmode=disable&connect_timeout=2",
		"host=127.0.0.1 port=1 user=bridge password=Sup3rSecretPw dbname=db sslmode=disable connect_timeout=2",
	} {
		_, err := store.Open(ctx, dsn)
		require.Error(t, err, dsn)
		assert.NotContains(t, err.Error(), "Sup3rSecretPw")
		assert.Contains(t, err.Error(), "postgres")
	}
}

func TestOpenSQLiteForms(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, dsn := range []string{
		":memory:",
		filepath.Join(dir, "plain.db"),
		"file:" + filepath.Join(dir, "uri.db"),
		"file:" + filepath.Join(dir, "uri2.db") + "?cache=private",
	} {
		s := open(t, dsn)
		require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 1, ProductName: dsn}), dsn)
		got, err := s.Session(ctx, 1)
		require.NoError(t, err, dsn)
		assert.Equal(t, dsn, got.ProductName)
	}
	_, err := store.Open(ctx, filepath.Join(dir, "missing-dir", "x.db"))
	assert.Error(t, err)
	_, err = store.Open(ctx, "")
	assert.Error(t, err)
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable":       "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgresql://u@h/db?password=pw":                 "postgresql://u@h/db?password=xxxxx",
		"host=h user=u password=pw dbname=d":              "host=h user=u password=xxxxx dbname=d",
		"host=h password='p w' dbname=d":                  "host=h password=xxxxx dbname=d",
		"postgres://u@h/db":                               "postgres://u@h/db",
		"/var/lib/soapbridge/soapbridge.db":               "/var/lib/soapbridge/soapbridge.db",
		"file:/var/lib/soapbridge/soapbridge.db?mode=rwc": "file:/var/lib/soapbridge/soapbridge.db?mode=rwc",
	} {
		assert.Equal(t, want, store.Redact(in), in)
	}
}

// BenchmarkSession measures SaveSession followed by Session (what one
// payment costs the bridge) against a bare SELECT 1 round trip on the same
// database, reported as select1-ns/op and ratio.
func BenchmarkSession(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		dsn := sqliteDSN(b)
		benchSession(b, dsn, "sqlite")
	})
	b.Run("postgres", func(b *testing.B) {
		dsn := testenv.PostgresSchema(b)
		benchSession(b, dsn, "pgx")
	})
}

func benchSession(b *testing.B, dsn, driver string) {
	ctx := context.Background()
	s := open(b, dsn)
	raw, err := sql.Open(driver, dsn)
	require.NoError(b, err)
	defer raw.Close()

	var one int
	start := time.Now()
	for range b.N {
		if err := raw.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			b.Fatal(err)
		}
	}
	baseline := time.Since(start)

	sess := store.Session{GoID: 8123456789, ProductName: "bench", OrderNumber: "o", Amount: 100,
		Currency: "CZK", SuccessURL: "https://shop.example/ok", FailedURL: "https://shop.example/ko"}
	b.ResetTimer()
	start = time.Now()
	for i := range b.N {
		sess.PaymentID = int64(i + 1)
		if err := s.SaveSession(ctx, sess); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Session(ctx, sess.PaymentID); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(baseline.Nanoseconds())/float64(b.N), "select1-ns/op")
	b.ReportMetric(float64(elapsed)/float64(baseline), "ratio")
}

// The highest payment id a store remembers, from its sessions and its
// outbox: what the embedded sandbox's ids start above.
func TestHighestPaymentID(t *testing.T) {
	for name, fresh := range map[string]freshDSN{"sqlite": sqliteDSN, "postgres": testenv.PostgresSchema} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, fresh(t))
			h, ok := s.(interface {
				HighestPaymentID(context.Context) (int64, error)
			})
			require.True(t, ok, "the store tells its highest payment id")
			id, err := h.HighestPaymentID(ctx)
			require.NoError(t, err)
			assert.Zero(t, id, "empty")
			require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 3000000005, GoID: 1}))
			require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 3000000002, GoID: 1}))
			id, err = h.HighestPaymentID(ctx)
			require.NoError(t, err)
			assert.EqualValues(t, 3000000005, id)
			_, err = s.Enqueue(ctx, store.Notification{GoID: 1, PaymentID: 3000000009, Key: "3000000009:PAID", URL: "http://shop/n"})
			require.NoError(t, err)
			id, err = h.HighestPaymentID(ctx)
			require.NoError(t, err)
			assert.EqualValues(t, 3000000009, id, "a notification whose session was purged still counts")
		})
	}
}
