package operations

import (
	"context"
	"io"
	"time"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// The core declares what it uses of the world, as database/sql's consumers
// do: *restbackend.Client is a Gateway and the store's implementations are
// a Store, unchanged; a unit test gives a fake of either.

// Gateway is what the core asks of the payment gateway's REST interface.
// Its errors are restbackend's typed ones (APIError, NotStartedError…),
// sorted by restbackend.OutcomeOf.
type Gateway interface {
	// Timeout bounds one REST call: a money-moving POST starts only with
	// this much of the call deadline left.
	Timeout() time.Duration
	PaymentStatus(ctx context.Context, cr restbackend.Credentials, id int64) (*restbackend.Payment, error)
	CreatePayment(ctx context.Context, cr restbackend.Credentials, req *restbackend.PaymentRequest) (*restbackend.Payment, error)
	CreateRecurrence(ctx context.Context, cr restbackend.Credentials, parentID int64, req *restbackend.RecurrenceRequest) (*restbackend.Payment, error)
	Capture(ctx context.Context, cr restbackend.Credentials, id int64, req *restbackend.CaptureRequest) (*restbackend.Result, error)
	VoidAuthorization(ctx context.Context, cr restbackend.Credentials, id int64) (*restbackend.Result, error)
	VoidRecurrence(ctx context.Context, cr restbackend.Credentials, id int64) (*restbackend.Result, error)
	Refund(ctx context.Context, cr restbackend.Credentials, id, amount int64) (*restbackend.Result, error)
	RefundHistory(ctx context.Context, cr restbackend.Credentials, id int64) ([]restbackend.Refund, error)
	PaymentInstruments(ctx context.Context, cr restbackend.Credentials, goid int64, currency string) (*restbackend.InstrumentList, error)
	AccountStatementStream(ctx context.Context, cr restbackend.Credentials, req *restbackend.StatementRequest) (io.ReadCloser, error)
}

// Sessions keeps the legacy data of the payments the bridge created (the
// REST status lacks productName and the e-shop's return URLs).
type Sessions interface {
	SaveSession(ctx context.Context, s store.Session) error
	// Session returns store.ErrNotFound for a payment without one.
	Session(ctx context.Context, paymentID int64) (store.Session, error)
	// Children are the sessions of a recurring parent's children.
	Children(ctx context.Context, parentID int64) ([]store.Session, error)
}

// Ledger records the money-moving calls, so that a repeat never makes the
// gateway act twice (store.Ledger documents the life of an entry), and
// holds the locks that serialise refunds of one payment across replicas.
type Ledger interface {
	ClaimCall(ctx context.Context, key store.CallKey, now time.Time, window time.Duration) (store.Call, bool, error)
	LookupCall(ctx context.Context, key store.CallKey) (store.Call, error)
	UnsettledRefunds(ctx context.Context, goid, paymentID int64, except store.CallKey) ([]store.Call, error)
	SetBaseline(ctx context.Context, key store.CallKey, claim string, b store.RefundBaseline, now time.Time) error
	CallDone(ctx context.Context, key store.CallKey, claim string, rec store.CallRecord, now time.Time) error
	CallInDoubt(ctx context.Context, key store.CallKey, claim, note string, now time.Time) error
	CallNotDone(ctx context.Context, key store.CallKey, claim string) error
	ReleaseCall(ctx context.Context, key store.CallKey, claim string) error
	TryLock(ctx context.Context, name string, ttl time.Duration) (unlock func(), ok bool, err error)
}

// Outbox is the durable queue of notifications to e-shops (leased rows,
// see outbox.go).
type Outbox interface {
	Enqueue(ctx context.Context, n store.Notification) (added bool, err error)
	Claim(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]store.Notification, error)
	Delivered(ctx context.Context, id int64) error
	Retry(ctx context.Context, id int64, next time.Time, lastErr string) error
	Dead(ctx context.Context, id int64, lastErr string) error
	Counts(ctx context.Context) (store.OutboxCounts, error)
}

// ShopKeys reads which of a merchant's keys earlier versions learnt its
// shop signs with (the fallback of payments without a key of their own),
// and keeps the end of each previous key's overlap (keys.go).
type ShopKeys interface {
	ShopKey(ctx context.Context, goid int64) (keyID string, seenAt time.Time, err error)
	KeyOverlap(ctx context.Context, goid int64, kind, keyID string) (store.KeyOverlap, error)
	RecordKeyOverlaps(ctx context.Context, ws []store.KeyOverlapWant, now time.Time) ([]store.KeyOverlap, error)
}

// Store is all the core keeps.
type Store interface {
	Sessions
	Ledger
	Outbox
	ShopKeys
}
