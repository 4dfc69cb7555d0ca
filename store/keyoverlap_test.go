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
			first := store.KeyOverlap{GoID: 1, Kind: "secure_key", KeyID: "k-old", FirstSeen: t0, EndsAt: t0.Add(time.Hour)}
			require.NoError(t, s.AddKeyOverlap(ctx, first))
			later := first
			later.FirstSeen, later.EndsAt = t0.Add(time.Minute), t0.Add(48*time.Hour)
			require.NoError(t, s.AddKeyOverlap(ctx, later), "another replica's first sighting")
			o, err := s.KeyOverlap(ctx, 1, "secure_key", "k-old")
			require.NoError(t, err)
			assert.Equal(t, first, o, "the first writer's stays")
			_, err = s.KeyOverlap(ctx, 1, "client_secret", "k-old")
			assert.ErrorIs(t, err, store.ErrNotFound, "a kind of its own")

			moved, err := s.MoveKeyOverlap(ctx, 1, "secure_key", "k-old", t0.Add(2*time.Hour), t0.Add(30*time.Minute))
			require.NoError(t, err)
			assert.True(t, moved, "still to come: moved")
			moved, err = s.MoveKeyOverlap(ctx, 1, "secure_key", "k-old", t0.Add(72*time.Hour), t0.Add(2*time.Hour))
			require.NoError(t, err)
			assert.False(t, moved, "passed: final")
			o, err = s.KeyOverlap(ctx, 1, "secure_key", "k-old")
			require.NoError(t, err)
			assert.Equal(t, t0.Add(2*time.Hour), o.EndsAt)
		})
	}
}
