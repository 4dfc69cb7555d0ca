-- Sessions and the notification outbox. Times are TEXT in one fixed-width
-- UTC format (2006-01-02T15:04:05.000000Z) so that text order is time order.
-- IF NOT EXISTS: two processes opening a fresh file at once must not fail.

-- +goose Up
CREATE TABLE IF NOT EXISTS sessions (
    payment_id   INTEGER PRIMARY KEY,
    parent_id    INTEGER NOT NULL DEFAULT 0,
    goid         INTEGER NOT NULL,
    product_name TEXT    NOT NULL,
    order_number TEXT    NOT NULL,
    amount       INTEGER NOT NULL,
    currency     TEXT    NOT NULL,
    success_url  TEXT    NOT NULL,
    failed_url   TEXT    NOT NULL,
    created_at   TEXT    NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS outbox (
    id           INTEGER PRIMARY KEY,
    dedupe_key   TEXT    NOT NULL UNIQUE,
    goid         INTEGER NOT NULL,
    payment_id   INTEGER NOT NULL,
    url          TEXT    NOT NULL,
    state        TEXT    NOT NULL DEFAULT 'pending'
                 CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_attempt TEXT    NOT NULL,
    locked_until TEXT,
    last_error   TEXT    NOT NULL DEFAULT '',
    created_at   TEXT    NOT NULL,
    updated_at   TEXT    NOT NULL
) STRICT;

-- Claim scans only pending rows in due order.
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (next_attempt, id) WHERE state = 'pending';

-- +goose Down
DROP TABLE outbox;
DROP TABLE sessions;
