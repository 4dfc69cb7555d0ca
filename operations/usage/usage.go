// Package usage is the per-merchant record of what each shop still uses of
// the legacy interface: operations and browser flows with their outcomes,
// the client libraries seen on the wire, legacy features and retired
// things. The core's pipeline and the adapters hand it one Event per call;
// a Recorder adds events up in memory and flushes the sums into the store
// periodically, so the hot path never writes to the database and every
// replica's counts add up there. Only aggregated counts are kept: no
// customer data, no amounts, no order numbers.
//
// It imports neither soapenc nor echo: the core can record without knowing
// how a call arrived. The adapters tell the client (Client, WithClient)
// and the features only they see (charsets) through the call's context.
//
// Who records what: one place, the core's pipeline (package operations,
// the end of every call: the SOAP operations, the browser flows, the
// statement download, the callbacks, and the calls an adapter refused
// before the core), once per call, from the finished call's outcome:
//
//	rec.Record(ctx, usage.Event{GoID: goid, Operation: op, Result: result,
//		Client: client, Features: features, Retired: retired})
//
// with goid the one the request names (0 for touch and paymentMethodList).
// The client (WithClient), the features only the adapter sees
// (WithFeatures) and what the request used (Merchant.LegacyUses) are in
// the event only when the call was verified (its signature or token):
// a stranger's call counts as its result, nothing more.
package usage

import (
	"context"
	"time"

	"github.com/legacybridge/soapbridge/store"
)

// Result is how a call ended, as the usage record counts it.
type Result string

// Results. Every result but ResultOK counts as a failure.
const (
	ResultOK          Result = "ok"           // answered as asked
	ResultRefused     Result = "refused"      // a FAILED / CALL_FAILED reply: invalid input, bad signature, unknown goid, gateway refusal
	ResultClientFault Result = "client_fault" // a Client fault: unreadable request, unknown operation
	ResultServerFault Result = "server_fault" // a Server fault: gateway or store unavailable
	// ResultDenied: refused by the access rules (networks, HTTP Basic
	// credentials) or a rate limit. The rules run before the call is
	// verified, so, like ResultUnverified, it counts as refused in the
	// merchant's day and nowhere else: it moves neither the merchant's last
	// call nor its totals.
	ResultDenied Result = store.CallDenied
	// ResultUnverified: refused before the call was verified (its
	// signature or token does not verify, or what it must sign is
	// missing): a stranger may have sent it. It counts as refused in the
	// merchant's day and nowhere else: it moves neither the merchant's
	// last call (the gauge, the report's last seen) nor its totals.
	ResultUnverified Result = store.CallUnverified
)

// Results lists every Result, in report order.
var Results = []Result{ResultOK, ResultRefused, ResultClientFault, ResultServerFault, ResultDenied, ResultUnverified}

func (r Result) valid() bool {
	for _, x := range Results {
		if r == x {
			return true
		}
	}
	return false
}

// Browser flows and HTTP services of the legacy integration, recorded as
// operations beside the SOAP ones.
const (
	FlowPayFull      = "pay-full-v2"           // customer sent to the gateway after createPayment
	FlowPayBase      = "pay-base-v2"           // payment created by the shop's HTML form
	FlowStatement    = "get-account-statement" // statement download by the shop's server
	FlowReturn       = "return"                // customer returned to the shop's successURL/failedURL, signed
	FlowNotification = "notification"          // legacy notification GET delivered to the shop
)

// Flows lists the flow names, in report order.
var Flows = []string{FlowPayFull, FlowPayBase, FlowStatement, FlowReturn, FlowNotification}

// Event is one call (or one flow step) of a merchant.
type Event struct {
	// GoID is the merchant the call names; 0 when it names none (touch,
	// paymentMethodList, an unreadable request).
	GoID int64
	// Operation is the SOAP operation or a Flow* name.
	Operation string
	Result    Result
	// Client is who sent it (zero: unknown; FamilyNone: not counted).
	Client Client
	// Features are the legacy features the call used (Feature*
	// constants, ChannelFeature).
	Features []Feature
	// Retired are things the call used that have no REST equivalent
	// ("channel cz_vb", "operation createBuyer"; RetiredChannel,
	// RetiredOperation). Client-supplied parts are bounded by the Recorder.
	Retired []string
	// At is when the call was made; the Recorder's clock when zero.
	At time.Time
}

type ctxKey struct{}

// wire is what an adapter knows of a call before the core runs.
type wire struct {
	client   Client
	features []Feature
}

// WithClient returns ctx carrying the client that sent the call, for the
// core to put in the call's Event once the call is verified.
func WithClient(ctx context.Context, c Client) context.Context {
	n := &wireCtx{Context: ctx, w: wireFrom(ctx)}
	n.w.client = c
	return n
}

// WithFeatures returns ctx carrying features only the adapter sees (the
// charset of a SOAP body or a form); the core adds them to the call's
// Event once the call is verified.
func WithFeatures(ctx context.Context, fs ...Feature) context.Context {
	if len(fs) == 0 {
		return ctx
	}
	n := &wireCtx{Context: ctx, w: wireFrom(ctx)}
	n.w.features = append(n.w.features[:len(n.w.features):len(n.w.features)], fs...)
	return n
}

// wireCtx is a context carrying a wire: the value and its context node are
// one allocation, not two as with context.WithValue.
type wireCtx struct {
	context.Context
	w wire
}

func (c *wireCtx) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return &c.w
	}
	return c.Context.Value(key)
}

// wireFrom is a copy of what ctx carries (values in a context never change).
func wireFrom(ctx context.Context) wire {
	if w, _ := ctx.Value(ctxKey{}).(*wire); w != nil {
		return *w
	}
	return wire{}
}

// ClientFrom is the client WithClient put in ctx, or the unknown one.
func ClientFrom(ctx context.Context) Client {
	if w, _ := ctx.Value(ctxKey{}).(*wire); w != nil && w.client.Family != "" {
		return w.client
	}
	return Client{Family: FamilyUnknown}
}

// FeaturesFrom are the features WithFeatures put in ctx.
func FeaturesFrom(ctx context.Context) []Feature {
	if w, _ := ctx.Value(ctxKey{}).(*wire); w != nil {
		return w.features
	}
	return nil
}
