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
	// InDoubtByOperation splits InDoubt by the entries' operation (nil
	// when none is in doubt): an in-doubt createPayment moves no money and
	// is released at the shop's next repeat, an in-doubt refund or capture
	// may have moved money, so monitoring tells them apart.
	InDoubtByOperation map[string]int
}

func (s *sqlStore) LedgerCounts(ctx context.Context) (LedgerCounts, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT state, operation, COUNT(*) FROM ledger
		WHERE state <> 'done' AND NOT alias AND operation <> '`+LegacyRefundLock+`' GROUP BY state, operation`)
	if err != nil {
		return LedgerCounts{}, fmt.Errorf("store: count ledger entries: %w", err)
	}
	defer rows.Close()
	var c LedgerCounts
	for rows.Next() {
		var state, op string
		var n int
		if err := rows.Scan(&state, &op, &n); err != nil {
			return LedgerCounts{}, fmt.Errorf("store: count ledger entries: %w", err)
		}
		switch CallState(state) {
		case CallPending:
			c.Pending += n
		case CallInDoubt:
			c.InDoubt += n
			if c.InDoubtByOperation == nil {
				c.InDoubtByOperation = map[string]int{}
			}
			c.InDoubtByOperation[op] += n
		}
	}
	if err := rows.Err(); err != nil {
		return LedgerCounts{}, fmt.Errorf("store: count ledger entries: %w", err)
	}
	return c, nil
}
