// Package operations is the legacy EPaymentServiceV2 protocol as typed Go:
// the legacy operations as rows of one table (table.go) over the legacy
// types (types.go), run by one pipeline (pipeline.go) that the browser
// flows go through too, each call ending in one outcome (outcome.go); the
// browser flows' decisions (where a customer is sent, what
// a notification tells the e-shop) and the notification outbox. It checks
// signatures, performs the work through the REST gateway and builds the
// legacy replies, signed the way legacy clients verify them. It knows
// neither SOAP nor XML (adapter operations/soapapi), nor how requests
// arrive over HTTP (adapter operations/web), nor the HTTP details of the
// gateway (package restbackend).
package operations

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/logctx"
	"github.com/legacybridge/soapbridge/operations/usage"
)

// Service serves the legacy operations.
type Service struct {
	// merchants is the set in force when a call carries none
	// (WithMerchants) and no source is followed (Follow).
	merchants atomic.Pointer[MerchantSet]
	source    func() *MerchantSet
	gw        Gateway
	store     Store
	ledger    Ledger
	log       *zap.Logger
	publicURL string
	out       *outbox
	observer  Observer
	usage     *usage.Recorder
	shop      shopKeys

	now                 func() time.Time
	callDeadline        time.Duration
	returnStatusTimeout time.Duration
	onBadSignature      func(op string, goid int64)
	onUnmappedChannel   func(goid int64, code, outcome string)
	diag                whyState // why a call was refused (diagnose.go)
	moneyHold           func() string
}

// New validates cfg (Config.Validate, after filling its defaults) and
// returns a Service. Error messages name the faulty setting but never
// contain secrets.
func New(cfg Config) (*Service, error) {
	if cfg.Gateway == nil {
		return nil, errors.New("operations: no gateway client")
	}
	if cfg.Store == nil {
		return nil, errors.New("operations: no store")
	}
	rest := cfg.Gateway.Timeout()
	if cfg.CallDeadline == 0 {
		cfg.CallDeadline = CallDeadlineFor(rest)
	}
	if cfg.ReturnStatusTimeout <= 0 {
		cfg.ReturnStatusTimeout = DefaultReturnStatusTimeout
	}
	cfg.Merchants = slices.Clone(cfg.Merchants) // Validate normalizes them
	if ps := cfg.Validate(rest); len(ps) > 0 {
		errs := make([]error, len(ps))
		for i, p := range ps {
			errs[i] = fmt.Errorf("operations: %w", p)
		}
		return nil, errors.Join(errs...)
	}
	s := &Service{
		gw:                  cfg.Gateway,
		store:               cfg.Store,
		ledger:              cfg.Store,
		log:                 cfg.Logger,
		publicURL:           strings.TrimSuffix(cfg.PublicURL, "/"),
		observer:            cfg.Observer,
		usage:               cfg.Usage,
		now:                 cfg.Now,
		callDeadline:        cfg.CallDeadline,
		returnStatusTimeout: cfg.ReturnStatusTimeout,
		onBadSignature:      cfg.OnBadSignature,
		onUnmappedChannel:   cfg.OnUnmappedChannel,
		moneyHold:           cfg.MoneyHold,
	}
	s.diag.onRefusal = cfg.OnRefusal
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if !cfg.OverlapsLater {
		if err := s.resolveOverlaps(context.Background(), cfg.Merchants, nil); err != nil {
			return nil, fmt.Errorf("operations: %w", err)
		}
	}
	s.merchants.Store(newMerchantSet(cfg.Merchants, cfg.DefaultGoID))
	if cfg.Outbox.Store == nil {
		cfg.Outbox.Store = s.store
	}
	if cfg.Outbox.Logger == nil {
		cfg.Outbox.Logger = s.log
	}
	s.out = newOutbox(cfg.Outbox)
	s.out.sign = s.signNotification
	return s, nil
}

// MerchantSet is the merchants in force and what is cached of them (the
// paymentMethodList reply): built and validated whole (Service.Merchants),
// never changed after. A reload builds a new one; a call is served by one
// set from its start to its end (WithMerchants).
type MerchantSet struct {
	byGoID      map[int64]Merchant
	defaultGoID int64
	methods     methodCache // the default merchant's paymentMethodList
}

// newMerchantSet indexes validated merchants; defaultGoID 0 is the first.
func newMerchantSet(ms []Merchant, defaultGoID int64) *MerchantSet {
	set := &MerchantSet{byGoID: make(map[int64]Merchant, len(ms)), defaultGoID: defaultGoID}
	for _, m := range ms {
		set.byGoID[m.GoID] = m
	}
	if set.defaultGoID == 0 {
		set.defaultGoID = ms[0].GoID
	}
	return set
}

