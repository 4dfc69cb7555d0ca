package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// SchemaState compares a database's schema with the migrations this binary
// carries.
type SchemaState struct {
	Dialect string // "sqlite" or "postgres"
	// Exists is false when there is no schema yet: no SQLite file, or no
	// migration table in the PostgreSQL schema.
	Exists bool
	// Version is the highest migration applied (0: none).
	Version int64
	// Latest is this binary's newest migration.
	Latest int64
	// Pending are this binary's migrations not applied, oldest first.
	Pending []int64
	// Unknown are applied migrations this binary does not carry: a newer
	// binary migrated the schema.
	Unknown []int64
}

// Current reports whether every migration of this binary is applied.
func (s SchemaState) Current() bool { return len(s.Pending) == 0 }

// Newer reports whether a newer binary migrated the schema.
func (s SchemaState) Newer() bool { return len(s.Unknown) > 0 }

func (s SchemaState) String() string {
	list := func(vs []int64) string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = fmt.Sprintf("%05d", v)
		}
		return strings.Join(out, ", ")
	}
	switch {
	case !s.Exists:
		return fmt.Sprintf("empty: %d migration(s) pending (%s)", len(s.Pending), list(s.Pending))
	case s.Newer():
		return fmt.Sprintf("version %d, newer than this binary (which knows up to %d; unknown: %s)", s.Version, s.Latest, list(s.Unknown))
	case !s.Current():
		return fmt.Sprintf("version %d, %d migration(s) pending (%s)", s.Version, len(s.Pending), list(s.Pending))
	}
	return fmt.Sprintf("current (version %d)", s.Version)
}

// Inspect reads the schema state of the store named by dsn and changes
// nothing: on PostgreSQL it reads in a READ ONLY transaction and never
// creates goose's table; a missing SQLite file is not created, an existing
// one is read with query_only. Server, on PostgreSQL, is the server's
// connection limit (nil on SQLite).
func Inspect(ctx context.Context, dsn string) (SchemaState, *ServerConnections, error) {
	if dsn == "" {
		return SchemaState{}, nil, fmt.Errorf("store: inspect: empty database name")
	}
	d := sqlite
	if isPostgres(dsn) {
		d = postgres
	}
	known, err := knownMigrations(d)
	if err != nil {
		return SchemaState{}, nil, err
	}
	state := SchemaState{Dialect: d.name, Latest: known[len(known)-1]}
	var db *sql.DB
	if d == postgres {
		if db, err = sql.Open("pgx", dsn); err == nil {
			err = db.PingContext(ctx)
		}
		if err != nil {
			if db != nil {
				db.Close()
			}
			return state, nil, redactErr(fmt.Errorf("store: connect postgres %s: %w", Redact(dsn), err), dsn)
		}
	} else {
		name := sqlitePath(dsn)
		if name == ":memory:" {
			state.Pending = known
			return state, nil, nil
		}
		if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
			state.Pending = known
			return state, nil, nil
		}
		// No journal_mode pragma: switching a file to WAL is a write.
		if db, err = sql.Open("sqlite", "file:"+name+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)"); err == nil {
			err = db.PingContext(ctx)
		}
		if err != nil {
			db.Close()
			return state, nil, fmt.Errorf("store: open sqlite %s: %w", Redact(dsn), err)
		}
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: d == postgres})
	if err != nil {
		return state, nil, redactErr(fmt.Errorf("store: inspect %s: %w", Redact(dsn), err), dsn)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	applied, exists, err := appliedMigrations(ctx, tx, d)
	if err != nil {
		return state, nil, redactErr(fmt.Errorf("store: inspect %s: %w", Redact(dsn), err), dsn)
	}
	state.Exists = exists
	for _, v := range applied {
		state.Version = max(state.Version, v)
		if !slices.Contains(known, v) {
			state.Unknown = append(state.Unknown, v)
		}
	}
	for _, v := range known {
		if !slices.Contains(applied, v) {
			state.Pending = append(state.Pending, v)
		}
	}
	if d != postgres {
		return state, nil, nil
	}
	server, err := serverConnections(ctx, tx)
	if err != nil {
		return state, nil, redactErr(fmt.Errorf("store: inspect %s: %w", Redact(dsn), err), dsn)
	}
	return state, &server, nil
}

