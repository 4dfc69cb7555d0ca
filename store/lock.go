package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"time"
)

// unlockTimeout bounds the release of a lock; it runs detached from the
// holder's context, which may have ended.
const unlockTimeout = 5 * time.Second

// TryLock takes a lock shared by every process on the store (see Ledger).
func (s *sqlStore) TryLock(ctx context.Context, name string, ttl time.Duration) (func(), bool, error) {
	if name == "" {
		return nil, false, fmt.Errorf("store: lock without a name")
	}
	if s.d == postgres {
		return s.tryAdvisoryLock(ctx, name)
	}
	return s.tryRowLock(ctx, name, ttl)
}

// tryAdvisoryLock holds a PostgreSQL session advisory lock on a connection
// of the lock pool (Options.MaxConns) until unlock. A holder that dies loses its connection and the
// server releases the lock: nothing goes stale. The key is a hash of the
// schema and the name, so stores in different schemas never contend.
func (s *sqlStore) tryAdvisoryLock(ctx context.Context, name string) (func(), bool, error) {
	const keyOf = `('x' || substr(md5(coalesce(current_schema(), '') || '/' || $1), 1, 16))::bit(64)::bigint`
	conn, err := s.locks.Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("store: lock %s: %w", name, err)
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(`+keyOf+`)`, name).Scan(&ok); err != nil {
		conn.Close()
		return nil, false, fmt.Errorf("store: lock %s: %w", name, err)
	}
	if !ok {
		conn.Close()
		return nil, false, nil
	}
	unlock := func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		var released bool
		if err := conn.QueryRowContext(uctx, `SELECT pg_advisory_unlock(`+keyOf+`)`, name).Scan(&released); err != nil || !released {
			// The connection may still hold the lock: never hand it back
			// to the pool; closing it ends the session and the lock.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}
	return unlock, true, nil
}

// tryRowLock holds an SQLite lock as a row of the locks table; a row past
// its expiry belongs to a holder that died and is taken over.
func (s *sqlStore) tryRowLock(ctx context.Context, name string, ttl time.Duration) (func(), bool, error) {
	if ttl <= 0 {
		return nil, false, fmt.Errorf("store: lock %s: ttl %v is not positive", name, ttl)
	}
	holder, err := newClaim()
	if err != nil {
		return nil, false, fmt.Errorf("store: lock %s: %w", name, err)
	}
	now := time.Now()
	n, err := s.exec(ctx, `INSERT INTO locks (name, holder, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE locks.expires_at < ?`, name, holder, s.d.timeArg(now.Add(ttl)), s.d.timeArg(now))
	if err != nil {
		return nil, false, fmt.Errorf("store: lock %s: %w", name, err)
	}
	if n == 0 {
		return nil, false, nil
	}
	unlock := func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		// Expiry ends it anyway when this delete fails.
		_, _ = s.exec(uctx, `DELETE FROM locks WHERE name = ? AND holder = ?`, name, holder)
	}
	return unlock, true, nil
}
