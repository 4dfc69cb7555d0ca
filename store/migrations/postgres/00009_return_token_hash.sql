-- Return tokens are kept as their hex SHA-256 (store/tokenhash.go), so a
-- copy of the database holds nothing a stranger could send to
-- /callback/return. The column keeps its name, so a replica of the release
-- before can still save sessions (its tokens as sent, which this release
-- hashes on reading: storedTokenHash), but it refuses the callbacks of
-- hashed rows: upgrade without old and new replicas side by side
-- (docs/operations.md, Upgrades). A token is 26 base32
-- capitals, a hash 64 hex digits, so the update is idempotent.

-- +goose Up
UPDATE session_tokens SET return_token = encode(sha256(convert_to(return_token, 'UTF8')), 'hex')
    WHERE return_token <> '' AND length(return_token) <> 64;

-- +goose Down
-- A hash cannot be turned back into its token.
SELECT 1;
