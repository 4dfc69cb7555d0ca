-- The ledger of money-moving calls, return tokens of sessions (a table of
-- their own, as on SQLite), and the indexes that retention purges by.

-- +goose Up
CREATE TABLE ledger (
    goid         BIGINT      NOT NULL,
    operation    TEXT        NOT NULL,
    request_hash TEXT        NOT NULL,
    claim        TEXT        NOT NULL,
    state        TEXT        NOT NULL CHECK (state IN ('pending', 'done', 'in_doubt')),
    payment_id   BIGINT      NOT NULL DEFAULT 0,
    result       TEXT        NOT NULL DEFAULT '',
    description  TEXT        NOT NULL DEFAULT '',
    reply        TEXT        NOT NULL DEFAULT '',
    note         TEXT        NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (goid, operation, request_hash)
);
CREATE INDEX ledger_age ON ledger (created_at);

CREATE TABLE session_tokens (
    payment_id   BIGINT PRIMARY KEY,
    return_token TEXT   NOT NULL
);

CREATE INDEX sessions_age ON sessions (created_at);
CREATE INDEX outbox_finished ON outbox (updated_at) WHERE state <> 'pending';

-- +goose Down
DROP INDEX outbox_finished;
DROP INDEX sessions_age;
DROP TABLE session_tokens;
DROP TABLE ledger;
