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
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/logctx"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// touchReply is what touch answers.
const touchReply = "OK"

// Service serves the legacy operations.
type Service struct {
	merchants   map[int64]Merchant
	defaultGoID int64
	gw          *restbackend.Client
	store       store.Store
	ledger      store.Ledger
	log         *zap.Logger
	publicURL   string
	out         *outbox

	methods             methodCache
	now                 func() time.Time
	callDeadline        time.Duration
	returnStatusTimeout time.Duration
	onBadSignature      func(op string, goid int64)
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
	switch {
	case cfg.CallDeadline != 0:
	case DefaultCallDeadline > rest:
		cfg.CallDeadline = DefaultCallDeadline
	default:
		// A long REST timeout: room for the reads before a POST and the
		// reconciliation after it.
		cfg.CallDeadline = rest + DefaultCallDeadline/2
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
		merchants:           make(map[int64]Merchant, len(cfg.Merchants)),
		defaultGoID:         cfg.DefaultGoID,
		gw:                  cfg.Gateway,
		store:               cfg.Store,
		ledger:              cfg.Ledger,
		log:                 cfg.Logger,
		publicURL:           strings.TrimSuffix(cfg.PublicURL, "/"),
		now:                 cfg.Now,
		callDeadline:        cfg.CallDeadline,
		returnStatusTimeout: cfg.ReturnStatusTimeout,
		onBadSignature:      cfg.OnBadSignature,
	}
	for _, m := range cfg.Merchants {
		s.merchants[m.GoID] = m
	}
	if s.defaultGoID == 0 {
		s.defaultGoID = cfg.Merchants[0].GoID
	}
	if s.ledger == nil {
		s.ledger = s.store
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.now == nil {
		s.now = time.Now
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

// logFor is the logger of the request behind ctx (with its request id), or
// the service's own.
func (s *Service) logFor(ctx context.Context) *zap.Logger { return logctx.From(ctx, s.log) }

// Touch answers a liveness string; it does not call the gateway.
func (s *Service) Touch(ctx context.Context) (string, error) { return touchReply, nil }
