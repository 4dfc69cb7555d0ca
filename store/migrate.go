package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
)

// The schema of each dialect, applied in order by goose; the applied
// versions are kept in the goose_db_version table.
//
//go:embed migrations
var migrations embed.FS

// migrate brings db's schema up to date and returns the versions it
// applied. It is idempotent. On PostgreSQL it holds an advisory lock
// meanwhile, so processes starting at once apply each migration once.
func migrate(ctx context.Context, db *sql.DB, d *dialect) ([]int64, error) {
	fsys, err := fs.Sub(migrations, "migrations/"+d.name)
	if err != nil {
		return nil, fmt.Errorf("store: migrations of %s: %w", d.name, err)
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if d.name == "postgres" {
		opts = append(opts, goose.WithSessionLocker(pgMigrationLock{}))
	}
	p, err := goose.NewProvider(d.goose, db, fsys, opts...)
	if err != nil {
		return nil, fmt.Errorf("store: migrations of %s: %w", d.name, err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migrate %s schema: %w", d.name, err)
	}
	applied := make([]int64, len(res))
	for i, r := range res {
		applied[i] = r.Source.Version
	}
	return applied, nil
}

// pgMigrationLock is a goose session locker that waits on a blocking
// pg_advisory_lock. goose's own locker polls pg_try_advisory_lock every
// few seconds under one fixed key for the whole database; this one wakes
// as soon as the holder is done, and its key includes the schema, so
// stores in different schemas (parallel test runs) never wait on each
// other.
type pgMigrationLock struct{}

// pgLockClass is the first half of the two-part advisory lock key; the
// second half is a hash of the schema name.
const pgLockClass = 0x50a9b1d6 // "soapbridge" migrations

func (pgMigrationLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx,
		`SELECT pg_advisory_lock($1, hashtext(coalesce(current_schema(), '')))`, pgLockClass)
	if err != nil {
		return fmt.Errorf("store: take migration lock: %w", err)
	}
	return nil
}

func (pgMigrationLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx,
		`SELECT pg_advisory_unlock($1, hashtext(coalesce(current_schema(), '')))`, pgLockClass)
	if err != nil {
		return fmt.Errorf("store: release migration lock: %w", err)
	}
	return nil
}
