package store

import (
	"crypto/sha256"
	"database/sql/driver"
	"encoding/hex"
	"fmt"

	sqlitedriver "modernc.org/sqlite"
)

// Return tokens are bearer secrets: whoever holds a payment's token can
// send /callback/return for it and get the shop's signed success redirect.
// So the store keeps only their SHA-256 (Session.TokenHash), and whoever
// reads the database, or a backup of it, finds nothing a callback could
// bring. A callback's token is hashed and compared with the stored hash.
// (Tokens are 130 random bits: a plain hash is as strong as a salted one.)

// HashReturnToken is the hex SHA-256 of a return token, as the store keeps
// it; "" for "".
func HashReturnToken(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// isTokenHash reports whether v has the form of HashReturnToken's result:
// 64 lower-case hex digits. A token itself (26 base32 capitals) never has.
func isTokenHash(v string) bool {
	if len(v) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// storedTokenHash is the hash of what session_tokens.return_token holds: a
// hash as it is; a token itself (a row that a release before migration
// 00009 wrote, side by side with this one) is hashed on reading.
func storedTokenHash(v string) string {
	if v == "" || isTokenHash(v) {
		return v
	}
	return HashReturnToken(v)
}

// checkTokenHash refuses to store anything but a hash (or "": none).
func checkTokenHash(paymentID int64, v string) error {
	if v != "" && !isTokenHash(v) {
		return fmt.Errorf("store: the token hash of payment %d is not a hex SHA-256 (a token is never stored as sent)", paymentID)
	}
	return nil
}

// soapbridge_sha256_hex(text) is HashReturnToken in SQL, for the SQLite migration that
// hashes the tokens stored before it (00009); PostgreSQL has sha256().
func init() {
	sqlitedriver.MustRegisterDeterministicScalarFunction("soapbridge_sha256_hex", 1,
		func(_ *sqlitedriver.FunctionContext, args []driver.Value) (driver.Value, error) {
			switch v := args[0].(type) {
			case string:
				return HashReturnToken(v), nil
			case []byte:
				return HashReturnToken(string(v)), nil
			case nil:
				return nil, nil
			default:
				return nil, fmt.Errorf("soapbridge_sha256_hex: a text argument, not %T", v)
			}
		})
}
