package store

import (
	"context"
	"database/sql"
	"errors"
)

// stmts holds the hot statements of one SQLite pool, prepared once when
// the store opens. modernc.org/sqlite parses the text of a statement that
// is not prepared on every call: that parse was a sixth of the bridge's
// CPU under repeated createPayment calls (issue 28). PostgreSQL needs none
// of this: pgx caches its own prepared statements per connection.
//
// Prepared up front, not on first use: a statement prepared inside a
// transaction on the single writer connection would wait for a connection
// the transaction itself holds. A statement that does not prepare (a
// schema another process has yet to migrate) runs unprepared, as before.
type stmts struct {
	byText map[string]*sql.Stmt // read only once built
}

// prepareStmts prepares each of texts on db; nil when there are none.
func prepareStmts(ctx context.Context, db *sql.DB, texts ...string) *stmts {
	m := make(map[string]*sql.Stmt, len(texts))
	for _, q := range texts {
		if _, dup := m[q]; dup {
			continue
		}
		if st, err := db.PrepareContext(ctx, q); err == nil {
			m[q] = st
		}
	}
	if len(m) == 0 {
		return nil
	}
	return &stmts{byText: m}
}

// of is the prepared statement of q, or nil.
func (c *stmts) of(q string) *sql.Stmt {
	if c == nil {
		return nil
	}
	return c.byText[q]
}

func (c *stmts) close() error {
	if c == nil {
		return nil
	}
	var err error
	for _, st := range c.byText {
		err = errors.Join(err, st.Close())
	}
	return err
}

// prepare readies the statements of every call's path on SQLite: the
// ledger's claim, read and outcome, and the session's write and read.
func (s *sqlStore) prepare(ctx context.Context) {
	if s.d != sqlite {
		return
	}
	lq, q := s.lq, s.q
	writer := []string{lq.insert, lq.takeOver, lq.insertAlias, lq.takeOverAlias, lq.get,
		lq.baseline, lq.done, lq.inDoubt, lq.notDone, lq.release, q.saveSession, q.saveToken, q.enqueue}
	if s.r == s.w {
		// ":memory:": one pool, which runs the readers' statements too.
		s.ws = prepareStmts(ctx, s.w, append(writer, q.session)...)
		s.rs = s.ws
		return
	}
	s.ws = prepareStmts(ctx, s.w, writer...)
	s.rs = prepareStmts(ctx, s.r, lq.get, q.session)
}

// execW runs q on the writer, prepared when it can be.
func (s *sqlStore) execW(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := s.ws.of(q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return s.w.ExecContext(ctx, q, args...)
}

// execIn runs q in tx (a transaction of the writer), prepared when it can
// be: the writer's statement, bound to the transaction's connection.
func (s *sqlStore) execIn(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if st := s.ws.of(q); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, q, args...)
}

// rowIn reads one row with q in tx, prepared when it can be.
func (s *sqlStore) rowIn(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if st := s.ws.of(q); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, q, args...)
}

// rowW reads one row with q from the writer, prepared when it can be.
func (s *sqlStore) rowW(ctx context.Context, q string, args ...any) *sql.Row {
	if st := s.ws.of(q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.w.QueryRowContext(ctx, q, args...)
}

// rowR reads one row with q from the readers, prepared when it can be.
func (s *sqlStore) rowR(ctx context.Context, q string, args ...any) *sql.Row {
	if st := s.rs.of(q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.r.QueryRowContext(ctx, q, args...)
}
