-- Per-merchant rate limits hold for the whole cluster: each replica posts,
-- every second, its demand (calls per second) of each rate-limited
-- merchant, and enforces the share of the rate its demand gives it among
-- the replicas that posted lately (internal/access/rates.go). A replica
-- that stops posting (killed) drops out once its seen_at is old; rows an
-- hour old are deleted by any replica.

--
-- The table holds a row per replica and rate-limited merchant, each
-- rewritten every second: no index beside the key, so that the updates
-- stay HOT (in place, no index churn), with room left in each page for
-- them; the reads scan a few hundred rows.

-- +goose Up
CREATE TABLE IF NOT EXISTS rate_demand (
    replica TEXT NOT NULL,
    goid    BIGINT NOT NULL,
    demand  DOUBLE PRECISION NOT NULL,
    seen_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (replica, goid)
) WITH (fillfactor = 50);

-- +goose Down
DROP TABLE rate_demand;
