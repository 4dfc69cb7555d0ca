-- Notifications are signed when they are sent, not when they are queued,
-- so that a key rotated meanwhile signs them as the shop expects: a row
-- queued unsigned carries its identity in its URL without the signature.
-- Rows queued by earlier versions stay signed (unsigned = false).
-- shop_keys: which of a merchant's keys its shop last signed a call with
-- (an id derived from the key, never the key), shared by the replicas.
-- Migrations run under an advisory lock: once per database.

-- +goose Up
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS unsigned BOOLEAN NOT NULL DEFAULT FALSE;
CREATE TABLE IF NOT EXISTS shop_keys (
    goid    BIGINT PRIMARY KEY,
    key_id  TEXT        NOT NULL,
    seen_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS shop_keys;
ALTER TABLE outbox DROP COLUMN IF EXISTS unsigned;
