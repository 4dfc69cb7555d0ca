package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/pressly/goose/v3"
)

// dialect is what differs between SQLite and PostgreSQL; the SQL itself is
// written once, in the subset both understand.
type dialect struct {
	name  string
	goose goose.Dialect
	// dollar: placeholders are $1, $2... instead of ?.
	dollar bool
	// lockRows is appended to the row choice of Claim.
	lockRows string
	// timeArg turns a time into the column's representation.
	timeArg func(time.Time) any
}

// sqliteTime is fixed-width so that SQLite's text comparison orders times.
const sqliteTime = "2006-01-02T15:04:05.000000Z"

var (
	sqlite = &dialect{
		name:    "sqlite",
		goose:   goose.DialectSQLite3,
		timeArg: func(t time.Time) any { return utc(t).Format(sqliteTime) },
		// One writer at a time already: nothing to lock.
	}
	postgres = &dialect{
		name:   "postgres",
		goose:  goose.DialectPostgres,
		dollar: true,
		// Concurrent claimers pass over each other's rows instead of
		// waiting for them, so each gets distinct rows.
		lockRows: " FOR UPDATE SKIP LOCKED",
		timeArg:  func(t time.Time) any { return utc(t) },
	}
)

// utc is t in UTC at the microsecond precision both databases keep, so
// what is read back equals what was written.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// rebind rewrites ? placeholders for dialects that number them. The
// queries below hold no ? inside string literals.
func (d *dialect) rebind(q string) string {
	if !d.dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

type queries struct {
	saveSession, saveToken, session, children  string
	enqueue, claim                             string
	delivered, retry, dead, exists, countState string
}

const sessionCols = `payment_id, parent_id, goid, product_name, order_number, amount, currency, success_url, failed_url, created_at, payment_channels, key_id`
const qualifiedSessionCols = `s.payment_id, s.parent_id, s.goid, s.product_name, s.order_number, s.amount, s.currency, s.success_url, s.failed_url, s.created_at, s.payment_channels, s.key_id`
const outboxCols = `id, goid, payment_id, dedupe_key, url, attempts, next_attempt, last_error, created_at, request_id`

// unsignedScheme marks, in the url column, a notification queued without
// its signature (Notification.Unsigned). A prefix rather than a column of
// its own: a replica of an earlier version, still running during a rolling
// upgrade, reads such a row as a URL of an unknown scheme and fails the
// attempt (it is retried, and signed by a current replica) instead of
// sending the shop a notification without its signature.
const unsignedScheme = "unsigned:"

func (d *dialect) queries() queries {
	return queries{
		saveSession: d.rebind(`INSERT INTO sessions (` + sessionCols + `)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (payment_id) DO UPDATE SET
				parent_id = excluded.parent_id, goid = excluded.goid,
				product_name = excluded.product_name, order_number = excluded.order_number,
				amount = excluded.amount, currency = excluded.currency,
				success_url = excluded.success_url, failed_url = excluded.failed_url,
				created_at = excluded.created_at, payment_channels = excluded.payment_channels,
				key_id = CASE WHEN excluded.key_id = '' THEN sessions.key_id ELSE excluded.key_id END`),
		// A save without a token keeps the stored one (see Session.TokenHash).
		saveToken: d.rebind(`INSERT INTO session_tokens (payment_id, return_token) VALUES (?, ?)
			ON CONFLICT (payment_id) DO UPDATE SET return_token = excluded.return_token`),
		session: d.rebind(`SELECT ` + qualifiedSessionCols + `, COALESCE(t.return_token, '')
			FROM sessions s LEFT JOIN session_tokens t ON t.payment_id = s.payment_id
			WHERE s.payment_id = ?`),
		children: d.rebind(`SELECT ` + qualifiedSessionCols + `, COALESCE(t.return_token, '')
			FROM sessions s LEFT JOIN session_tokens t ON t.payment_id = s.payment_id
			WHERE s.parent_id = ? ORDER BY s.payment_id`),
		enqueue: d.rebind(`INSERT INTO outbox
				(dedupe_key, goid, payment_id, url, state, attempts, next_attempt, last_error, created_at, updated_at, request_id)
			VALUES (?, ?, ?, ?, 'pending', 0, ?, '', ?, ?, ?)
			ON CONFLICT (dedupe_key) DO NOTHING`),
		// One statement, so choosing rows and leasing them is atomic: on
		// SQLite a write statement holds the write lock from its start, on
		// PostgreSQL the chosen rows stay locked until the lease is written.
		claim: d.rebind(`UPDATE outbox SET locked_until = ?, updated_at = ?
			WHERE id IN (
				SELECT id FROM outbox
				WHERE state = 'pending' AND next_attempt <= ?
					AND (locked_until IS NULL OR locked_until <= ?)
				ORDER BY next_attempt, id
				LIMIT ?` + d.lockRows + `)
			RETURNING ` + outboxCols),
		// Only a pending row changes: once delivered or dead, a late report
		// from a worker whose lease ran out does not revive it.
		delivered: d.rebind(`UPDATE outbox
			SET state = 'delivered', attempts = attempts + 1, locked_until = NULL, updated_at = ?
			WHERE id = ? AND state = 'pending'`),
		retry: d.rebind(`UPDATE outbox
			SET attempts = attempts + 1, next_attempt = ?, last_error = ?, locked_until = NULL, updated_at = ?
			WHERE id = ? AND state = 'pending'`),
		dead: d.rebind(`UPDATE outbox
			SET state = 'dead', attempts = attempts + 1, last_error = ?, locked_until = NULL, updated_at = ?
			WHERE id = ? AND state = 'pending'`),
		exists:     d.rebind(`SELECT 1 FROM outbox WHERE id = ?`),
		countState: `SELECT state, COUNT(*) FROM outbox GROUP BY state`,
	}
}

// sqlStore is the Store on database/sql for both dialects. Writes go to w,
// reads to r (the same pool except for SQLite files, where w is the single
// writer connection).
type sqlStore struct {
	d    *dialect
	q    queries
	lq   ledgerQueries
	pq   purgeQueries
	w, r *sql.DB
	// ws and rs: prepared statements of w and r (SQLite only, see stmts).
	ws, rs *stmts
	// locks holds PostgreSQL's advisory locks, a connection each (nil on
	// SQLite, whose locks are rows).
	locks *sql.DB
	// sessions: rows read, immutable once written (see sessionCache).
	sessions *sessionCache
	// repeats: ledger keys whose claim this process found held lately, a
	// hint only (see heldEntry).
	repeats *lru.Cache[CallKey, struct{}]
}

// repeatsSize bounds the ledger keys remembered as repeated (some 380
// bytes each with both hashes, measured: 1.5 MB at most).
const repeatsSize = 4096

func newSQLStore(d *dialect, w, r *sql.DB) *sqlStore {
	repeats, _ := lru.New[CallKey, struct{}](repeatsSize) // errs only on a size ≤ 0
	return &sqlStore{d: d, q: d.queries(), lq: d.ledgerQueries(), pq: d.purgeQueries(), w: w, r: r,
		sessions: newSessionCache(), repeats: repeats}
}

// The wall clock only fills bookkeeping columns (updated_at, a zero
// CreatedAt); the times that decide behaviour come from the caller.

func (s *sqlStore) SaveSession(ctx context.Context, ss Session) error {
	if ss.CreatedAt.IsZero() {
		ss.CreatedAt = time.Now()
	}
	if err := checkTokenHash(ss.PaymentID, ss.TokenHash); err != nil {
		return err
	}
	// After the write ends, however it ends: a read racing it must not
	// leave the replaced row in the cache.
	defer s.sessions.saved(ss.PaymentID)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.execIn(ctx, tx, s.q.saveSession,
			ss.PaymentID, ss.ParentID, ss.GoID, ss.ProductName, ss.OrderNumber, ss.Amount,
			ss.Currency, ss.SuccessURL, ss.FailedURL, s.d.timeArg(ss.CreatedAt), ss.PaymentChannels, ss.KeyID); err != nil {
			return err
		}
		if ss.TokenHash == "" {
			return nil
		}
		_, err := s.execIn(ctx, tx, s.q.saveToken, ss.PaymentID, ss.TokenHash)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: save session of payment %d: %w", ss.PaymentID, err)
	}
	return nil
}

