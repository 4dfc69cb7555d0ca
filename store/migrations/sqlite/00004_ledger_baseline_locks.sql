-- The refund baseline of a ledger entry in columns of its own (before, it
-- was text inside the note). A NULL amount means no baseline was recorded.
-- The ids are a JSON array of the refund ids of that amount that existed
-- before the refund's POST. Locks (the per-payment refund lock) are rows:
-- SQLite has no advisory locks, and a row held by a process that died
-- expires. Two processes opening an old file at once may both try the
-- ALTERs; the loser's "duplicate column" is retried by openSQLiteWriter and
-- then finds the migration applied (goose runs it in one transaction).

-- The recurring children of a parent are looked up when a lost
-- create-recurrence reply is reconciled; the unsettled refunds of a payment
-- before each refund.

-- +goose Up
ALTER TABLE ledger ADD COLUMN baseline_amount INTEGER;
ALTER TABLE ledger ADD COLUMN baseline_refund_ids TEXT NOT NULL DEFAULT '[]';
CREATE TABLE IF NOT EXISTS locks (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions (parent_id) WHERE parent_id <> 0;
CREATE INDEX IF NOT EXISTS ledger_refunds ON ledger (goid, payment_id) WHERE baseline_amount IS NOT NULL;

-- +goose Down
DROP INDEX ledger_refunds;
DROP INDEX sessions_parent;
DROP TABLE locks;
ALTER TABLE ledger DROP COLUMN baseline_refund_ids;
ALTER TABLE ledger DROP COLUMN baseline_amount;
