-- The usage record (operations/usage): per merchant, aggregated counts of
-- the legacy operations, flows, client libraries, features and retired
-- things it uses. Counts only: no customer data, amounts or order numbers.
-- goid 0 holds calls that name no merchant (touch, paymentMethodList).
-- Replicas add their counts with upserts; the usage_merchants row of a
-- merchant serialises concurrent flushes of it.

-- +goose Up
CREATE TABLE usage_merchants (
    goid       BIGINT      PRIMARY KEY,
    calls      BIGINT      NOT NULL,
    first_seen TIMESTAMPTZ NOT NULL,
    last_seen  TIMESTAMPTZ NOT NULL
);

CREATE TABLE usage_counts (
    goid       BIGINT      NOT NULL,
    kind       TEXT        NOT NULL CHECK (kind IN ('call', 'client', 'feature', 'retired')),
    name       TEXT        NOT NULL,
    detail     TEXT        NOT NULL DEFAULT '',
    calls      BIGINT      NOT NULL,
    first_seen TIMESTAMPTZ NOT NULL,
    last_seen  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (goid, kind, name, detail)
);

-- +goose Down
DROP TABLE usage_counts;
DROP TABLE usage_merchants;
