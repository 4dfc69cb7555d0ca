package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// KeyOverlap is how long a previous secure key or client secret of a
// merchant is accepted beside the current one (see Store.KeyOverlap).
type KeyOverlap struct {
	GoID int64
	// Kind is the setting: "secure_key" or "client_secret".
	Kind string
	// KeyID names the previous key or secret, never revealing it.
	KeyID string
	// FirstSeen is when a bridge first saw it configured as previous.
	FirstSeen time.Time
	// EndsAt is when it stops being accepted; once passed, final.
	EndsAt time.Time
}

func (s *sqlStore) KeyOverlap(ctx context.Context, goid int64, kind, keyID string) (KeyOverlap, error) {
	o := KeyOverlap{GoID: goid, Kind: kind, KeyID: keyID}
	err := s.w.QueryRowContext(ctx, s.d.rebind(`SELECT first_seen, ends_at FROM key_overlaps WHERE goid = ? AND kind = ? AND key_id = ?`),
		goid, kind, keyID).Scan(timeScan{&o.FirstSeen}, timeScan{&o.EndsAt})
	if errors.Is(err, sql.ErrNoRows) {
		return KeyOverlap{}, ErrNotFound
	}
	if err != nil {
		return KeyOverlap{}, fmt.Errorf("store: read key overlap of %d: %w", goid, err)
	}
	return o, nil
}

// KeyOverlapWant is a previous key or secret a configuration keeps, and
// the end it wants for it (see Store.RecordKeyOverlaps).
type KeyOverlapWant struct {
	GoID        int64
	Kind, KeyID string
	// EndsAt is the end wanted for a record first seen at firstSeen.
	EndsAt func(firstSeen time.Time) time.Time
}

func (s *sqlStore) RecordKeyOverlaps(ctx context.Context, ws []KeyOverlapWant, now time.Time) ([]KeyOverlap, error) {
	out := make([]KeyOverlap, len(ws))
	// The rows are taken in one order, whatever the configuration's: two
	// replicas recording at once (a rollout whose configurations list the
	// merchants differently) would otherwise each hold a row the other
	// waits for, and PostgreSQL would abort one start or reload.
	order := make([]int, len(ws))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := ws[a], ws[b]
		return cmp.Or(cmp.Compare(x.GoID, y.GoID), strings.Compare(x.Kind, y.Kind), strings.Compare(x.KeyID, y.KeyID))
	})
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, i := range order {
			w := ws[i]
			o, err := s.recordKeyOverlap(ctx, tx, w, now)
			if err != nil {
				return fmt.Errorf("store: record key overlap of %d: %w", w.GoID, err)
			}
			out[i] = o
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// recordKeyOverlap is one want of RecordKeyOverlaps, in its transaction.
func (s *sqlStore) recordKeyOverlap(ctx context.Context, tx *sql.Tx, w KeyOverlapWant, now time.Time) (KeyOverlap, error) {
	o := KeyOverlap{GoID: w.GoID, Kind: w.Kind, KeyID: w.KeyID}
	read := func() error {
		return tx.QueryRowContext(ctx, s.d.rebind(`SELECT first_seen, ends_at FROM key_overlaps WHERE goid = ? AND kind = ? AND key_id = ?`),
			w.GoID, w.Kind, w.KeyID).Scan(timeScan{&o.FirstSeen}, timeScan{&o.EndsAt})
	}
	// The first writer wins: first_seen is never moved later.
	if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO key_overlaps (goid, kind, key_id, first_seen, ends_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (goid, kind, key_id) DO NOTHING`), w.GoID, w.Kind, w.KeyID, s.d.timeArg(now), s.d.timeArg(w.EndsAt(now))); err != nil {
		return o, err
	}
	if err := read(); err != nil {
		return o, err
	}
	ends := w.EndsAt(o.FirstSeen)
	if !now.Before(o.EndsAt) || utc(ends).Equal(o.EndsAt) {
		return o, nil
	}
	// An end already passed at now is final: the condition is in the
	// statement, so that no replica moves an end another saw pass.
	if _, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE key_overlaps SET ends_at = ?
		WHERE goid = ? AND kind = ? AND key_id = ? AND ends_at > ?`), s.d.timeArg(ends), w.GoID, w.Kind, w.KeyID, s.d.timeArg(now)); err != nil {
		return o, err
	}
	return o, read()
}
