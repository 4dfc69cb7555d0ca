package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/store"
)

// A session keeps the id of the key its payment was created with (a save
// without one keeps it); a key overlap keeps its first sighting, and its
// end moves only while it is still to come.
func TestPaymentKeysAndOverlaps(t *testing.T) {
	for name, fresh := range map[string]freshDSN{"sqlite": sqliteDSN, "postgres": testenv.PostgresSchema} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, fresh(t))

			require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 11, GoID: 1, KeyID: "k-new"}))
			got, err := s.Session(ctx, 11)
			require.NoError(t, err)
			assert.Equal(t, "k-new", got.KeyID)
			require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 11, GoID: 1, OrderNumber: "again"}))
			got, err = s.Session(ctx, 11)
			require.NoError(t, err)
			assert.Equal(t, "k-new", got.KeyID, "a save without a key keeps the stored one")
			assert.Equal(t, "again", got.OrderNumber)

			_, err = s.KeyOverlap(ctx, 1, "secure_key", "k-old")
			assert.ErrorIs(t, err, store.ErrNotFound)
			t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
			until := func(end time.Time) func(time.Time) time.Time { return func(time.Time) time.Time { return end } }
			want := store.KeyOverlapWant{GoID: 1, Kind: "secure_key", KeyID: "k-old", EndsAt: until(t0.Add(time.Hour))}
			record := func(w store.KeyOverlapWant, now time.Time) store.KeyOverlap {
				t.Helper()
				got, err := s.RecordKeyOverlaps(ctx, []store.KeyOverlapWant{w}, now)
				require.NoError(t, err)
				require.Len(t, got, 1)
				stored, err := s.KeyOverlap(ctx, w.GoID, w.Kind, w.KeyID)
				require.NoError(t, err)
				assert.Equal(t, stored, got[0], "returned as stored")
				return got[0]
			}
			first := store.KeyOverlap{GoID: 1, Kind: "secure_key", KeyID: "k-old", FirstSeen: t0, EndsAt: t0.Add(time.Hour)}
			assert.Equal(t, first, record(want, t0))
			// Another replica's later sighting, with the default bound
			// counted from first seen: the first sighting stays.
			later := want
			later.EndsAt = func(seen time.Time) time.Time { return seen.Add(48 * time.Hour) }
			assert.Equal(t, store.KeyOverlap{GoID: 1, Kind: "secure_key", KeyID: "k-old", FirstSeen: t0, EndsAt: t0.Add(48 * time.Hour)},
				record(later, t0.Add(time.Minute)), "first seen kept; the end counted from it")
			_, err = s.KeyOverlap(ctx, 1, "client_secret", "k-old")
			assert.ErrorIs(t, err, store.ErrNotFound, "a kind of its own")

			want.EndsAt = until(t0.Add(2 * time.Hour))
			assert.Equal(t, t0.Add(2*time.Hour), record(want, t0.Add(30*time.Minute)).EndsAt, "still to come: moved")
			want.EndsAt = until(t0.Add(72 * time.Hour))
			assert.Equal(t, t0.Add(2*time.Hour), record(want, t0.Add(2*time.Hour)).EndsAt, "passed: final")
		})
	}
}

