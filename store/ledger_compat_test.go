package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An entry written by a version before the baseline columns keeps its
// baseline in the note; a retry handled by this version must still find it
// (or reconcile as unknown), never take the entry for a refund whose POST
// was not sent.
func TestLedgerLegacyNoteBaseline(t *testing.T) {
	ctx := context.Background()
	s := openSQL(t, filepath.Join(t.TempDir(), "old.db"))
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for note, want := range map[string]*RefundBaseline{
		"before the gateway call baseline=ids:3000:7,9":     {Amount: 3000, RefundIDs: []int64{7, 9}},
		"no usable reply: EOF baseline=ids:5000:":           {Amount: 5000},
		"before the gateway call baseline=ids:garbage":      {Amount: -1},
		"no usable reply: reset":                            nil,
		"before the gateway call baseline=recorded-elsewhe": nil, // not the legacy form
	} {
		key := CallKey{GoID: 1, Operation: "partiallyRefundPayment", Hash: RequestHash(note)}
		_, err := s.w.ExecContext(ctx, `INSERT INTO ledger (`+ledgerCols+`) VALUES (?, ?, ?, 'c', 'in_doubt', 0, '', '', '', ?, ?, ?)`,
			key.GoID, key.Operation, key.Hash, note, s.d.timeArg(at), s.d.timeArg(at))
		require.NoError(t, err)
		c, claimed, err := s.ClaimCall(ctx, key, at.Add(time.Minute), time.Hour)
		require.NoError(t, err)
		require.False(t, claimed)
		assert.Equal(t, want, c.Baseline, note)
	}
}
