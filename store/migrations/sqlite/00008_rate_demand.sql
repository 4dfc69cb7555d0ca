-- Per-merchant rate limits are shared between replicas through PostgreSQL
-- only (the rate_demand table there): an SQLite store belongs to one
-- process, which enforces each rate alone. Nothing to change; the version
-- keeps both dialects' numbering alike.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