// The overlaps of one start or reload are recorded all or none: a store
// error on the second write (a trigger refusing it) leaves the first
// unwritten, on SQLite and PostgreSQL.
func TestKeyOverlapsRecordedAllOrNone(t *testing.T) {
	for name, tc := range map[string]struct {
		fresh   freshDSN
		refuse2 []string // makes inserting goid 2's record fail
	}{
		"sqlite": {sqliteDSN, []string{`CREATE TRIGGER refuse_2 BEFORE INSERT ON key_overlaps WHEN NEW.goid = 2
			BEGIN SELECT RAISE(ABORT, 'injected failure'); END`}},
		"postgres": {testenv.PostgresSchema, []string{
			`CREATE FUNCTION refuse_2() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.goid = 2 THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER refuse_2 BEFORE INSERT ON key_overlaps FOR EACH ROW EXECUTE FUNCTION refuse_2()`}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dsn := tc.fresh(t)
			s := open(t, dsn)
			db := rawDB(t, dsn)
			for _, q := range tc.refuse2 {
				_, err := db.ExecContext(ctx, q)
				require.NoError(t, err)
			}
			t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
			end := func(time.Time) time.Time { return t0.Add(time.Hour) }
			_, err := s.RecordKeyOverlaps(ctx, []store.KeyOverlapWant{
				{GoID: 1, Kind: "secure_key", KeyID: "k-1", EndsAt: end},
				{GoID: 2, Kind: "secure_key", KeyID: "k-2", EndsAt: end},
			}, t0)
			require.ErrorContains(t, err, "injected failure")
			_, err = s.KeyOverlap(ctx, 1, "secure_key", "k-1")
			assert.ErrorIs(t, err, store.ErrNotFound, "the first write was rolled back with the second")

			got, err := s.RecordKeyOverlaps(ctx, []store.KeyOverlapWant{{GoID: 1, Kind: "secure_key", KeyID: "k-1", EndsAt: end}}, t0)
			require.NoError(t, err, "without the refused one")
			assert.Equal(t, []store.KeyOverlap{{GoID: 1, Kind: "secure_key", KeyID: "k-1", FirstSeen: t0, EndsAt: t0.Add(time.Hour)}}, got)
		})
	}
}

// Two replicas recording overlapping sets of key overlaps at once (a
// rollout whose configurations list the merchants in another order) do not
// deadlock on PostgreSQL: each transaction takes the rows in one order,
// whatever the order of its configuration. Here another replica's
// transaction holds goid 1's row, the bridge's wants list goid 2 first:
// taking goid 2's row first, the bridge would wait for goid 1's while the
// other waits for goid 2's, and PostgreSQL would abort one of them.
func TestKeyOverlapsRecordedInOneOrderAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.PostgresSchema(t)
	s := open(t, dsn)
	db := rawDB(t, dsn)
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	end := func(time.Time) time.Time { return t0.Add(time.Hour) }

	other, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer other.Rollback() //nolint:errcheck // committed below unless the test failed
	insert := `INSERT INTO key_overlaps (goid, kind, key_id, first_seen, ends_at) VALUES ($1, 'secure_key', $2, $3, $4)
		ON CONFLICT (goid, kind, key_id) DO NOTHING`
	_, err = other.ExecContext(ctx, insert, 1, "k-1", t0, t0.Add(time.Hour))
	require.NoError(t, err)

	type result struct {
		recs []store.KeyOverlap
		err  error
	}
	done := make(chan result, 1)
	go func() {
		recs, err := s.RecordKeyOverlaps(ctx, []store.KeyOverlapWant{
			{GoID: 2, Kind: "secure_key", KeyID: "k-2", EndsAt: end},
			{GoID: 1, Kind: "secure_key", KeyID: "k-1", EndsAt: end},
		}, t0)
		done <- result{recs, err}
	}()
	// The bridge waits for the other's row of goid 1.
	require.Eventually(t, func() bool {
		var waiting int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND a.query LIKE 'INSERT INTO key_overlaps%'`).Scan(&waiting)
		return err == nil && waiting > 0
	}, 10*time.Second, 10*time.Millisecond, "the bridge waits for the other replica's transaction")

	_, err = other.ExecContext(ctx, insert, 2, "k-2", t0, t0.Add(time.Hour))
	require.NoError(t, err, "the other replica takes goid 2's row: the bridge holds none yet")
	require.NoError(t, other.Commit())
	r := <-done
	require.NoError(t, r.err)
	require.Len(t, r.recs, 2)
	assert.Equal(t, []int64{2, 1}, []int64{r.recs[0].GoID, r.recs[1].GoID}, "the records in the order of the wants")
	assert.Equal(t, t0, r.recs[0].FirstSeen)
}
