-- The key a payment's return redirects and notifications are signed with
-- is the key the shop created it with: sessions.key_id names it (an id
-- derived from the key, never the key; '' for sessions of before, which
-- fall back to shop_keys, kept readable and no longer written).
--
-- key_overlaps: how long each previous secure key or client secret of a
-- merchant is accepted beside the current one (kind 'secure_key' or
-- 'client_secret', key_id an id of it, never it). first_seen is when a
-- bridge first saw it configured (the default bound counts from it, so a
-- restart does not extend it); ends_at is its end, which a configuration may
-- move while it is still to come, and which once passed is final: no
-- later configuration brings that key back. Two processes opening an old
-- file at once may both try the ALTER; the loser's "duplicate column" is
-- retried by openSQLiteWriter and then finds the migration applied.

-- +goose Up
ALTER TABLE sessions ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS key_overlaps (
    goid       INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    key_id     TEXT    NOT NULL,
    first_seen TEXT    NOT NULL,
    ends_at    TEXT    NOT NULL,
    PRIMARY KEY (goid, kind, key_id)
) STRICT;

-- +goose Down
DROP TABLE IF EXISTS key_overlaps;
ALTER TABLE sessions DROP COLUMN key_id;
