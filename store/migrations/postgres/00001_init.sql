-- Sessions and the notification outbox. Tables are created unqualified, so
-- they land in the first schema of the connection's search_path.

-- +goose Up
CREATE TABLE sessions (
    payment_id   BIGINT      PRIMARY KEY,
    parent_id    BIGINT      NOT NULL DEFAULT 0,
    goid         BIGINT      NOT NULL,
    product_name TEXT        NOT NULL,
    order_number TEXT        NOT NULL,
    amount       BIGINT      NOT NULL,
    currency     TEXT        NOT NULL,
    success_url  TEXT        NOT NULL,
    failed_url   TEXT        NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);

CREATE TABLE outbox (
    id           BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dedupe_key   TEXT        NOT NULL UNIQUE,
    goid         BIGINT      NOT NULL,
    payment_id   BIGINT      NOT NULL,
    url          TEXT        NOT NULL,
    state        TEXT        NOT NULL DEFAULT 'pending'
                 CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts     INTEGER     NOT NULL DEFAULT 0,
    next_attempt TIMESTAMPTZ NOT NULL,
    locked_until TIMESTAMPTZ,
    last_error   TEXT        NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);

-- Claim scans only pending rows in due order.
CREATE INDEX outbox_due ON outbox (next_attempt, id) WHERE state = 'pending';

-- +goose Down
DROP TABLE outbox;
DROP TABLE sessions;
