-- The request id of the call that enqueued a notification, so that its
-- delivery can be logged under the same id as the call's log lines and
-- trace. Migrations run under an advisory lock: once per database.

-- +goose Up
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS request_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE outbox DROP COLUMN IF EXISTS request_id;
