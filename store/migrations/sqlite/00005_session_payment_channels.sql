-- The paymentChannels list the e-shop sent with createPayment, so that a
-- status reply names the channel with the code the shop itself used (a
-- code of earlier years such as cz_ge for a bank button). Sessions of
-- before keep '' and are reported with the current codes. Two processes
-- opening an old file at once may both try this ALTER; the loser's
-- "duplicate column" is retried by openSQLiteWriter and then finds the
-- migration applied.

-- +goose Up
ALTER TABLE sessions ADD COLUMN payment_channels TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE sessions DROP COLUMN payment_channels;
