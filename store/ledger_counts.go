package store

import (
	"context"
	"fmt"
)

// LedgerCounts is the ledger's backlog: calls under way (pending) and
// calls whose outcome the bridge could not tell (in doubt). Done entries
// are history, not backlog, and are not counted.
type LedgerCounts struct {
	Pending int
	InDoubt int
}

func (s *sqlStore) LedgerCounts(ctx context.Context) (LedgerCounts, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT state, COUNT(*) FROM ledger WHERE state <> 'done' GROUP BY state`)
	if err != nil {
		return LedgerCounts{}, fmt.Errorf("store: count ledger entries: %w", err)
	}
	defer rows.Close()
	var c LedgerCounts
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return LedgerCounts{}, fmt.Errorf("store: count ledger entries: %w", err)
		}
		switch CallState(state) {
		case CallPending:
			c.Pending = n
		case CallInDoubt:
			c.InDoubt = n
		}
	}
	if err := rows.Err(); err != nil {
		return LedgerCounts{}, fmt.Errorf("store: count ledger entries: %w", err)
	}
	return c, nil
}
