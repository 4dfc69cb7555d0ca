-- The request id of the call that enqueued a notification, so that its
-- delivery can be logged under the same id as the call's log lines and
-- trace. Two processes opening an old file at once may both try this
-- ALTER; the loser's "duplicate column" is retried by openSQLiteWriter and
-- then finds the migration applied.

-- +goose Up
ALTER TABLE outbox ADD COLUMN request_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE outbox DROP COLUMN request_id;
