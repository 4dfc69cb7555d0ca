// Package operations is the legacy EPaymentServiceV2 protocol as typed Go:
// one method per legacy operation taking and returning the legacy types
// (types.go), the browser flows' decisions (where a customer is sent, what
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
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/logctx"
)

// Config configures a Service.
type Config struct {
	Merchants []Merchant
	// DefaultGoID is the merchant paymentMethodList (which has no input)
	// answers for; 0 means the first merchant.
	DefaultGoID int64
	Gateway     Gateway
	Store       Store
	// CallDeadline bounds every legacy call as a whole (DefaultCallDeadline
	// when zero); it must exceed the gateway client's REST timeout, or no
	// money-moving POST could start.
	CallDeadline time.Duration
	Logger       *zap.Logger
	// PublicURL is the bridge's absolute public base URL; the gateway's
	// return and notification callbacks point under it.
	PublicURL string
	// ReturnStatusTimeout bounds the status read when a customer returns
	// from the gateway (default 5s); past it the customer sees a page that
	// the payment may have gone through, with a reload link.
	ReturnStatusTimeout time.Duration
	// Outbox configures notification delivery; its Store and Logger default
	// to the service's.
	Outbox OutboxConfig
	// Now is the clock of sessions and of the method list cache (default
	// time.Now).
	Now func() time.Time
	// OnBadSignature, when set, is told of every SOAP call refused because
	// its encryptedSignature does not verify (metrics); it must not block.
	OnBadSignature func(op string, goid int64)
	// Observer, when set, is told of every call the pipeline finishes.
	Observer Observer
	// OnUnmappedChannel, when set, is told of every paymentChannels or
	// defaultPaymentChannel code without a REST equivalent today, with the
	// goid, the code as a bounded label (ChannelCodeLabel: a table code or
	// "unknown") and what became of it (Channel* outcomes); it must not block.
	OnUnmappedChannel func(goid int64, code, outcome string)
}

// DefaultReturnStatusTimeout is Config.ReturnStatusTimeout's default: long
// enough for a healthy gateway's status read with a retry, short enough that
// a customer is not left looking at a blank page.
const DefaultReturnStatusTimeout = 5 * time.Second

// Service serves the legacy operations.
type Service struct {
	merchants atomic.Pointer[merchantSet]
	gw        Gateway
	store     Store
	ledger    Ledger
	log       *zap.Logger
	publicURL string
	out       *outbox
	observer  Observer

	methods             methodCache
	now                 func() time.Time
	callDeadline        time.Duration
	returnStatusTimeout time.Duration
	onBadSignature      func(op string, goid int64)
	onUnmappedChannel   func(goid int64, code, outcome string)
}

// New validates cfg and returns a Service. Error messages name the faulty
// setting but never contain secrets.
func New(cfg Config) (*Service, error) {
	if len(cfg.Merchants) == 0 {
		return nil, errors.New("operations: no merchant configured")
	}
	s := &Service{
		gw:           cfg.Gateway,
		store:        cfg.Store,
		ledger:       cfg.Store,
		log:          cfg.Logger,
		now:          cfg.Now,
		callDeadline: cfg.CallDeadline,
		observer:     cfg.Observer,

		onBadSignature:    cfg.OnBadSignature,
		onUnmappedChannel: cfg.OnUnmappedChannel,
	}
	if s.gw == nil {
		return nil, errors.New("operations: no gateway client")
	}
	switch rest := s.gw.Timeout(); {
	case s.callDeadline > rest:
	case s.callDeadline > 0:
		return nil, fmt.Errorf("operations: call deadline %v must be longer than the REST timeout %v: no money-moving POST could start", s.callDeadline, rest)
	case DefaultCallDeadline > rest:
		s.callDeadline = DefaultCallDeadline
	default:
		// A long REST timeout: room for the reads before a POST and the
		// reconciliation after it.
		s.callDeadline = rest + DefaultCallDeadline/2
	}
	set := &merchantSet{byGoID: make(map[int64]Merchant, len(cfg.Merchants))}
	for i, m := range cfg.Merchants {
		m.Normalize()
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("operations: merchant #%d: %w", i+1, err)
		}
		// A repeat of a call still under way must find its entry: the
		// window has to outlast the call and the time a pending entry of a
		// dead process takes to count as stale.
		if least := MinReplayWindow(s.callDeadline); m.ReplayWindow <= least {
			return nil, fmt.Errorf("operations: merchant #%d: replay window %v must be longer than the call deadline plus %v (%v)", i+1, m.ReplayWindow, pendingStale, least)
		}
		if _, dup := set.byGoID[m.GoID]; dup {
			return nil, fmt.Errorf("operations: merchant #%d: goid %d configured twice", i+1, m.GoID)
		}
		set.byGoID[m.GoID] = m
	}
	set.defaultGoID = cfg.DefaultGoID
	if set.defaultGoID == 0 {
		set.defaultGoID = cfg.Merchants[0].GoID
	} else if _, ok := set.byGoID[set.defaultGoID]; !ok {
		return nil, fmt.Errorf("operations: default goid %d is not a configured merchant", set.defaultGoID)
	}
	s.merchants.Store(set)
	if s.store == nil {
		return nil, errors.New("operations: no store")
	}
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("operations: public URL %q must be an absolute http(s) URL without query", cfg.PublicURL)
	}
	s.publicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.returnStatusTimeout = cfg.ReturnStatusTimeout
	if s.returnStatusTimeout <= 0 {
		s.returnStatusTimeout = DefaultReturnStatusTimeout
	}
	if cfg.Outbox.Store == nil {
		cfg.Outbox.Store = s.store
	}
	if cfg.Outbox.Logger == nil {
		cfg.Outbox.Logger = s.log
	}
	s.out = newOutbox(cfg.Outbox)
	return s, nil
}

// merchantSet is the merchants in force; a reload replaces it whole, so a
// call sees one consistent set.
type merchantSet struct {
	byGoID      map[int64]Merchant
	defaultGoID int64
}

// merchant is the configured merchant of goid.
func (s *Service) merchant(goid int64) (Merchant, bool) {
	m, ok := s.merchants.Load().byGoID[goid]
	return m, ok
}

// defaultMerchant is the merchant paymentMethodList answers for.
func (s *Service) defaultMerchant() Merchant {
	set := s.merchants.Load()
	return set.byGoID[set.defaultGoID]
}

// logFor is the logger of the request behind ctx (with its request id), or
// the service's own.
func (s *Service) logFor(ctx context.Context) *zap.Logger { return logctx.From(ctx, s.log) }
