package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/store"
)

// connectionBudget says whether max_replicas bridges of database_max_conns
// connections each fit what the PostgreSQL server admits, and how: a
// sentence for the log or the check table, and an error naming the
// settings when they do not fit.
func connectionBudget(cfg Config, server store.ServerConnections) (string, error) {
	need := cfg.MaxReplicas * cfg.DatabaseMaxConns
	desc := fmt.Sprintf("max_replicas %d × database_max_conns %d = %d connections of the %d the server admits "+
		"(max_connections %d − %d reserved; %d open now)", cfg.MaxReplicas, cfg.DatabaseMaxConns, need,
		server.Available(), server.Max, server.Reserved, server.InUse)
	if need <= server.Available() {
		return desc, nil
	}
	return desc, fmt.Errorf("database connections: %s: too many; lower database_max_conns or max_replicas, or raise the "+
		"server's max_connections (docs/operations.md#database-connections)%s", desc, names("database_max_conns", "max_replicas"))
}

// openStore opens the configured store for serving. It reads the schema
// state and the server's connection limit first (store.Inspect changes
// nothing), refuses a pool the server cannot give every replica, and
// migrates unless migrate_on_start is off, in which case it refuses a
// schema that lacks a migration of this binary.
func openStore(ctx context.Context, cfg Config, log *zap.Logger) (store.Store, error) {
	state, server, err := store.Inspect(ctx, cfg.Database)
	if err != nil {
		return nil, err // store errors redact passwords
	}
	if server != nil {
		desc, err := connectionBudget(cfg, *server)
		if err != nil {
			return nil, err
		}
		log.Info("database connections: " + desc)
	}
	switch {
	case state.Newer():
		// Rolling upgrades: the new release migrated, old replicas still
		// start (migrations only add; docs/operations.md#upgrades).
		log.Warn("database schema is newer than this binary: a newer release migrated it; running on it",
			zap.String("schema", state.String()))
	case !state.Current() && !cfg.MigrateOnStart:
		return nil, fmt.Errorf("database schema %s: this binary needs it migrated; run `soapbridge migrate` with the same "+
			"configuration, or let the bridge migrate at start%s", state, names("migrate_on_start"))
	case !state.Current():
		log.Info("applying database migrations", zap.String("schema", state.String()))
	}
	return store.OpenWith(ctx, cfg.Database, store.Options{MaxConns: cfg.DatabaseMaxConns, NoMigrate: !cfg.MigrateOnStart})
}

// checkStore is the check table's rows about the store: its schema state
// (read, never changed) and, on PostgreSQL, the connection budget.
func checkStore(ctx context.Context, cfg Config) []checkRow {
	where := store.Redact(cfg.Database)
	state, server, err := store.Inspect(ctx, cfg.Database)
	if err != nil {
		return []checkRow{{"store", "FAIL", oneLine(err.Error())}}
	}
	row := checkRow{"store", "ok", where + ": schema " + state.String()}
	switch {
	case state.Newer():
		row.detail += "; this binary runs on it (migrations only add)"
	case !state.Current() && cfg.MigrateOnStart:
		row.detail += "; applied at start (or by soapbridge migrate)"
	case !state.Current():
		row.result, row.detail = "FAIL", row.detail+"; run soapbridge migrate before starting (migrate_on_start is off)"
	}
	rows := []checkRow{row}
	if server != nil {
		desc, err := connectionBudget(cfg, *server)
		if err != nil {
			rows = append(rows, checkRow{"database connections", "FAIL", oneLine(strings.TrimPrefix(err.Error(), "database connections: "))})
		} else {
			rows = append(rows, checkRow{"database connections", "ok", desc})
		}
	}
	return rows
}

// runMigrate applies the pending migrations of the configured store and
// says what it did.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(args, getenv)
	if answered(err, stdout) {
		return nil
	}
	if err != nil {
		return err
	}
	applied, state, err := store.Migrate(ctx, cfg.Database)
	if err != nil {
		return err
	}
	where := store.Redact(cfg.Database)
	if len(applied) == 0 {
		fmt.Fprintf(stdout, "%s: nothing to apply; schema %s\n", where, state)
		return nil
	}
	list := make([]string, len(applied))
	for i, v := range applied {
		list[i] = fmt.Sprintf("%05d", v)
	}
	fmt.Fprintf(stdout, "%s: applied migration(s) %s; schema %s\n", where, strings.Join(list, ", "), state)
	if !state.Current() {
		return errors.New("migrations remain pending after migrate")
	}
	return nil
}
