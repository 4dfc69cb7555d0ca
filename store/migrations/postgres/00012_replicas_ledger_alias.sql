-- Side by side, safely (docs/operations.md#upgrades).
--
-- ledger.alias marks the second row of a money call that this release
-- also writes under the key the previous release gives the same call
-- (expand and contract): the previous release finds it, this one counts
-- and lists only the first row.
--
-- replicas: each bridge process records its release and schema version
-- and renews heartbeat_at every few seconds; a replica that finds another
-- one serving that it cannot run beside (the versions each may run beside)
-- refuses money-moving calls. Rows whose heartbeat stopped long ago are
-- deleted by any replica; a clean shutdown deletes its own.

-- +goose Up
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS alias BOOLEAN NOT NULL DEFAULT FALSE;
CREATE TABLE IF NOT EXISTS replicas (
    id             TEXT PRIMARY KEY,
    release        TEXT NOT NULL,
    schema_version BIGINT NOT NULL,
    runs_beside    BIGINT NOT NULL,
    host           TEXT NOT NULL DEFAULT '',
    started_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE replicas;
ALTER TABLE ledger DROP COLUMN IF EXISTS alias;