// inTx runs f in a write transaction, committed when f returns nil.
func (s *sqlStore) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) Session(ctx context.Context, paymentID int64) (Session, error) {
	if ss, ok := s.sessions.get(paymentID); ok {
		return ss, nil
	}
	return s.readSession(ctx, paymentID)
}

// readSession reads a session the cache does not hold. Apart from
// Session, so that a cached read (every poll of a payment but the first)
// needs no room for the query's frames: the handler's goroutine then fits
// in 8 KiB of stack (issue 28).
//
//go:noinline
func (s *sqlStore) readSession(ctx context.Context, paymentID int64) (Session, error) {
	loaded, saves := s.sessions.before()
	ss, err := scanSession(s.rowR(ctx, s.q.session, paymentID))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, ErrNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("store: read session of payment %d: %w", paymentID, err)
	}
	s.sessions.add(ss, loaded, saves)
	return ss, nil
}

// scanSession reads a row of qualifiedSessionCols and the return token's
// hash.
func scanSession(row interface{ Scan(...any) error }) (Session, error) {
	var ss Session
	err := row.Scan(&ss.PaymentID, &ss.ParentID, &ss.GoID, &ss.ProductName, &ss.OrderNumber, &ss.Amount,
		&ss.Currency, &ss.SuccessURL, &ss.FailedURL, timeScan{&ss.CreatedAt}, &ss.PaymentChannels, &ss.KeyID, &ss.TokenHash)
	ss.TokenHash = storedTokenHash(ss.TokenHash)
	return ss, err
}

