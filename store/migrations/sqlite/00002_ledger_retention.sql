-- The ledger of money-moving calls, return tokens of sessions, and the
-- indexes that retention purges by. Tokens live in a table of their own so
-- that this migration only creates (IF NOT EXISTS): two processes opening
-- a file at once may both run it, and SQLite has no ADD COLUMN IF NOT EXISTS.

-- +goose Up
CREATE TABLE IF NOT EXISTS ledger (
    goid         INTEGER NOT NULL,
    operation    TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    claim        TEXT    NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('pending', 'done', 'in_doubt')),
    payment_id   INTEGER NOT NULL DEFAULT 0,
    result       TEXT    NOT NULL DEFAULT '',
    description  TEXT    NOT NULL DEFAULT '',
    reply        TEXT    NOT NULL DEFAULT '',
    note         TEXT    NOT NULL DEFAULT '',
    created_at   TEXT    NOT NULL,
    updated_at   TEXT    NOT NULL,
    PRIMARY KEY (goid, operation, request_hash)
) STRICT;
CREATE INDEX IF NOT EXISTS ledger_age ON ledger (created_at);

CREATE TABLE IF NOT EXISTS session_tokens (
    payment_id   INTEGER PRIMARY KEY,
    return_token TEXT    NOT NULL
) STRICT;

CREATE INDEX IF NOT EXISTS sessions_age ON sessions (created_at);
CREATE INDEX IF NOT EXISTS outbox_finished ON outbox (updated_at) WHERE state <> 'pending';

-- +goose Down
DROP INDEX outbox_finished;
DROP INDEX sessions_age;
DROP TABLE session_tokens;
DROP TABLE ledger;
