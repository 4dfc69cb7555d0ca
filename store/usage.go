package store

// The usage record (operations/usage): per merchant, aggregated counts of
// what it still uses of the legacy interface. Every replica adds its sums
// here (an upsert that increments), so the tables hold the whole cluster's
// counts. Only counts, names and times: no customer data, no amounts, no
// order numbers. Rows are never purged: they are bounded per merchant
// (UsageLimits) and only as many as the merchants.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// UsageSchemaVersion is the migration that adds the usage tables: a
// database at an earlier version (or none) holds no usage record yet.
const UsageSchemaVersion = 6

// UsageKind is what a usage row counts.
type UsageKind string

// Kinds of usage rows and what their Name and Detail hold.
const (
	UsageCall    UsageKind = "call"    // Name: operation or flow; Detail: result
	UsageClient  UsageKind = "client"  // Name: client family; Detail: version
	UsageFeature UsageKind = "feature" // Name: legacy feature
	UsageRetired UsageKind = "retired" // Name: what ("channel cz_vb")
	// UsageDay counts go to the usage_days table (UsageDays reads them):
	// Name: the UTC day (2006-01-02); Detail: DayCalls or DayRefused.
	UsageDay UsageKind = "day"
)

// Details of UsageDay counts: a merchant's legacy calls answered and
// refused per day, kept for DaysKept days before the latest.
const (
	DayCalls   = "calls"
	DayRefused = "refused"
	DaysKept   = 30
)

// UsageDaysSchemaVersion is the migration that adds usage_days.
const UsageDaysSchemaVersion = 11

// UsageDayCount is one merchant's day.
type UsageDayCount struct {
	GoID           int64
	Day            string // 2006-01-02, UTC
	Calls, Refused int64
}

// CallUnverified is the Detail of UsageCall rows counting calls refused
// before they were verified (a stranger may have sent them): they count in
// their own row and as refused in the day, but not in the merchant's
// totals (usage_merchants: calls, first and last seen).
const CallUnverified = "unverified"

// CallDenied is the Detail of UsageCall rows counting calls the access
// rules refused (allowed_networks, HTTP Basic credentials, a blocked
// address) or the merchant's rate limit: the rules run before the call is
// verified, so a stranger may have sent them. Like CallUnverified ones they
// count in their own row and as refused in the day, not in the merchant's
// totals.
const CallDenied = "denied"

// MerchantsCall tells whether a UsageCall row of detail counts the
// merchant's own calls: whatever the merchant's record shows as its calls
// and its first and last call (usage_merchants, an operation's first and
// last seen, the last-call gauge) counts those alone. Rows of calls
// refused before verification (CallUnverified) or by the access rules
// (CallDenied) are a failure of their operation and a refused call of the
// day, nothing more.
func MerchantsCall(detail string) bool { return detail != CallUnverified && detail != CallDenied }

// UsageOther is the overflow name: a client version past a merchant's
// limit is counted as version UsageOther of its family, any other row past
// it under name UsageOther.
const UsageOther = "other"

// UsageCount is one usage row, or what a flush adds to it.
type UsageCount struct {
	GoID   int64 // 0: calls naming no merchant
	Kind   UsageKind
	Name   string
	Detail string
	Calls  int64
	First  time.Time // first seen
	Last   time.Time // last seen
}

// UsageMerchant is a merchant's totals: every call and flow counted
// (UsageCall rows), first and last seen.
type UsageMerchant struct {
	GoID        int64
	Calls       int64
	First, Last time.Time
}

// UsageLimits bounds, per kind, the distinct rows a merchant may have; a
// kind without a limit is unbounded (its names come from the bridge's own
// tables). Past the limit, counts go to the kind's overflow row, which is
// always allowed: a merchant has at most limit rows of a kind plus one
// overflow row (per client family for UsageClient).
type UsageLimits map[UsageKind]int

// maxUsageText bounds a stored name or detail (bytes); callers bound
// client-supplied text tighter.
const maxUsageText = 100

// The upserts compare time columns with < and >: SQLite's fixed-width text
// orders like the times it holds, PostgreSQL's timestamptz is a time.
const usageUpsert = `INSERT INTO usage_counts (goid, kind, name, detail, calls, first_seen, last_seen)
	VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (goid, kind, name, detail) DO UPDATE SET
		calls = usage_counts.calls + excluded.calls,
		first_seen = CASE WHEN excluded.first_seen < usage_counts.first_seen THEN excluded.first_seen ELSE usage_counts.first_seen END,
		last_seen = CASE WHEN excluded.last_seen > usage_counts.last_seen THEN excluded.last_seen ELSE usage_counts.last_seen END`

