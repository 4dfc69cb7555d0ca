package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ShopKey and SetShopKey keep which key a merchant's shop signs with (see
// Store); written only when it changes, so a row per merchant at most.

func (s *sqlStore) ShopKey(ctx context.Context, goid int64) (string, time.Time, error) {
	var id string
	var at time.Time
	err := s.w.QueryRowContext(ctx, s.d.rebind(`SELECT key_id, seen_at FROM shop_keys WHERE goid = ?`), goid).Scan(&id, timeScan{&at})
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, ErrNotFound
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("store: read shop key of %d: %w", goid, err)
	}
	return id, at, nil
}

func (s *sqlStore) SetShopKey(ctx context.Context, goid int64, keyID string, seenAt time.Time) error {
	// The newest sighting wins, whichever replica writes last.
	_, err := s.w.ExecContext(ctx, s.d.rebind(`INSERT INTO shop_keys (goid, key_id, seen_at) VALUES (?, ?, ?)
		ON CONFLICT (goid) DO UPDATE SET key_id = excluded.key_id, seen_at = excluded.seen_at
		WHERE shop_keys.seen_at <= excluded.seen_at`), goid, keyID, s.d.timeArg(seenAt))
	if err != nil {
		return fmt.Errorf("store: record shop key of %d: %w", goid, err)
	}
	return nil
}