// Merchants builds the set of ms (defaultGoID 0: the first), validated
// whole against prev, the set in force (nil: the service's own), as a
// reload of the configuration does. Nothing is put in force: the caller
// swaps the set in (WithMerchants, Follow, Use) once everything else of
// the reload is built too. It refuses with the problems Config.Validate
// finds, and with a secure key or client secret changed without the one in
// force kept as its predecessor (previous_secure_key,
// previous_client_secret): shops still signing with it, or a gateway not
// yet taking the new secret, would fail calls in the middle of a rollout.
func (s *Service) Merchants(prev *MerchantSet, ms []Merchant, defaultGoID int64) (*MerchantSet, []Problem) {
	if prev == nil {
		prev = s.current()
	}
	cfg, ps := s.merchantProblems(prev, ms, defaultGoID)
	if len(ps) > 0 {
		return nil, ps
	}
	if err := s.resolveOverlaps(context.Background(), cfg.Merchants, prev); err != nil {
		var p *Problem
		if errors.As(err, &p) {
			return nil, []Problem{*p}
		}
		return nil, []Problem{{"merchants", err.Error()}}
	}
	return newMerchantSet(cfg.Merchants, defaultGoID), nil
}

// Use puts set in force for the calls that carry none (WithMerchants), when
// the service follows no source (Follow).
func (s *Service) Use(set *MerchantSet) { s.merchants.Store(set) }

// Follow makes src the set in force for the calls that carry none: the
// holder of the process's one snapshot. Called before serving.
func (s *Service) Follow(src func() *MerchantSet) { s.source = src }

// InForce is the set in force for calls that carry none.
func (s *Service) InForce() *MerchantSet { return s.current() }

func (s *Service) current() *MerchantSet {
	if s.source != nil {
		if set := s.source(); set != nil {
			return set
		}
	}
	return s.merchants.Load()
}

type merchantsKey struct{}

// WithMerchants returns ctx carrying set: a call served with it is judged
// by set alone, whatever a reload puts in force meanwhile.
func WithMerchants(ctx context.Context, set *MerchantSet) context.Context {
	if set == nil {
		return ctx
	}
	return context.WithValue(ctx, merchantsKey{}, set)
}

// PinnedMerchants is the merchant set ctx carries (WithMerchants); nil
// when it carries none.
func PinnedMerchants(ctx context.Context) *MerchantSet {
	set, _ := ctx.Value(merchantsKey{}).(*MerchantSet)
	return set
}

// Has tells whether goid is a merchant of the set.
func (set *MerchantSet) Has(goid int64) bool {
	_, ok := set.byGoID[goid]
	return ok
}

// set is the merchant set of the call behind ctx.
func (s *Service) set(ctx context.Context) *MerchantSet {
	if ctx != nil {
		if set, ok := ctx.Value(merchantsKey{}).(*MerchantSet); ok {
			return set
		}
	}
	return s.current()
}

// merchantProblems validates ms against prev (see Merchants) and returns
// them normalized.
func (s *Service) merchantProblems(old *MerchantSet, ms []Merchant, defaultGoID int64) (Config, []Problem) {
	cfg := Config{Merchants: slices.Clone(ms), DefaultGoID: defaultGoID, CallDeadline: s.callDeadline, PublicURL: s.publicURL}
	ps := cfg.Validate(s.gw.Timeout())
	for i, m := range cfg.Merchants {
		prev, ok := old.byGoID[m.GoID]
		if !ok {
			continue
		}
		key := fmt.Sprintf("merchants[%d].", i)
		if m.SecureKey != prev.SecureKey && m.PreviousSecureKey != prev.SecureKey {
			ps = append(ps, Problem{key + "previous_secure_key", "the secure key changed but previous_secure_key is not the key in force: " +
				"shops still signing with it would be refused; keep it as previous_secure_key (until previous_until), or restart to cut it off"})
		}
		if m.ClientSecret != prev.ClientSecret && m.PreviousClientSecret != prev.ClientSecret {
			ps = append(ps, Problem{key + "previous_client_secret", "the client secret changed but previous_client_secret is not the secret in force: " +
				"calls would fail while the gateway still takes only the old one; keep it as previous_client_secret, or restart to cut it off"})
		}
		if (m.SecureKey != prev.SecureKey || m.ClientSecret != prev.ClientSecret) && !m.previousUntil.IsZero() && !s.now().Before(m.previousUntil) {
			ps = append(ps, Problem{key + "previous_until", fmt.Sprintf("previous_until %s has passed: the key or secret in force would be cut off "+
				"at once by this reload; give a time still to come (and drop a previous_secure_key or previous_client_secret left from an earlier "+
				"rotation, which it would accept again), or restart to cut it off", m.PreviousUntil)})
		}
	}
	return cfg, ps
}

// merchant is the configured merchant of goid in the call's set.
func (s *Service) merchant(ctx context.Context, goid int64) (Merchant, bool) {
	m, ok := s.set(ctx).byGoID[goid]
	return m, ok
}

// logFor is the logger of the request behind ctx (with its request id), or
// the service's own.
func (s *Service) logFor(ctx context.Context) *zap.Logger { return logctx.From(ctx, s.log) }
