-- The paymentChannels list the e-shop sent with createPayment, so that a
-- status reply names the channel with the code the shop itself used (a
-- code of earlier years such as cz_ge for a bank button). Sessions of
-- before keep '' and are reported with the current codes. Migrations run
-- under an advisory lock: once per database.

-- +goose Up
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS payment_channels TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE sessions DROP COLUMN IF EXISTS payment_channels;
