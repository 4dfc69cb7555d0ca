package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/store"
)

// Two processes post their demand on one PostgreSQL schema and read the
// sum; a post older than the live window no longer counts; a replica that
// leaves is gone at once. SQLite has no board.
func TestRateBoard(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.PostgresSchema(t)
	a, b := open(t, dsn), open(t, dsn)
	ba, ok := store.RateBoardOf(a)
	require.True(t, ok)
	bb, _ := store.RateBoardOf(b)

	got, err := ba.PostDemand(ctx, "a", map[int64]float64{7: 3.5, 8: 0}, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, map[int64]store.RateDemand{7: {Replicas: 1, Demand: 3.5}, 8: {Replicas: 1, Demand: 0}}, got)
	got, err = bb.PostDemand(ctx, "b", map[int64]float64{7: 1.5}, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, map[int64]store.RateDemand{7: {Replicas: 2, Demand: 5}}, got, "only the goids asked about")
	got, err = ba.PostDemand(ctx, "a", map[int64]float64{7: 0.5, 8: 0}, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, store.RateDemand{Replicas: 2, Demand: 2}, got[7], "a's post replaced")

	// b's post aged past the live window (a replica killed long ago): only
	// a's counts, and at an hour it is deleted.
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`UPDATE rate_demand SET seen_at = now() - interval '2 minutes' WHERE replica = 'b'`)
	require.NoError(t, err)
	got, err = ba.PostDemand(ctx, "a", map[int64]float64{7: 0.5}, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, store.RateDemand{Replicas: 1, Demand: 0.5}, got[7])
	_, err = db.Exec(`UPDATE rate_demand SET seen_at = now() - interval '61 minutes' WHERE replica = 'b'`)
	require.NoError(t, err)
	_, err = ba.PostDemand(ctx, "a", map[int64]float64{7: 0.5}, time.Minute)
	require.NoError(t, err)
	var rows int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM rate_demand WHERE replica = 'b'`).Scan(&rows))
	assert.Zero(t, rows)
	_, err = bb.PostDemand(ctx, "b", map[int64]float64{7: 1}, time.Minute)
	require.NoError(t, err)

	require.NoError(t, bb.Leave(ctx, "b"))
	got, err = ba.PostDemand(ctx, "a", map[int64]float64{7: 0.5}, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, store.RateDemand{Replicas: 1, Demand: 0.5}, got[7])

	_, ok = store.RateBoardOf(open(t, sqliteDSN(t)))
	assert.False(t, ok)
}
