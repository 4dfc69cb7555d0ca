package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	sqlitedriver "modernc.org/sqlite"  // registers the "sqlite" driver
)

// Open opens (creating and migrating when needed) the store named by dsn:
//   - a postgres:// or postgresql:// URL, or a key=value DSN with host=,
//     is a PostgreSQL database; its search_path (the search_path parameter
//     or options=-csearch_path=...) selects the schema used;
//   - anything else is an SQLite file path, optionally prefixed by file:
//     (":memory:" gives a private in-memory store, for tests).
func Open(ctx context.Context, dsn string) (Store, error) {
	return OpenWith(ctx, dsn, Options{})
}

// DefaultMaxConns is the PostgreSQL connections a process opens at most
// when Options.MaxConns is 0.
const DefaultMaxConns = 16

// Options adjust OpenWith.
type Options struct {
	// MaxConns caps the PostgreSQL connections this process opens
	// (DefaultMaxConns when 0; at least 2). LockConns of them serve the
	// refund locks, each of which holds a connection for its refund's
	// duration; the others serve queries, so that refunds holding locks
	// never leave their own queries without a connection. SQLite ignores
	// it (one writer, four readers).
	MaxConns int
	// NoMigrate opens the store as its schema is, without applying
	// migrations (an operator who runs `soapbridge migrate` himself); see
	// Inspect for what the schema lacks.
	NoMigrate bool
}

// LockConns is how many of maxConns PostgreSQL connections are kept for
// refund locks: a quarter, at least one.
func LockConns(maxConns int) int {
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	return max(1, maxConns/4)
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, dsn string, o Options) (Store, error) {
	if dsn == "" {
		return nil, fmt.Errorf("store: open: empty database name")
	}
	if isPostgres(dsn) {
		return openPostgres(ctx, dsn, o)
	}
	return openSQLite(ctx, dsn, o)
}

func isPostgres(dsn string) bool {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return true
	}
	for _, f := range strings.Fields(dsn) {
		if strings.HasPrefix(f, "host=") {
			return true
		}
	}
	return false
}

func openPostgres(ctx context.Context, dsn string, o Options) (Store, error) {
	total := o.MaxConns
	if total == 0 {
		total = DefaultMaxConns
	}
	if total < 2 {
		return nil, fmt.Errorf("store: %d PostgreSQL connections is too few: one for the refund locks and one for queries at least", total)
	}
	locks := LockConns(total)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, redactErr(fmt.Errorf("store: open postgres %s: %w", Redact(dsn), err), dsn)
	}
	db.SetMaxOpenConns(total - locks)
	db.SetMaxIdleConns(max(1, (total-locks)/2))
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, redactErr(fmt.Errorf("store: connect postgres %s: %w", Redact(dsn), err), dsn)
	}
	if !o.NoMigrate {
		if _, err := migrate(ctx, db, postgres); err != nil {
			db.Close()
			return nil, err
		}
	}
	// The refund locks' own pool: a lock holds its connection until the
	// refund ends, and the refund's queries need another one meanwhile.
	// Sharing one pool, as many refunds as connections would each hold a
	// lock and wait for a query connection until their deadline.
	lk, err := sql.Open("pgx", dsn)
	if err != nil {
		db.Close()
		return nil, redactErr(fmt.Errorf("store: open postgres %s: %w", Redact(dsn), err), dsn)
	}
	lk.SetMaxOpenConns(locks)
	lk.SetMaxIdleConns(locks)
	s := newSQLStore(postgres, db, db)
	s.locks = lk
	return s, nil
}

// sqliteParams are set on every SQLite connection: WAL lets readers run
// beside the writer, busy_timeout makes a second process wait for the write
// lock instead of failing, foreign keys are off by default in SQLite.
// synchronous stays FULL (the default) so a committed Enqueue survives a
// power loss.
const sqliteParams = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)"