// Migrate applies the pending migrations of the store named by dsn (under
// PostgreSQL's advisory lock, as at start) and returns the versions applied
// and the state after.
func Migrate(ctx context.Context, dsn string) ([]int64, SchemaState, error) {
	if dsn == "" {
		return nil, SchemaState{}, fmt.Errorf("store: migrate: empty database name")
	}
	var applied []int64
	if isPostgres(dsn) {
		db, err := sql.Open("pgx", dsn)
		if err == nil {
			defer db.Close()
			db.SetMaxOpenConns(2)
			err = db.PingContext(ctx)
		}
		if err != nil {
			return nil, SchemaState{}, redactErr(fmt.Errorf("store: connect postgres %s: %w", Redact(dsn), err), dsn)
		}
		if applied, err = migrate(ctx, db, postgres); err != nil {
			return nil, SchemaState{}, redactErr(err, dsn)
		}
	} else {
		if sqlitePath(dsn) == ":memory:" {
			return nil, SchemaState{}, fmt.Errorf("store: migrate: an in-memory database does not outlive the command")
		}
		if err := createPrivate(sqlitePath(dsn)); err != nil {
			return nil, SchemaState{}, fmt.Errorf("store: create sqlite %s: %w", Redact(dsn), err)
		}
		name, sep := dsn, "?"
		if strings.Contains(name, "?") {
			sep = "&"
		}
		w, err := openSQLiteWriter(ctx, name+sep+sqliteParams+"&_txlock=immediate", false)
		if err != nil {
			return nil, SchemaState{}, fmt.Errorf("store: open sqlite %s: %w", Redact(dsn), err)
		}
		defer w.Close()
		if applied, err = migrate(ctx, w, sqlite); err != nil {
			return nil, SchemaState{}, err
		}
	}
	state, _, err := Inspect(ctx, dsn)
	return applied, state, err
}

// knownMigrations are the versions this binary carries for d, oldest first.
func knownMigrations(d *dialect) ([]int64, error) {
	entries, err := fs.ReadDir(migrations, "migrations/"+d.name)
	if err != nil {
		return nil, fmt.Errorf("store: migrations of %s: %w", d.name, err)
	}
	var out []int64
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil || path.Ext(e.Name()) != ".sql" {
			return nil, fmt.Errorf("store: migration file %s has no version", e.Name())
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil
}

// appliedMigrations reads goose's table as goose does (a row per applied
// version; version 0 marks the table's creation), if the table exists.
func appliedMigrations(ctx context.Context, tx *sql.Tx, d *dialect) (applied []int64, exists bool, err error) {
	q := `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE (current_schema() IS NULL OR schemaname = current_schema()) AND tablename = 'goose_db_version')`
	if d == sqlite {
		q = `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version')`
	}
	if err := tx.QueryRowContext(ctx, q).Scan(&exists); err != nil || !exists {
		return nil, false, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT version_id, is_applied FROM goose_db_version ORDER BY id`)
	if err != nil {
		return nil, true, err
	}
	defer rows.Close()
	state := map[int64]bool{}
	for rows.Next() {
		var v int64
		var ok bool
		if err := rows.Scan(&v, &ok); err != nil {
			return nil, true, err
		}
		state[v] = ok
	}
	if err := rows.Err(); err != nil {
		return nil, true, err
	}
	for v, ok := range state {
		if ok && v > 0 {
			applied = append(applied, v)
		}
	}
	slices.Sort(applied)
	return applied, true, nil
}

// ServerConnections is what a PostgreSQL server admits: max_connections,
// of which superuser_reserved_connections (and, from PostgreSQL 16,
// reserved_connections) are kept for privileged roles; InUse are the
// connections open now, the asking one included.
type ServerConnections struct {
	Max, Reserved, InUse int
}

// Available is what ordinary roles may open in all.
func (c ServerConnections) Available() int { return c.Max - c.Reserved }

func serverConnections(ctx context.Context, tx *sql.Tx) (ServerConnections, error) {
	var c ServerConnections
	err := tx.QueryRowContext(ctx, `SELECT current_setting('max_connections')::int,
		current_setting('superuser_reserved_connections')::int + coalesce(current_setting('reserved_connections', true), '0')::int,
		(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int`).Scan(&c.Max, &c.Reserved, &c.InUse)
	return c, err
}
