-- The usage record (operations/usage): per merchant, aggregated counts of
-- the legacy operations, flows, client libraries, features and retired
-- things it uses. Counts only: no customer data, amounts or order numbers.
-- Times as in 00001 (fixed-width UTC text). goid 0 holds calls that name no
-- merchant (touch, paymentMethodList).

-- +goose Up
CREATE TABLE IF NOT EXISTS usage_merchants (
    goid       INTEGER PRIMARY KEY,
    calls      INTEGER NOT NULL,
    first_seen TEXT    NOT NULL,
    last_seen  TEXT    NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS usage_counts (
    goid       INTEGER NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('call', 'client', 'feature', 'retired')),
    name       TEXT    NOT NULL,
    detail     TEXT    NOT NULL DEFAULT '',
    calls      INTEGER NOT NULL,
    first_seen TEXT    NOT NULL,
    last_seen  TEXT    NOT NULL,
    PRIMARY KEY (goid, kind, name, detail)
) STRICT;

-- +goose Down
DROP TABLE usage_counts;
DROP TABLE usage_merchants;
