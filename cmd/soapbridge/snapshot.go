package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/operations"
)

// snapshot is the configuration in force, whole: the settings, the core's
// merchant set (keys, credentials, the paymentMethodList cache), the
// guard's rule set (networks, Basic credentials, rates), the metrics'
// per-merchant series, and the goids of the merchants (the usage record
// keeps those, the report lists them). A reload builds and validates a new
// one completely, then swaps it in with one atomic store; nothing of it
// changes after, and a refused reload changes none of it.
type snapshot struct {
	cfg       Config
	merchants *operations.MerchantSet
	rules     *access.RuleSet
	series    *metrics.MerchantSeries
	goids     []int64 // of cfg.Merchants, sorted

	pins     atomic.Int64 // requests in flight that pinned it (snapshots.pin)
	replaced atomic.Bool  // a reload put another in force
}

// newSnapshot is the snapshot of cfg and what was built of it.
func newSnapshot(cfg Config, merchants *operations.MerchantSet, rules *access.RuleSet, series *metrics.MerchantSeries) *snapshot {
	goids := goidsOf(cfg.Merchants)
	slices.Sort(goids)
	return &snapshot{cfg: cfg, merchants: merchants, rules: rules, series: series, goids: goids}
}

// snapshots holds the one snapshot in force, and those a reload replaced
// while requests that pinned them are still in flight: those requests
// still count in their snapshot's per-merchant series, so the series of
// the merchants a reload removed are retired only once no request pinned
// them (the labels stay bounded by the merchants configured and those of
// requests in flight).
type snapshots struct {
	cur atomic.Pointer[snapshot]

	mu      sync.Mutex  // serialises replace and the retiring of series
	pending []*snapshot // replaced; their removed merchants' series not yet retired
	// retire drops the series of old's merchants none of keep has
	// (metrics.Retire); nil: nothing to retire.
	retire func(old *metrics.MerchantSeries, keep ...*metrics.MerchantSeries)
}

func (s *snapshots) load() *snapshot { return s.cur.Load() }

// swap puts next in force: the calls pinned from now on see it whole.
func (s *snapshots) swap(next *snapshot) { s.cur.Store(next) }

// replace builds the next snapshot and puts it in force (a reload), under
// the lock that retires series: no series build's labels are retired
// between its build and its swap. The snapshot replaced is retired once
// no request pins it.
func (s *snapshots) replace(build func() *snapshot) *snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := build()
	old := s.cur.Swap(next)
	if old != nil {
		old.replaced.Store(true)
		s.pending = append(s.pending, old)
	}
	s.sweepLocked()
	return next
}

// sweepLocked retires the series of the replaced snapshots no request
// pins any more, keeping those of the snapshot in force and of the ones
// still pinned. Caller holds s.mu.
func (s *snapshots) sweepLocked() {
	keep := []*metrics.MerchantSeries{s.load().series}
	var drained []*snapshot
	still := s.pending[:0]
	for _, p := range s.pending {
		if p.pins.Load() > 0 {
			still = append(still, p)
			keep = append(keep, p.series)
		} else {
			drained = append(drained, p)
		}
	}
	clear(s.pending[len(still):])
	s.pending = still
	if s.retire == nil {
		return
	}
	for _, d := range drained {
		s.retire(d.series, keep...)
	}
}

// merchantSet is the core's merchant set in force (operations.Service.Follow).
func (s *snapshots) merchantSet() *operations.MerchantSet {
	if sn := s.load(); sn != nil {
		return sn.merchants
	}
	return nil
}

// merchants are the configured merchants in force (the status page).
func (s *snapshots) merchants() []Merchant {
	if sn := s.load(); sn != nil {
		return sn.cfg.Merchants
	}
	return nil
}

// config is the configuration in force (the reloader's base).
func (s *snapshots) config() Config {
	if sn := s.load(); sn != nil {
		return sn.cfg
	}
	return Config{}
}

// list is the goids of the merchants in force, sorted (the report's
// configured merchants).
func (s *snapshots) list() []int64 {
	if sn := s.load(); sn != nil {
		return sn.goids
	}
	return nil
}

// has tells whether goid is a merchant of the call behind ctx (the usage
// record's Known): of the merchant set it pinned, else of the snapshot in
// force.
func (s *snapshots) has(ctx context.Context, goid int64) bool {
	if set := operations.PinnedMerchants(ctx); set != nil {
		return set.Has(goid)
	}
	if sn := s.load(); sn != nil {
		_, ok := slices.BinarySearch(sn.goids, goid)
		return ok
	}
	return false
}

// pin loads the snapshot once per request and puts its merchant set and
// rule set into the request's context: each call is judged by exactly one
// configuration from its access rules to its reply, even while a reload
// swaps another in, and counted in its per-merchant series (seriesOf).
// callContext runs it with the request id and the caller's address, so
// that the request is copied once for all three, and unpins the snapshot
// it returns when the request ends.
func (s *snapshots) pin(ctx context.Context) (context.Context, *snapshot) {
	for {
		sn := s.load()
		if sn == nil {
			return ctx, nil
		}
		sn.pins.Add(1)
		// Still in force after the pin counted: a replace that swaps it
		// out later finds the pin and keeps its series.
		if s.load() == sn {
			ctx = operations.WithMerchants(ctx, sn.merchants)
			return access.WithRules(ctx, sn.rules), sn
		}
		s.unpin(sn)
	}
}

// unpin ends a request's pin of sn (nil: none); the last request of a
// replaced snapshot retires its removed merchants' series.
func (s *snapshots) unpin(sn *snapshot) {
	if sn == nil || sn.pins.Add(-1) > 0 || !sn.replaced.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
}

// seriesOf are the metrics' per-merchant series of the request behind ctx
// (metrics.Follow): those of the snapshot it pinned, which is in force or
// replaced and still pinned; those in force when it pinned none.
func (s *snapshots) seriesOf(ctx context.Context) *metrics.MerchantSeries {
	sn := s.load()
	if sn == nil {
		return nil
	}
	set := operations.PinnedMerchants(ctx)
	if set == nil || set == sn.merchants {
		return sn.series
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pending {
		if p.merchants == set {
			return p.series
		}
	}
	return sn.series
}