func (s *sqlStore) Children(ctx context.Context, parentID int64) ([]Session, error) {
	rows, err := s.r.QueryContext(ctx, s.q.children, parentID)
	if err != nil {
		return nil, fmt.Errorf("store: read children of payment %d: %w", parentID, err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		ss, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("store: read children of payment %d: %w", parentID, err)
		}
		out = append(out, ss)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read children of payment %d: %w", parentID, err)
	}
	return out, nil
}

func (s *sqlStore) Enqueue(ctx context.Context, n Notification) (bool, error) {
	if n.Key == "" || n.URL == "" {
		return false, fmt.Errorf("store: enqueue notification of payment %d: key and URL are required", n.PaymentID)
	}
	t := time.Now()
	if n.CreatedAt.IsZero() {
		n.CreatedAt = t
	}
	if n.NextAttempt.IsZero() {
		n.NextAttempt = n.CreatedAt // due at once
	}
	target := n.URL
	if n.Unsigned {
		target = unsignedScheme + target
	}
	res, err := s.execW(ctx, s.q.enqueue,
		n.Key, n.GoID, n.PaymentID, target,
		s.d.timeArg(n.NextAttempt), s.d.timeArg(n.CreatedAt), s.d.timeArg(t), n.RequestID)
	if err != nil {
		return false, fmt.Errorf("store: enqueue notification %q: %w", n.Key, err)
	}
	added, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: enqueue notification %q: %w", n.Key, err)
	}
	return added == 1, nil
}

