-- Notifications are signed when they are sent, not when they are queued,
-- so that a key rotated meanwhile signs them as the shop expects: a row
-- queued unsigned carries its identity in its URL without the signature.
-- Rows queued by earlier versions stay signed (unsigned = 0).
-- shop_keys: which of a merchant's keys its shop last signed a call with
-- (an id derived from the key, never the key). Two processes opening an
-- old file at once may both try the ALTER; the loser's "duplicate column"
-- is retried by openSQLiteWriter and then finds the migration applied.

-- +goose Up
ALTER TABLE outbox ADD COLUMN unsigned INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS shop_keys (
    goid    INTEGER PRIMARY KEY,
    key_id  TEXT NOT NULL,
    seen_at TEXT NOT NULL
) STRICT;

-- +goose Down
DROP TABLE shop_keys;
ALTER TABLE outbox DROP COLUMN unsigned;
