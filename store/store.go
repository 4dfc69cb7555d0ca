// Package store keeps what the bridge must remember across restarts: the
// legacy session data of each payment it created (the REST status reply
// lacks productName and the e-shop's return URLs) and the outbox of
// notifications still to be delivered to e-shops. It has an SQLite
// implementation (default, pure Go) and a PostgreSQL one.
package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned when no session exists for a payment, or no
// notification for an id.
var ErrNotFound = errors.New("store: not found")

// ErrNotClaimed is returned when a ledger entry is finished by a caller
// whose claim is no longer the entry's (it was taken over after its replay
// window, purged, or is not in a state that allows the change).
var ErrNotClaimed = errors.New("store: ledger entry not held by this claim")

// Session is what the bridge records per payment it creates.
type Session struct {
	PaymentID   int64
	ParentID    int64 // 0 when none
	GoID        int64
	ProductName string
	OrderNumber string
	Amount      int64
	Currency    string
	SuccessURL  string
	FailedURL   string
	CreatedAt   time.Time
	// TokenHash is HashReturnToken of the random per-payment token the
	// bridge puts in the callback URLs it gives the gateway (the token
	// itself is never stored); "" for sessions saved before tokens existed.
	// Saving a session with "" keeps a hash already stored, so a later save
	// cannot switch the check off; saving anything but a hash is an error.
	TokenHash string
	// PaymentChannels is the paymentChannels list the e-shop sent, as sent
	// ("" when it sent none, and for sessions saved before it was kept):
	// status replies report the channel with the shop's own code.
	PaymentChannels string
	// KeyID names (never reveals) the secure key the shop created the
	// payment with, which signs its return redirects and notifications;
	// "" for sessions saved before it was kept. Saving a session with ""
	// keeps one already stored.
	KeyID string
}

// Notification is one legacy notification to deliver to an e-shop.
type Notification struct {
	ID        int64
	GoID      int64
	PaymentID int64
	// Key identifies the change announced (e.g. "<paymentID>:<state>:<subState>");
	// a second Enqueue with the same Key is dropped, so repeats collapse.
	Key         string
	URL         string // the full URL to GET, query included
	Attempts    int
	NextAttempt time.Time
	LastError   string
	CreatedAt   time.Time
	// RequestID is the request id of the call that enqueued it ("" for
	// rows from before it was kept), logged with every delivery attempt.
	RequestID string
	// Unsigned: URL lacks its signature, which the deliverer adds when it
	// sends (rows from before this was kept are signed).
	Unsigned bool
}

// Store is the persistence the bridge needs. Implementations are safe for
// concurrent use, and several processes may share one PostgreSQL store.
type Store interface {
	// SaveSession records s; saving the same PaymentID again replaces it.
	SaveSession(ctx context.Context, s Session) error
	// Session returns the session of paymentID or ErrNotFound.
	Session(ctx context.Context, paymentID int64) (Session, error)
	// Children returns the sessions of the recurring children of
	// parentID that the bridge knows, oldest payment first.
	Children(ctx context.Context, parentID int64) ([]Session, error)

	// Enqueue adds n to the outbox unless a notification with the same Key
	// exists; it reports whether n was added. It is durable when it returns.
	// A zero NextAttempt means due at once; a zero CreatedAt means now.
	Enqueue(ctx context.Context, n Notification) (added bool, err error)
	// Claim leases up to limit due notifications (NextAttempt <= now) to the
	// caller for lease; no other caller gets them until the lease ends.
	Claim(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]Notification, error)
	// Delivered marks a claimed notification done (counting the attempt).
	// Delivered, Retry and Dead change only a pending notification: on one
	// already delivered or dead (a worker whose lease ran out reporting
	// late) they do nothing; on an unknown id they return ErrNotFound.
	Delivered(ctx context.Context, id int64) error
	// Retry records a failed attempt and schedules the next one at next.
	Retry(ctx context.Context, id int64, next time.Time, lastErr string) error
	// Dead records a failed attempt after which no more are made.
	Dead(ctx context.Context, id int64, lastErr string) error
	// Counts reports the outbox by state.
	Counts(ctx context.Context) (OutboxCounts, error)

	// Ledger: the same database records money-moving calls, so every
	// replica sharing the store sees every claim. Code that only needs
	// the ledger should take a Ledger.
	Ledger

	// ShopKey returns which of merchant goid's keys its shop last signed a
	// call with (an id of the key, never the key) and when that was seen,
	// or ErrNotFound. SetShopKey records it. Earlier versions wrote it;
	// this one only reads it, for payments whose session names no key
	// (Session.KeyID): kept readable until no such payment is retained.
	ShopKey(ctx context.Context, goid int64) (keyID string, seenAt time.Time, err error)
	SetShopKey(ctx context.Context, goid int64, keyID string, seenAt time.Time) error

	// KeyOverlap returns how long a previous key (or client secret) of
	// goid is accepted, or ErrNotFound. RecordKeyOverlaps records every
	// want of a configuration in one transaction, all or none: each unless
	// recorded, first seen at now (the first sighting stays), then its end
	// moved to what it wants unless that end has passed at now (an end
	// once passed is final), the rows taken in (goid, kind, key id) order
	// so that replicas recording at once never deadlock. It returns the
	// records as they then stand, in the order of ws.
	KeyOverlap(ctx context.Context, goid int64, kind, keyID string) (KeyOverlap, error)
	RecordKeyOverlaps(ctx context.Context, ws []KeyOverlapWant, now time.Time) ([]KeyOverlap, error)

	// Purge deletes, in batches, what r says is old enough at now: finished
	// outbox rows, ledger entries, sessions (with their tokens). Pending
	// notifications are never purged.
	Purge(ctx context.Context, now time.Time, r Retention) (PurgeCounts, error)

	Close() error
}

// OutboxCounts is the size of the outbox by state.
type OutboxCounts struct {
	Pending   int
	Delivered int
	Dead      int
}
