-- shop_keys: which of a merchant's keys its shop last signed a call with
-- (an id derived from the key, never the key), shared by the replicas.
-- Notifications queued unsigned (signed when sent, with the key the shop
-- signs with then) need no column: their url starts with "unsigned:"
-- (store/sql.go), which earlier versions fail instead of sending.
-- Migrations run under an advisory lock: once per database.

-- +goose Up
CREATE TABLE IF NOT EXISTS shop_keys (
    goid    BIGINT PRIMARY KEY,
    key_id  TEXT        NOT NULL,
    seen_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS shop_keys;
