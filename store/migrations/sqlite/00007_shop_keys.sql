-- shop_keys: which of a merchant's keys its shop last signed a call with
-- (an id derived from the key, never the key), shared by the replicas.
-- Notifications queued unsigned (signed when sent, with the key the shop
-- signs with then) need no column: their url starts with "unsigned:"
-- (store/sql.go), which earlier versions fail instead of sending.

-- +goose Up
CREATE TABLE IF NOT EXISTS shop_keys (
    goid    INTEGER PRIMARY KEY,
    key_id  TEXT NOT NULL,
    seen_at TEXT NOT NULL
) STRICT;

-- +goose Down
DROP TABLE shop_keys;
