package main

import (
	"context"
	"slices"
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
}

// newSnapshot is the snapshot of cfg and what was built of it.
func newSnapshot(cfg Config, merchants *operations.MerchantSet, rules *access.RuleSet, series *metrics.MerchantSeries) *snapshot {
	goids := goidsOf(cfg.Merchants)
	slices.Sort(goids)
	return &snapshot{cfg: cfg, merchants: merchants, rules: rules, series: series, goids: goids}
}

// snapshots holds the one snapshot in force.
type snapshots struct {
	cur atomic.Pointer[snapshot]
}

func (s *snapshots) load() *snapshot { return s.cur.Load() }

// swap puts next in force: the calls pinned from now on see it whole.
func (s *snapshots) swap(next *snapshot) { s.cur.Store(next) }

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

// series are the metrics' per-merchant series in force (metrics.Follow).
func (s *snapshots) series() *metrics.MerchantSeries {
	if sn := s.load(); sn != nil {
		return sn.series
	}
	return nil
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
// swaps another in. callContext runs it with the request id and the
// caller's address, so that the request is copied once for all three.
func (s *snapshots) pin(ctx context.Context) context.Context {
	sn := s.load()
	if sn == nil {
		return ctx
	}
	ctx = operations.WithMerchants(ctx, sn.merchants)
	return access.WithRules(ctx, sn.rules)
}
