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

func TestLedgerCounts(t *testing.T) {
	for name, fresh := range map[string]freshDSN{"sqlite": sqliteDSN, "postgres": testenv.PostgresSchema} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, fresh(t))
			c, err := s.LedgerCounts(ctx)
			require.NoError(t, err)
			assert.Equal(t, store.LedgerCounts{}, c)

			claim := func(hash string) store.Call {
				op := "capturePayment"
				if hash == "f" {
					op = "createPayment"
				}
				call, claimed, err := s.ClaimCall(ctx, store.CallKey{GoID: 1, Operation: op, Hash: hash}, time.Now(), time.Hour)
				require.NoError(t, err)
				require.True(t, claimed)
				return call
			}
			claim("a")
			b := claim("b")
			require.NoError(t, s.CallInDoubt(ctx, b.Key, b.Claim, "reset after sending", time.Now()))
			d := claim("c")
			require.NoError(t, s.CallDone(ctx, d.Key, d.Claim, store.CallRecord{Result: "FINISHED"}, time.Now()))
			claim("e")
			f := claim("f")
			require.NoError(t, s.CallInDoubt(ctx, f.Key, f.Claim, "reply lost", time.Now()))

			c, err = s.LedgerCounts(ctx)
			require.NoError(t, err)
			assert.Equal(t, store.LedgerCounts{Pending: 2, InDoubt: 2,
				InDoubtByOperation: map[string]int{"capturePayment": 1, "createPayment": 1}}, c, "done entries are not backlog")
		})
	}
}
