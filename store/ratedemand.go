package store

import (
	"context"
	"fmt"
	"time"
)

// RateDemand is one merchant's demand over the replicas that posted for
// it lately, the asking one included.
type RateDemand struct {
	Replicas int     // replicas that posted within the live window
	Demand   float64 // their demands (calls per second) summed
}

// RateBoard is where bridge processes sharing a PostgreSQL database post
// their demand of each rate-limited merchant, so that each enforces its
// share of the merchant's rate (internal/access, rates.go).
type RateBoard interface {
	// PostDemand records replica's demand by goid and returns, for those
	// goids, the demand of every replica that posted within live.
	PostDemand(ctx context.Context, replica string, demand map[int64]float64, live time.Duration) (map[int64]RateDemand, error)
	// Leave removes replica's posts: the others take over its shares at
	// their next post instead of after the live window.
	Leave(ctx context.Context, replica string) error
}

// RateBoardOf is st's rate board. Only a PostgreSQL store has one: an
// SQLite store belongs to one process, which needs no sharing.
func RateBoardOf(st Store) (RateBoard, bool) {
	s, ok := st.(*sqlStore)
	if !ok || s.d != postgres {
		return nil, false
	}
	return s, true
}

// rateDemandStale is the age past which any replica deletes posts (of
// replicas long gone).
const rateDemandStale = time.Hour

func (s *sqlStore) PostDemand(ctx context.Context, replica string, demand map[int64]float64, live time.Duration) (map[int64]RateDemand, error) {
	goids, ds := make([]int64, 0, len(demand)), make([]float64, 0, len(demand))
	for g, d := range demand {
		goids = append(goids, g)
		ds = append(ds, d)
	}
	// The server's clock throughout: the replicas' clocks may differ.
	if _, err := s.w.ExecContext(ctx, `INSERT INTO rate_demand (replica, goid, demand, seen_at)
		SELECT $1, g, d, now() FROM unnest($2::bigint[], $3::float8[]) AS t(g, d)
		ON CONFLICT (replica, goid) DO UPDATE SET demand = excluded.demand, seen_at = excluded.seen_at`, replica, goids, ds); err != nil {
		return nil, fmt.Errorf("store: post rate demand: %w", err)
	}
	rows, err := s.w.QueryContext(ctx, `SELECT goid, count(*), sum(demand) FROM rate_demand
		WHERE goid = ANY($1) AND seen_at > now() - make_interval(secs => $2) GROUP BY goid`, goids, live.Seconds())
	if err != nil {
		return nil, fmt.Errorf("store: read rate demand: %w", err)
	}
	defer rows.Close()
	out := make(map[int64]RateDemand, len(goids))
	for rows.Next() {
		var g int64
		var d RateDemand
		if err := rows.Scan(&g, &d.Replicas, &d.Demand); err != nil {
			return nil, fmt.Errorf("store: read rate demand: %w", err)
		}
		out[g] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read rate demand: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM rate_demand WHERE seen_at < now() - make_interval(secs => $1)`,
		rateDemandStale.Seconds()); err != nil {
		return nil, fmt.Errorf("store: purge rate demand: %w", err)
	}
	return out, nil
}

func (s *sqlStore) Leave(ctx context.Context, replica string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM rate_demand WHERE replica = $1`, replica); err != nil {
		return fmt.Errorf("store: leave rate demand: %w", err)
	}
	return nil
}
