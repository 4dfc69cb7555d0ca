-- Side by side, safely (docs/operations.md#upgrades): see the PostgreSQL
-- migration of the same number. Times are RFC 3339 text, as elsewhere.

-- +goose Up
ALTER TABLE ledger ADD COLUMN alias INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS replicas (
    id             TEXT PRIMARY KEY,
    release        TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    runs_beside    INTEGER NOT NULL,
    host           TEXT NOT NULL DEFAULT '',
    started_at     TEXT NOT NULL,
    heartbeat_at   TEXT NOT NULL
) STRICT;

-- +goose Down
DROP TABLE replicas;
ALTER TABLE ledger DROP COLUMN alias;
