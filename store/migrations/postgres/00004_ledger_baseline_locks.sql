-- The refund baseline of a ledger entry in columns of its own (before, it
-- was text inside the note). A NULL amount means no baseline was recorded.
-- The ids are a JSON array of the refund ids of that amount that existed
-- before the refund's POST. Refund locks are advisory locks on PostgreSQL:
-- no table. Migrations run under an advisory lock: once per database.

-- The recurring children of a parent are looked up when a lost
-- create-recurrence reply is reconciled; the unsettled refunds of a payment
-- before each refund.

-- +goose Up
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS baseline_amount BIGINT;
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS baseline_refund_ids TEXT NOT NULL DEFAULT '[]';
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions (parent_id) WHERE parent_id <> 0;
CREATE INDEX IF NOT EXISTS ledger_refunds ON ledger (goid, payment_id) WHERE baseline_amount IS NOT NULL;

-- +goose Down
DROP INDEX ledger_refunds;
DROP INDEX sessions_parent;
ALTER TABLE ledger DROP COLUMN IF EXISTS baseline_refund_ids;
ALTER TABLE ledger DROP COLUMN IF EXISTS baseline_amount;
