package operations

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/restbackend"
)

// Config configures a Service.
type Config struct {
	Merchants []Merchant
	// DefaultGoID is the merchant paymentMethodList (which has no input)
	// answers for; 0 means the first merchant.
	DefaultGoID int64
	Gateway     Gateway
	Store       Store
	// CallDeadline bounds every legacy call as a whole (CallDeadlineFor the
	// REST timeout when zero); it must exceed the gateway client's REST timeout, or no
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
	// Usage, when set, is the usage record: the pipeline adds every call
	// of a configured merchant to it, with what the call used of the
	// legacy interface (Merchant.LegacyUses).
	Usage *usage.Recorder
	// OnUnmappedChannel, when set, is told of every paymentChannels or
	// defaultPaymentChannel code without a REST equivalent today, with the
	// goid, the code as a bounded label (ChannelCodeLabel: a table code or
	// "unknown") and what became of it (Channel* outcomes); it must not block.
	OnUnmappedChannel func(goid int64, code, outcome string)
	// OnRefusal, when set, is told of every refused call with its reason
	// code (metrics, the status page); it must not block.
	OnRefusal func(Refusal)
	// MoneyHold, when set, is asked before every money-moving call
	// (capture, voids, refunds, recurring charges; not createPayment): a
	// non-empty answer refuses the call with it as a Server fault, before
	// the ledger is touched (another release serving on the same database
	// that this one may not run beside: cmd/soapbridge replicas.go). It
	// must not block.
	MoneyHold func() string
	// OverlapsLater: New neither reads nor writes the previous keys'
	// overlaps (key_overlaps); until the caller puts in force a set built
	// by Merchants, a previous key or secret is accepted until
	// previous_until. A start builds that set as its last step that can
	// fail, so a start that fails writes nothing.
	OverlapsLater bool
}

// DefaultReturnStatusTimeout is Config.ReturnStatusTimeout's default: long
// enough for a healthy gateway's status read with a retry, short enough that
// a customer is not left looking at a blank page.
const DefaultReturnStatusTimeout = 5 * time.Second

// Problem is one invalid setting. Key is its path in the bridge's
// configuration (call_deadline, merchants[2].secure_key), so that a command
// can name the file key, variable or flag to change; Msg says what is
// wrong and never quotes a secret.
type Problem struct{ Key, Msg string }

func (p Problem) Error() string { return p.Key + ": " + p.Msg }

// Validate normalizes c.Merchants in place (Merchant.Normalize) and returns
// every problem of the core's settings, in key order. restTimeout is the
// gateway client's timeout (Gateway.Timeout() once wired): a money-moving
// POST starts only with that much of the call deadline left. Validate
// checks the values as given; New fills the defaults before it validates.
func (c *Config) Validate(restTimeout time.Duration) []Problem {
	var ps []Problem
	bad := func(key, format string, a ...any) { ps = append(ps, Problem{key, fmt.Sprintf(format, a...)}) }
	if len(c.Merchants) == 0 {
		bad("merchants", "no merchant configured")
	}
	seen := map[int64]bool{}
	for i := range c.Merchants {
		m := &c.Merchants[i]
		m.Normalize()
		key := fmt.Sprintf("merchants[%d].", i)
		for _, p := range m.Problems() {
			bad(key+p.Key, "%s", p.Msg)
		}
		if m.GoID > 0 && seen[m.GoID] {
			bad(key+"goid", "configured twice")
		}
		seen[m.GoID] = true
		// A repeat of a call still under way must find its entry: the
		// window has to outlast the call and the time a pending entry of a
		// dead process takes to count as stale. And a createRecurrentPayment
		// repeated after its window, whose reply is then lost, looks for its
		// child from childClockSkew before its new entry: the child of the
		// first call must be older than that.
		if least := StaleAfter(c.CallDeadline, restTimeout) + childClockSkew; m.ReplayWindow >= time.Minute && m.ReplayWindow <= least {
			bad(key+"replay_window", "replay window %v must be longer than the call deadline plus the REST timeout plus %v (%v): a repeat of a call still under way "+
				"would act again, and a recurrence whose reply was lost could be taken for the one before it", m.ReplayWindow, 2*ledgerTimeout+staleMargin+childClockSkew, least)
		}
	}
	if c.DefaultGoID != 0 && !seen[c.DefaultGoID] {
		bad("default_goid", "default goid %d is not a configured merchant", c.DefaultGoID)
	}
	switch {
	case c.CallDeadline <= 0:
		bad("call_deadline", "call deadline must be positive")
	case c.CallDeadline <= restTimeout:
		bad("call_deadline", "call deadline %v must be longer than the REST timeout %v: a money-moving POST starts only with the REST timeout left, so no capture or refund could ever be made",
			c.CallDeadline, restTimeout)
	}
	if err := restbackend.CheckURL(c.PublicURL, false); err != nil {
		bad("public_url", "public URL: %v", err)
	}
	return ps
}