func (s *sqlStore) Claim(ctx context.Context, at time.Time, limit int, lease time.Duration) ([]Notification, error) {
	if limit <= 0 {
		return nil, nil
	}
	if lease <= 0 {
		return nil, fmt.Errorf("store: claim notifications: lease %v is not positive", lease)
	}
	rows, err := s.w.QueryContext(ctx, s.q.claim,
		s.d.timeArg(at.Add(lease)), s.d.timeArg(time.Now()), s.d.timeArg(at), s.d.timeArg(at), limit)
	if err != nil {
		return nil, fmt.Errorf("store: claim notifications: %w", err)
	}
	defer rows.Close()
	var out []Notification
	for rows.Next() {
		var n Notification
		if err := rows.Scan(&n.ID, &n.GoID, &n.PaymentID, &n.Key, &n.URL, &n.Attempts,
			timeScan{&n.NextAttempt}, &n.LastError, timeScan{&n.CreatedAt}, &n.RequestID); err != nil {
			return nil, fmt.Errorf("store: claim notifications: %w", err)
		}
		n.URL, n.Unsigned = strings.CutPrefix(n.URL, unsignedScheme)
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: claim notifications: %w", err)
	}
	// RETURNING gives no order; hand out the most overdue first.
	sort.Slice(out, func(i, j int) bool {
		if !out[i].NextAttempt.Equal(out[j].NextAttempt) {
			return out[i].NextAttempt.Before(out[j].NextAttempt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (s *sqlStore) Delivered(ctx context.Context, id int64) error {
	return s.finish(ctx, "mark delivered", id, s.q.delivered, s.d.timeArg(time.Now()), id)
}

func (s *sqlStore) Retry(ctx context.Context, id int64, next time.Time, lastErr string) error {
	return s.finish(ctx, "schedule retry of", id, s.q.retry,
		s.d.timeArg(next), Clip(lastErr, maxLastError), s.d.timeArg(time.Now()), id)
}

func (s *sqlStore) Dead(ctx context.Context, id int64, lastErr string) error {
	return s.finish(ctx, "mark dead", id, s.q.dead, Clip(lastErr, maxLastError), s.d.timeArg(time.Now()), id)
}

// finish runs an update of notification id that applies only to a pending
// row. An update of a row already delivered or dead is a no-op; of a row
// that does not exist, ErrNotFound.
func (s *sqlStore) finish(ctx context.Context, what string, id int64, q string, args ...any) error {
	res, err := s.w.ExecContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("store: %s notification %d: %w", what, id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: %s notification %d: %w", what, id, err)
	}
	if n > 0 {
		return nil
	}
	var one int
	err = s.r.QueryRowContext(ctx, s.q.exists, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: %s notification %d: %w", what, id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: %s notification %d: %w", what, id, err)
	}
	return nil
}

func (s *sqlStore) Counts(ctx context.Context) (OutboxCounts, error) {
	var c OutboxCounts
	rows, err := s.r.QueryContext(ctx, s.q.countState)
	if err != nil {
		return c, fmt.Errorf("store: count outbox: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return c, fmt.Errorf("store: count outbox: %w", err)
		}
		switch state {
		case "pending":
			c.Pending = n
		case "delivered":
			c.Delivered = n
		case "dead":
			c.Dead = n
		}
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("store: count outbox: %w", err)
	}
	return c, nil
}

// HighestPaymentID is the highest payment id the store remembers, in a
// session or a notification (0 when none): the embedded sandbox hands out
// ids above it, so a kept database never sees one id for two payments.
func (s *sqlStore) HighestPaymentID(ctx context.Context) (int64, error) {
	var id int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM (
			SELECT MAX(payment_id) AS id FROM sessions
			UNION ALL SELECT MAX(payment_id) FROM outbox) AS ids`).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: highest payment id: %w", err)
	}
	return id, nil
}

func (s *sqlStore) Close() error {
	err := s.ws.close()
	if s.rs != s.ws {
		err = errors.Join(err, s.rs.close())
	}
	err = errors.Join(err, s.w.Close())
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	if s.locks != nil {
		err = errors.Join(err, s.locks.Close())
	}
	if err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// maxLastError bounds what a failing e-shop can make us store per row.
const maxLastError = 1000

// Clip cuts s to at most n bytes of valid UTF-8 (a rune cut in two and
// any invalid byte of the kept part are dropped): what the bridge stores
// or aggregates of a text it was sent. The one such bound: the usage
// record, the ledger's notes and the outbox's last error all use it.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// timeScan reads a time column: a time.Time from PostgreSQL, the
// fixed-width UTC text from SQLite.
type timeScan struct{ t *time.Time }

func (ts timeScan) Scan(v any) error {
	switch x := v.(type) {
	case time.Time:
		*ts.t = x.UTC()
		return nil
	case string:
		return ts.parse(x)
	case []byte:
		return ts.parse(string(x))
	}
	return fmt.Errorf("time column holds %T", v)
}

func (ts timeScan) parse(s string) error {
	t, err := time.Parse(sqliteTime, s)
	if err != nil {
		return fmt.Errorf("time column: %w", err)
	}
	*ts.t = t
	return nil
}
