package main

import (
	"context"
	"sync/atomic"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/operations"
)

// snapshot is the configuration in force, whole: the settings, the core's
// merchant set (keys, credentials, the paymentMethodList cache) and the
// guard's rule set (networks, Basic credentials, rates). A reload builds
// and validates a new one completely, then swaps it in with one atomic
// store; nothing of it changes after.
type snapshot struct {
	cfg       Config
	merchants *operations.MerchantSet
	rules     *access.RuleSet
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