func openSQLite(ctx context.Context, dsn string, o Options) (Store, error) {
	name := dsn
	sep := "?"
	if strings.Contains(name, "?") {
		sep = "&"
	}
	memory := strings.TrimPrefix(strings.SplitN(name, "?", 2)[0], "file:") == ":memory:"

	if !memory {
		if err := createPrivate(sqlitePath(name)); err != nil {
			return nil, fmt.Errorf("store: create sqlite %s: %w", Redact(dsn), err)
		}
	}
	w, err := openSQLiteWriter(ctx, name+sep+sqliteParams+"&_txlock=immediate", !o.NoMigrate)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite %s: %w", Redact(dsn), err)
	}
	if memory {
		// Every connection to :memory: is a database of its own.
		s := newSQLStore(sqlite, w, w)
		s.prepare(ctx)
		return s, nil
	}
	r, err := sql.Open("sqlite", name+sep+sqliteParams+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open sqlite %s: %w", Redact(dsn), err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	s := newSQLStore(sqlite, w, r)
	s.prepare(ctx)
	return s, nil
}

// sqlitePath is the file an SQLite DSN names: without the file: prefix
// and the query.
func sqlitePath(dsn string) string {
	return strings.TrimPrefix(strings.SplitN(dsn, "?", 2)[0], "file:")
}

// createPrivate creates the database file readable by its owner only
// (0600) when it does not exist yet: it holds order numbers, product names
// and the shops' URLs. SQLite creates the -wal and -shm files with the
// mode of the database file, so they are private too. An existing file
// keeps the mode its operator gave it.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// openSQLiteWriter opens the single write connection and, when migrating,
// brings the schema up to date. SQLite has one writer: all writes go through one connection,
// so the goroutines of this process queue in database/sql instead of
// meeting SQLITE_BUSY; _txlock=immediate takes the write lock at BEGIN, so a
// transaction never has to upgrade a read lock (which busy_timeout cannot
// resolve in WAL mode).
//
// Processes opening a new file at the same moment can still meet
// SQLITE_BUSY while one of them switches it to WAL (the busy handler is not
// consulted there). Start-up is idempotent, so it is tried again on a fresh
// pool (a connection whose pragmas failed halfway must not be reused).
func openSQLiteWriter(ctx context.Context, dsn string, migrating bool) (*sql.DB, error) {
	deadline := time.Now().Add(15 * time.Second)
	for attempt := 1; ; attempt++ {
		w, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, err
		}
		w.SetMaxOpenConns(1)
		w.SetMaxIdleConns(1)
		w.SetConnMaxLifetime(0)
		w.SetConnMaxIdleTime(0)
		err = w.PingContext(ctx)
		if err == nil && migrating {
			_, err = migrate(ctx, w, sqlite)
		}
		if err == nil {
			return w, nil
		}
		w.Close()
		// A column another process added first (00003) is also worth a
		// retry: goose then finds that migration applied.
		if !isSQLiteBusy(err) && !strings.Contains(err.Error(), "duplicate column name") || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(min(attempt, 10)) * 20 * time.Millisecond):
		}
	}
}

// isSQLiteBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any
// extended code).
func isSQLiteBusy(err error) bool {
	var se *sqlitedriver.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == 5 || code == 6
}

var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// Redact returns dsn with any password replaced by "xxxxx", fit for logs
// and error messages.
func Redact(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			// Do not echo what we cannot take apart.
			return strings.SplitN(dsn, "://", 2)[0] + "://(unparsable)"
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

// redactErr hides the password of dsn in the message of err, should a
// driver ever echo it; errors.Is and errors.As still see the cause.
func redactErr(err error, dsn string) error {
	if err == nil {
		return nil
	}
	pw := password(dsn)
	if pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), pw, "xxxxx"), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func password(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if u.User != nil {
			if pw, ok := u.User.Password(); ok && pw != "" {
				return pw
			}
		}
		return u.Query().Get("password")
	}
	if m := kvPassword.FindStringSubmatch(dsn); m != nil {
		return strings.Trim(m[2], "'")
	}
	return ""
}
