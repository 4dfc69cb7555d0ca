package main

// The preflight changes nothing, migrations run when asked for, and a
// bridge that must not migrate refuses a schema that lacks a migration; the
// connection budget is checked against the real server's max_connections.

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// migrationVersions are this binary's PostgreSQL migrations as the check
// table lists them ("00001, 00002, …") and the newest version.
func migrationVersions(t *testing.T) (string, string) {
	t.Helper()
	entries, err := os.ReadDir("../../store/migrations/postgres")
	require.NoError(t, err)
	var list []string
	for _, e := range entries {
		list = append(list, e.Name()[:5])
	}
	latest, err := strconv.Atoi(list[len(list)-1])
	require.NoError(t, err)
	return strings.Join(list, ", "), strconv.Itoa(latest)
}

// serveRefused runs the bridge (serving) and expects it to refuse to start:
// it returns the output. A bridge that starts instead is killed after 60 s
// and fails the test.
func serveRefused(t *testing.T, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ports := freePorts(t, 3)
	cmd := exec.CommandContext(ctx, bridgeBinary(t))
	cmd.Env = append(append(envWithout("SOAPBRIDGE_"), "SOAPBRIDGE_LISTEN=127.0.0.1:"+ports[0],
		"SOAPBRIDGE_SANDBOX_LISTEN=127.0.0.1:"+ports[1], "SOAPBRIDGE_ADMIN_LISTEN=127.0.0.1:"+ports[2]), env...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "the bridge did not refuse to start: %v\n%s", err, out)
	require.NotEqual(t, -1, ee.ExitCode(), "the bridge served until killed:\n%s", out)
	return string(out)
}

// `soapbridge check` against an empty PostgreSQL schema leaves it empty
// (no table, not even goose's) and says what is pending; `soapbridge
// migrate` applies it and says what it applied; check then says current.
// A bridge with migrate_on_start off refuses the empty schema, naming the
// command to run, and starts once it has run.
func TestCheckChangesNothingMigrateApplies(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	env := []string{"SOAPBRIDGE_DATABASE=" + dsn}
	all, latest := migrationVersions(t)
	pending := strconv.Itoa(strings.Count(all, ",")+1) + " migration(s) pending (" + all + ")"

	out, code := runBinary(t, env, "check")
	assert.Equal(t, 0, code, out)
	t.Logf("check on an empty schema:\n%s", out)
	assert.Contains(t, rowOf(t, out, "store"), "ok")
	assert.Contains(t, rowOf(t, out, "store"), "schema empty: "+pending+"; applied at start")
	assert.Contains(t, rowOf(t, out, "database connections"), "max_replicas 1 × database_max_conns 16 = 16 connections")
	assert.Equal(t, 0, testenv.RelationsInSchema(t, dsn), "check created something in the schema")

	out, code = runBinary(t, append(env, "SOAPBRIDGE_MIGRATE_ON_START=false"), "check")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, rowOf(t, out, "store"), "FAIL")
	assert.Contains(t, rowOf(t, out, "store"), "run soapbridge migrate")
	assert.Equal(t, 0, testenv.RelationsInSchema(t, dsn))

	out = serveRefused(t, append(env, "SOAPBRIDGE_MIGRATE_ON_START=false"))
	assert.Contains(t, out, "database schema empty: "+pending)
	assert.Contains(t, out, "run `soapbridge migrate`")
	assert.Contains(t, out, "(migrate_on_start / SOAPBRIDGE_MIGRATE_ON_START / -migrate-on-start)")
	assert.Equal(t, 0, testenv.RelationsInSchema(t, dsn), "a bridge told not to migrate created something")

	out, code = runBinary(t, env, "migrate")
	require.Equal(t, 0, code, out)
	t.Logf("migrate:\n%s", out)
	assert.Contains(t, out, "applied migration(s) "+all+"; schema current (version "+latest+")")
	tables := testenv.RelationsInSchema(t, dsn)
	assert.Positive(t, tables)

	out, code = runBinary(t, env, "migrate")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "nothing to apply; schema current (version "+latest+")")

	out, code = runBinary(t, append(env, "SOAPBRIDGE_MIGRATE_ON_START=false"), "check")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, rowOf(t, out, "store"), "schema current (version "+latest+")")
	assert.Equal(t, tables, testenv.RelationsInSchema(t, dsn))

	b := startBridge(t, withDB(dsn), withEnv("SOAPBRIDGE_MIGRATE_ON_START=false"))
	b.Stop()
	assert.NotContains(t, b.log.String(), "applying database migrations")
}

// A pool the server cannot give every replica is refused at start, and by
// check, with the figures read from the server; one that fits is logged.
func TestConnectionBudgetAgainstTheServer(t *testing.T) {
	dsn := testenv.PostgresSchema(t)
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	var maxConns int
	require.NoError(t, db.QueryRow(`SELECT current_setting('max_connections')::int`).Scan(&maxConns))
	db.Close()
	tooMany := strconv.Itoa(maxConns/16 + 1) // × 16 connections each is over max_connections
	env := []string{"SOAPBRIDGE_DATABASE=" + dsn, "SOAPBRIDGE_MAX_REPLICAS=" + tooMany}

	out := serveRefused(t, env)
	assert.Contains(t, out, "database connections: max_replicas "+tooMany+" × database_max_conns 16 = ")
	assert.Contains(t, out, "(max_connections "+strconv.Itoa(maxConns)+" − ")
	assert.Contains(t, out, "too many; lower database_max_conns or max_replicas")
	assert.Contains(t, out, "(database_max_conns / SOAPBRIDGE_DATABASE_MAX_CONNS / -database-max-conns; max_replicas / SOAPBRIDGE_MAX_REPLICAS / -max-replicas)")
	assert.Equal(t, 0, testenv.RelationsInSchema(t, dsn), "refused before migrating")

	out, code := runBinary(t, env, "check")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, rowOf(t, out, "database connections"), "FAIL")

	// The same replicas with a pool that fits.
	b := startBridge(t, withDB(dsn), withEnv("SOAPBRIDGE_MAX_REPLICAS="+tooMany, "SOAPBRIDGE_DATABASE_MAX_CONNS=2"))
	waitLog(t, b, "database connections: max_replicas "+tooMany+" × database_max_conns 2 = ")
	b.Stop()
}
