package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/store"
)

// Return tokens at rest, on both stores: a database of the release that
// stored them as sent (schema version 8) is migrated to their hashes, a
// row an older replica writes afterwards (as sent) reads back as its hash,
// and nothing but a hash can be saved. The table then holds no token.
func TestReturnTokensStoredAsHashes(t *testing.T) {
	for name, fresh := range map[string]freshDSN{"sqlite": sqliteDSN, "postgres": testenv.PostgresSchema} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dsn := fresh(t)
			db := rawDB(t, dsn)
			dialect, dir := goose.DialectPostgres, "migrations/postgres"
			if name == "sqlite" {
				dialect, dir = goose.DialectSQLite3, "migrations/sqlite"
			}
			p, err := goose.NewProvider(dialect, db, os.DirFS(filepath.Clean(dir)), goose.WithDisableGlobalRegistry(true))
			require.NoError(t, err)
			_, err = p.UpTo(ctx, 8)
			require.NoError(t, err)

			// Rows of the release before: 26 base32 capitals as sent, and
			// a session from before tokens.
			const before, later = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "ZYXWVUTSRQPONMLKJIHGFEDCBA"
			for _, q := range []string{
				`INSERT INTO sessions (payment_id, parent_id, goid, product_name, order_number, amount, currency, success_url, failed_url, created_at)
					VALUES (71, 0, 8123456789, 'p', 'O-71', 100, 'CZK', 'https://shop.example/ok', 'https://shop.example/ko', '2030-05-17T10:00:00.000000Z')`,
				`INSERT INTO sessions (payment_id, parent_id, goid, product_name, order_number, amount, currency, success_url, failed_url, created_at)
					VALUES (72, 0, 8123456789, 'p', 'O-72', 100, 'CZK', 'https://shop.example/ok', 'https://shop.example/ko', '2030-05-17T10:00:00.000000Z')`,
				`INSERT INTO session_tokens (payment_id, return_token) VALUES (71, '` + before + `')`,
			} {
				_, err := db.ExecContext(ctx, q)
				require.NoError(t, err)
			}

			s := open(t, dsn)
			got, err := s.Session(ctx, 71)
			require.NoError(t, err)
			assert.Equal(t, store.HashReturnToken(before), got.TokenHash, "the stored token became its hash")
			got, err = s.Session(ctx, 72)
			require.NoError(t, err)
			assert.Empty(t, got.TokenHash, "a session from before tokens still has none")

			// An old replica side by side writes a token as sent.
			_, err = db.ExecContext(ctx, `INSERT INTO session_tokens (payment_id, return_token) VALUES (72, '`+later+`')`)
			require.NoError(t, err)
			s2 := open(t, dsn) // another process: nothing cached
			got, err = s2.Session(ctx, 72)
			require.NoError(t, err)
			assert.Equal(t, store.HashReturnToken(later), got.TokenHash, "read back as its hash")

			err = s.SaveSession(ctx, store.Session{PaymentID: 73, GoID: 1, TokenHash: "QWERTYUIOPASDFGHJKLZXCVBNM"})
			require.ErrorContains(t, err, "not a hex SHA-256")
			_, err = s.Session(ctx, 73)
			require.ErrorIs(t, err, store.ErrNotFound, "nothing saved")
			h := store.HashReturnToken("MNBVCXZLKJHGFDSAPOIUYTREWQ")
			require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 74, GoID: 1, TokenHash: h}))

			stored := map[int64]string{}
			rows, err := db.QueryContext(ctx, `SELECT payment_id, return_token FROM session_tokens`)
			require.NoError(t, err)
			defer rows.Close()
			for rows.Next() {
				var id int64
				var v string
				require.NoError(t, rows.Scan(&id, &v))
				stored[id] = v
			}
			require.NoError(t, rows.Err())
			assert.Equal(t, map[int64]string{71: store.HashReturnToken(before), 72: later, 74: h}, stored,
				"as stored: hashes, and the old replica's row as it wrote it")
			for id, v := range stored {
				if id != 72 {
					assert.NotContains(t, strings.ToUpper(v), before)
					assert.Len(t, v, 64)
				}
			}
		})
	}
}