const usageMerchantUpsert = `INSERT INTO usage_merchants (goid, calls, first_seen, last_seen)
	VALUES (?, ?, ?, ?)
	ON CONFLICT (goid) DO UPDATE SET
		calls = usage_merchants.calls + excluded.calls,
		first_seen = CASE WHEN excluded.first_seen < usage_merchants.first_seen THEN excluded.first_seen ELSE usage_merchants.first_seen END,
		last_seen = CASE WHEN excluded.last_seen > usage_merchants.last_seen THEN excluded.last_seen ELSE usage_merchants.last_seen END`

// AddUsage adds counts to the usage tables in one transaction: calls are
// summed, first and last seen widened; each merchant's totals grow by its
// UsageCall counts (but CallUnverified and CallDenied ones). Rows past limits go to the
// overflow rows. On PostgreSQL each merchant's advisory lock is taken
// first, before any of its rows is written, and held until the commit, so
// replicas flushing the same merchant at once take turns and the limits
// hold across them.
func (s *sqlStore) AddUsage(ctx context.Context, counts []UsageCount, limits UsageLimits) error {
	if len(counts) == 0 {
		return nil
	}
	byGoID := map[int64][]UsageCount{}
	for _, c := range counts {
		if c.Calls <= 0 || c.Kind == "" || c.Name == "" {
			continue
		}
		if c.First.IsZero() || c.Last.IsZero() {
			return fmt.Errorf("store: add usage of goid %d: %s %q without first and last seen", c.GoID, c.Kind, c.Name)
		}
		c.Name, c.Detail = Clip(c.Name, maxUsageText), Clip(c.Detail, maxUsageText)
		byGoID[c.GoID] = append(byGoID[c.GoID], c)
	}
	goids := make([]int64, 0, len(byGoID))
	for g := range byGoID {
		goids = append(goids, g)
	}
	slices.Sort(goids) // one lock order for every replica
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, g := range goids {
			if err := s.addMerchantUsage(ctx, tx, g, byGoID[g], limits); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: add usage: %w", err)
	}
	return nil
}

func (s *sqlStore) addMerchantUsage(ctx context.Context, tx *sql.Tx, goid int64, counts []UsageCount, limits UsageLimits) error {
	if s.d.name == "postgres" {
		// The merchant's turn first, always: replicas flushing the same
		// merchant at once take turns, so the limits below hold across
		// them, whatever rows (totals or not) this flush writes.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, pgUsageLockClass, strconv.FormatInt(goid, 10)); err != nil {
			return err
		}
	}
	counts, err := s.addDays(ctx, tx, goid, counts)
	if err != nil {
		return err
	}
	var total UsageMerchant
	for _, c := range counts {
		if c.Kind != UsageCall || !MerchantsCall(c.Detail) {
			continue
		}
		total.Calls += c.Calls
		if total.First.IsZero() || c.First.Before(total.First) {
			total.First = c.First
		}
		if c.Last.After(total.Last) {
			total.Last = c.Last
		}
	}
	if total.Calls > 0 {
		if _, err := tx.ExecContext(ctx, s.d.rebind(usageMerchantUpsert), goid, total.Calls,
			s.d.timeArg(total.First), s.d.timeArg(total.Last)); err != nil {
			return err
		}
	}
	have, err := s.boundedRows(ctx, tx, goid, limits)
	if err != nil {
		return err
	}
	upsert := s.d.rebind(usageUpsert)
	for _, c := range counts {
		if limit, bounded := limits[c.Kind]; bounded {
			k := usageKey{c.Kind, c.Name, c.Detail}
			if !have[k] {
				if countKind(have, c.Kind) >= limit && !isOverflow(k) {
					k = overflowKey(k)
					c.Name, c.Detail = k.name, k.detail
				}
				have[k] = true
			}
		}
		if _, err := tx.ExecContext(ctx, upsert, goid, string(c.Kind), c.Name, c.Detail, c.Calls,
			s.d.timeArg(c.First), s.d.timeArg(c.Last)); err != nil {
			return err
		}
	}
	return nil
}

const usageDayUpsert = `INSERT INTO usage_days (goid, day, calls, refused) VALUES (?, ?, ?, ?)
	ON CONFLICT (goid, day) DO UPDATE SET calls = usage_days.calls + excluded.calls, refused = usage_days.refused + excluded.refused`

