package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// RunsBesideSchema is the oldest schema version whose release this one
// may serve beside on one database: for every release from there on, this
// one still writes what that release reads and takes the locks it takes
// (expand and contract: the ledger's alias rows under CallKey.Legacy, the
// LegacyRefundLock). A release that stops writing a form the releases
// before version N read raises it to N (docs/operations.md#upgrades).
const RunsBesideSchema = 3

// Replica is one bridge process as the replicas table records it: its
// release, the schema version it knows (its newest migration) and the
// oldest schema version whose release it may serve beside.
type Replica struct {
	ID          string
	Release     string
	Schema      int64
	RunsBeside  int64
	Host        string
	StartedAt   time.Time
	HeartbeatAt time.Time
}

// Beside reports whether r and o may serve side by side: each knows a
// schema version the other may run beside.
func (r Replica) Beside(o Replica) bool {
	return o.Schema >= r.RunsBeside && r.Schema >= o.RunsBeside
}

// ReplicaBoard is the replicas table.
type ReplicaBoard interface {
	// Heartbeat records r (its heartbeat now, by the database's clock on
	// PostgreSQL) and returns every replica whose heartbeat is within
	// live, r included, oldest start first. Rows without a heartbeat for
	// an hour are deleted.
	Heartbeat(ctx context.Context, r Replica, live time.Duration) ([]Replica, error)
	// LeaveBoard deletes replica id's row (a clean shutdown).
	LeaveBoard(ctx context.Context, id string) error
	// SchemaVersion is the newest migration this binary knows.
	SchemaVersion() (int64, error)
}

// ReplicaBoardOf is st's replicas table.
func ReplicaBoardOf(st Store) (ReplicaBoard, bool) {
	s, ok := st.(*sqlStore)
	return s, ok
}

// replicaStale is the age past which any replica deletes a row.
const replicaStale = time.Hour

func (s *sqlStore) SchemaVersion() (int64, error) {
	vs, err := knownMigrations(s.d)
	if err != nil || len(vs) == 0 {
		return 0, err
	}
	return slices.Max(vs), nil
}

func (s *sqlStore) Heartbeat(ctx context.Context, r Replica, live time.Duration) ([]Replica, error) {
	now := time.Now()
	var upsert, list, purge string
	var args []any
	var since, stale any
	if s.d == postgres {
		upsert = `INSERT INTO replicas (id, release, schema_version, runs_beside, host, started_at, heartbeat_at)
			VALUES ($1, $2, $3, $4, $5, now(), now())
			ON CONFLICT (id) DO UPDATE SET release = excluded.release, schema_version = excluded.schema_version,
				runs_beside = excluded.runs_beside, host = excluded.host, heartbeat_at = now()`
		args = []any{r.ID, r.Release, r.Schema, r.RunsBeside, r.Host}
		list = `SELECT id, release, schema_version, runs_beside, host, started_at, heartbeat_at FROM replicas
			WHERE heartbeat_at > now() - make_interval(secs => $1) ORDER BY started_at, id`
		since = live.Seconds()
		purge = `DELETE FROM replicas WHERE heartbeat_at < now() - make_interval(secs => $1)`
		stale = replicaStale.Seconds()
	} else {
		at := s.d.timeArg(now)
		upsert = `INSERT INTO replicas (id, release, schema_version, runs_beside, host, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET release = excluded.release, schema_version = excluded.schema_version,
				runs_beside = excluded.runs_beside, host = excluded.host, heartbeat_at = excluded.heartbeat_at`
		args = []any{r.ID, r.Release, r.Schema, r.RunsBeside, r.Host, at, at}
		list = `SELECT id, release, schema_version, runs_beside, host, started_at, heartbeat_at FROM replicas
			WHERE heartbeat_at > ? ORDER BY started_at, id`
		since = s.d.timeArg(now.Add(-live))
		purge = `DELETE FROM replicas WHERE heartbeat_at < ?`
		stale = s.d.timeArg(now.Add(-replicaStale))
	}
	if _, err := s.w.ExecContext(ctx, upsert, args...); err != nil {
		return nil, fmt.Errorf("store: replica heartbeat: %w", err)
	}
	rows, err := s.w.QueryContext(ctx, list, since)
	if err != nil {
		return nil, fmt.Errorf("store: read replicas: %w", err)
	}
	defer rows.Close()
	var out []Replica
	for rows.Next() {
		var o Replica
		if err := rows.Scan(&o.ID, &o.Release, &o.Schema, &o.RunsBeside, &o.Host, timeScan{&o.StartedAt}, timeScan{&o.HeartbeatAt}); err != nil {
			return nil, fmt.Errorf("store: read replicas: %w", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read replicas: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, purge, stale); err != nil {
		return nil, fmt.Errorf("store: purge replicas: %w", err)
	}
	return out, nil
}

func (s *sqlStore) LeaveBoard(ctx context.Context, id string) error {
	if _, err := s.w.ExecContext(ctx, s.d.rebind(`DELETE FROM replicas WHERE id = ?`), id); err != nil {
		return fmt.Errorf("store: leave replicas: %w", err)
	}
	return nil
}
