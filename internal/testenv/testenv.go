// Package testenv lets tests that need an outside tool (php, java, chromium,
// PostgreSQL) skip with a message naming it, except under CI=true, where a
// missing tool fails the test: CI installs everything, so absence is a bug.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// InCI reports whether the tests run under CI (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing skips t, or fails it under CI, naming what is missing.
func Missing(t testing.TB, what, install string) {
	t.Helper()
	msg := what + " is not available (install: " + install + ")"
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// LookPath returns the path of tool, or skips/fails t naming it.
func LookPath(t testing.TB, tool, install string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		Missing(t, tool, install)
	}
	return p
}

// PostgresDSN returns a DSN of a reachable PostgreSQL: SOAPBRIDGE_TEST_PG_DSN,
// or the local trust-auth server of the development machines. It skips/fails
// t when none answers.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("SOAPBRIDGE_TEST_PG_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	db, err := sql.Open("pgx", dsn)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = db.PingContext(ctx)
		cancel()
		db.Close()
	}
	if err != nil {
		Missing(t, "PostgreSQL at "+dsn+" ("+err.Error()+")", "apt-get install postgresql, or set SOAPBRIDGE_TEST_PG_DSN")
	}
	return dsn
}

// PostgresSchema gives t a new, empty schema soapbridge_test_<random> in the
// PostgresDSN database, so test packages and runs sharing it never see each
// other's rows. It returns a DSN whose search_path selects the schema, and
// drops the schema when t ends. It skips/fails t like PostgresDSN.
func PostgresSchema(t testing.TB) string {
	t.Helper()
	base := PostgresDSN(t)
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	schema := "soapbridge_test_" + hex.EncodeToString(b)
	db, err := sql.Open("pgx", base)
	if err == nil {
		_, err = db.Exec(`CREATE SCHEMA ` + schema)
		db.Close()
	}
	if err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err == nil {
			_, err = db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
			db.Close()
		}
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	if !strings.Contains(base, "://") {
		return base + " search_path=" + schema // key=value DSN
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse the PostgreSQL DSN: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// RelationsInSchema counts every relation (tables, sequences, indexes,
// views) of the schema a PostgresSchema DSN selects, so a test can show
// that something created nothing.
func RelationsInSchema(t testing.TB, dsn string) int {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema()`).Scan(&n); err != nil {
		t.Fatalf("count the schema's relations: %v", err)
	}
	return n
}
