package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Retention says how long finished rows are kept. Purge deletes older ones.
type Retention struct {
	// Delivered keeps a delivered notification (counted from its delivery).
	// Its row holds the dedupe key: while it exists, a change the gateway
	// announces again is not forwarded twice. It is therefore the dedupe
	// horizon and must outlast the gateway's repeats of a notification
	// (it repeats until it gets a 200; the bridge answers 200 once the row
	// is enqueued, so repeats are rare and short).
	Delivered time.Duration
	// Dead keeps a notification given up on, for operators; it also
	// dedupes.
	Dead time.Duration
	// Ledger keeps ledger entries (counted from the claim); it must be at
	// least the longest replay window of any merchant.
	Ledger time.Duration
	// Sessions keeps sessions and their return tokens (counted from the
	// payment's creation): long enough for refunds, captures, recurrences
	// and statements of old payments, whose legacy answers need the
	// session's product name and URLs.
	Sessions time.Duration
}

// Defaults and floors of Retention. The reasons are in docs/money-safety.md.
const (
	DefaultDeliveredRetention = 30 * 24 * time.Hour
	DefaultDeadRetention      = 90 * 24 * time.Hour
	DefaultLedgerRetention    = 30 * 24 * time.Hour
	DefaultSessionRetention   = 400 * 24 * time.Hour
	// MinDedupeRetention is the least Delivered and Dead accepted: a week
	// covers any repeat schedule of a notification we know of.
	MinDedupeRetention = 7 * 24 * time.Hour
	// MinSessionRetention: a card payment can be refunded for about a year.
	MinSessionRetention = 366 * 24 * time.Hour
)

// DefaultRetention is the retention of a configuration that sets none.
func DefaultRetention() Retention {
	return Retention{Delivered: DefaultDeliveredRetention, Dead: DefaultDeadRetention,
		Ledger: DefaultLedgerRetention, Sessions: DefaultSessionRetention}
}

// Validate checks r against its floors and the longest replay window of
// the ledger's users.
func (r Retention) Validate(maxReplayWindow time.Duration) error {
	switch {
	case r.Delivered < MinDedupeRetention:
		return fmt.Errorf("store: retention of delivered notifications %v is under %v: the gateway's repeats would be forwarded again", r.Delivered, MinDedupeRetention)
	case r.Dead < MinDedupeRetention:
		return fmt.Errorf("store: retention of dead notifications %v is under %v", r.Dead, MinDedupeRetention)
	case r.Ledger < maxReplayWindow || r.Ledger <= 0:
		return fmt.Errorf("store: retention of the ledger %v is under the longest replay window %v: a repeat inside its window could act again", r.Ledger, maxReplayWindow)
	case r.Sessions < MinSessionRetention:
		return fmt.Errorf("store: retention of sessions %v is under %v: refunds of older payments would lose their session", r.Sessions, MinSessionRetention)
	}
	return nil
}

// PurgeCounts is what one Purge deleted.
type PurgeCounts struct {
	Delivered, Dead, Ledger, Sessions int64
}

// purgeBatch bounds one DELETE, so a big first purge never holds SQLite's
// write lock (or PostgreSQL row locks) for long.
const purgeBatch = 1000

type purgeQueries struct {
	outbox, ledger, tokens, sessions string
}

func (d *dialect) purgeQueries() purgeQueries {
	return purgeQueries{
		outbox: d.rebind(`DELETE FROM outbox WHERE id IN (
			SELECT id FROM outbox WHERE state = ? AND updated_at < ? LIMIT ?)`),
		ledger: d.rebind(`DELETE FROM ledger WHERE (goid, operation, request_hash) IN (
			SELECT goid, operation, request_hash FROM ledger WHERE created_at < ? LIMIT ?)`),
		tokens: d.rebind(`DELETE FROM session_tokens WHERE payment_id IN (
			SELECT payment_id FROM sessions WHERE created_at < ? ORDER BY payment_id LIMIT ?)`),
		sessions: d.rebind(`DELETE FROM sessions WHERE payment_id IN (
			SELECT payment_id FROM sessions WHERE created_at < ? ORDER BY payment_id LIMIT ?)`),
	}
}

func (s *sqlStore) Purge(ctx context.Context, now time.Time, r Retention) (PurgeCounts, error) {
	var c PurgeCounts
	if r.Delivered <= 0 || r.Dead <= 0 || r.Ledger <= 0 || r.Sessions <= 0 {
		return c, fmt.Errorf("store: purge: every retention must be positive, got %+v", r)
	}
	var err error
	if c.Delivered, err = s.purgeLoop(ctx, s.pq.outbox, "delivered", s.d.timeArg(now.Add(-r.Delivered))); err != nil {
		return c, fmt.Errorf("store: purge delivered notifications: %w", err)
	}
	if c.Dead, err = s.purgeLoop(ctx, s.pq.outbox, "dead", s.d.timeArg(now.Add(-r.Dead))); err != nil {
		return c, fmt.Errorf("store: purge dead notifications: %w", err)
	}
	if c.Ledger, err = s.purgeLoop(ctx, s.pq.ledger, s.d.timeArg(now.Add(-r.Ledger))); err != nil {
		return c, fmt.Errorf("store: purge ledger: %w", err)
	}
	cut := s.d.timeArg(now.Add(-r.Sessions))
	for {
		// A session and its token go together.
		var n int64
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, s.pq.tokens, cut, purgeBatch); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, s.pq.sessions, cut, purgeBatch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return c, fmt.Errorf("store: purge sessions: %w", err)
		}
		c.Sessions += n
		if n > 0 {
			s.sessions.clear()
		}
		if n < purgeBatch {
			return c, nil
		}
	}
}

// purgeLoop runs a batched DELETE (its last argument is the batch size)
// until a batch comes back short.
func (s *sqlStore) purgeLoop(ctx context.Context, q string, args ...any) (int64, error) {
	var total int64
	for {
		n, err := s.exec(ctx, q, append(args, purgeBatch)...)
		if err != nil {
			return total, err
		}
		total += n
		if n < purgeBatch {
			return total, nil
		}
	}
}