// addDays adds the UsageDay counts of goid to usage_days, deletes its days
// older than DaysKept before the latest, and returns the other counts.
func (s *sqlStore) addDays(ctx context.Context, tx *sql.Tx, goid int64, counts []UsageCount) ([]UsageCount, error) {
	rest := counts[:0:0]
	var latest time.Time
	for _, c := range counts {
		if c.Kind != UsageDay {
			rest = append(rest, c)
			continue
		}
		day, err := time.Parse(time.DateOnly, c.Name)
		if err != nil || c.Detail != DayCalls && c.Detail != DayRefused {
			continue // not a day the recorder writes
		}
		if day.After(latest) {
			latest = day
		}
		var calls, refused int64
		if c.Detail == DayCalls {
			calls = c.Calls
		} else {
			refused = c.Calls
		}
		if _, err := tx.ExecContext(ctx, s.d.rebind(usageDayUpsert), goid, c.Name, calls, refused); err != nil {
			return nil, err
		}
	}
	if !latest.IsZero() {
		cutoff := latest.AddDate(0, 0, -DaysKept).Format(time.DateOnly)
		if _, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM usage_days WHERE goid = ? AND day < ?`), goid, cutoff); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// UsageDays returns the recorded days of the given merchants (every
// merchant's when none is given), by goid and day.
func (s *sqlStore) UsageDays(ctx context.Context, goids ...int64) ([]UsageDayCount, error) {
	q := `SELECT goid, day, calls, refused FROM usage_days`
	args := make([]any, len(goids))
	if len(goids) > 0 {
		q += ` WHERE goid IN (?` + strings.Repeat(",?", len(goids)-1) + `)`
		for i, g := range goids {
			args[i] = g
		}
	}
	rows, err := s.r.QueryContext(ctx, s.d.rebind(q+` ORDER BY goid, day`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: read usage days: %w", err)
	}
	defer rows.Close()
	var out []UsageDayCount
	for rows.Next() {
		var d UsageDayCount
		if err := rows.Scan(&d.GoID, &d.Day, &d.Calls, &d.Refused); err != nil {
			return nil, fmt.Errorf("store: read usage days: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read usage days: %w", err)
	}
	return out, nil
}

// pgUsageLockClass is the first half of the advisory lock key a flush
// takes when it has no totals row to lock (see AddUsage).
const pgUsageLockClass = 0x50a9b1d7

type usageKey struct {
	kind         UsageKind
	name, detail string
}

func overflowKey(k usageKey) usageKey {
	if k.kind == UsageClient {
		return usageKey{k.kind, k.name, UsageOther}
	}
	return usageKey{k.kind, UsageOther, ""}
}

// isOverflow: overflow rows do not count against the limit.
func isOverflow(k usageKey) bool { return overflowKey(k) == k }

func countKind(have map[usageKey]bool, kind UsageKind) int {
	n := 0
	for k := range have {
		if k.kind == kind && !isOverflow(k) {
			n++
		}
	}
	return n
}

// boundedRows are the keys a merchant already has of the limited kinds.
func (s *sqlStore) boundedRows(ctx context.Context, tx *sql.Tx, goid int64, limits UsageLimits) (map[usageKey]bool, error) {
	have := map[usageKey]bool{}
	if len(limits) == 0 {
		return have, nil
	}
	rows, err := tx.QueryContext(ctx, s.d.rebind(`SELECT kind, name, detail FROM usage_counts WHERE goid = ?`), goid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k usageKey
		var kind string
		if err := rows.Scan(&kind, &k.name, &k.detail); err != nil {
			return nil, err
		}
		k.kind = UsageKind(kind)
		if _, bounded := limits[k.kind]; bounded {
			have[k] = true
		}
	}
	return have, rows.Err()
}

// Usage returns the usage rows of the given merchants (every merchant's
// when none is given), ordered by goid, kind, name and detail.
func (s *sqlStore) Usage(ctx context.Context, goids ...int64) ([]UsageCount, error) {
	q := `SELECT goid, kind, name, detail, calls, first_seen, last_seen FROM usage_counts`
	args := make([]any, len(goids))
	if len(goids) > 0 {
		q += ` WHERE goid IN (?` + strings.Repeat(",?", len(goids)-1) + `)`
		for i, g := range goids {
			args[i] = g
		}
	}
	q += ` ORDER BY goid, kind, name, detail`
	rows, err := s.r.QueryContext(ctx, s.d.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("store: read usage: %w", err)
	}
	defer rows.Close()
	var out []UsageCount
	for rows.Next() {
		var c UsageCount
		var kind string
		if err := rows.Scan(&c.GoID, &kind, &c.Name, &c.Detail, &c.Calls, timeScan{&c.First}, timeScan{&c.Last}); err != nil {
			return nil, fmt.Errorf("store: read usage: %w", err)
		}
		c.Kind = UsageKind(kind)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read usage: %w", err)
	}
	return out, nil
}

// UsageMerchants returns every merchant's usage totals, by goid.
func (s *sqlStore) UsageMerchants(ctx context.Context) ([]UsageMerchant, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT goid, calls, first_seen, last_seen FROM usage_merchants ORDER BY goid`)
	if err != nil {
		return nil, fmt.Errorf("store: read usage totals: %w", err)
	}
	defer rows.Close()
	var out []UsageMerchant
	for rows.Next() {
		var m UsageMerchant
		if err := rows.Scan(&m.GoID, &m.Calls, timeScan{&m.First}, timeScan{&m.Last}); err != nil {
			return nil, fmt.Errorf("store: read usage totals: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read usage totals: %w", err)
	}
	return out, nil
}
