-- The usage record's days (operations/usage): per merchant and UTC day
-- (2006-01-02), the legacy calls answered and the calls refused, for the
-- 30-day charts of the status page and the migration report. A flush
-- deletes a merchant's days older than 30 before its latest: bounded by
-- days × merchants. Replicas add with upserts.

-- +goose Up
CREATE TABLE usage_days (
    goid    BIGINT NOT NULL,
    day     TEXT   NOT NULL,
    calls   BIGINT NOT NULL DEFAULT 0,
    refused BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (goid, day)
);

-- +goose Down
DROP TABLE usage_days;
