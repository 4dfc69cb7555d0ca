package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/legacybridge/soapbridge/store"
)

// Store wraps st so that its operations are timed.
func (m *Metrics) Store(st store.Store) store.Store {
	t := &timedStore{Store: st}
	for i, op := range storeOps {
		t.h[i] = m.storeLat.WithLabelValues(op)
	}
	return t
}

// timedStore times the store operations of the request and outbox paths;
// the rest pass through untimed.
type timedStore struct {
	store.Store
	h [9]prometheus.Observer
}

const (
	opSaveSession = iota
	opSession
	opEnqueue
	opClaim
	opDelivered
	opRetry
	opDead
	opClaimCall
	opCallDone
)

var storeOps = [...]string{"save_session", "session", "enqueue", "claim", "delivered", "retry", "dead", "claim_call", "call_done"}

func (t *timedStore) since(op int, start time.Time) { t.h[op].Observe(time.Since(start).Seconds()) }

func (t *timedStore) SaveSession(ctx context.Context, s store.Session) error {
	defer t.since(opSaveSession, time.Now())
	return t.Store.SaveSession(ctx, s)
}

func (t *timedStore) Session(ctx context.Context, id int64) (store.Session, error) {
	defer t.since(opSession, time.Now())
	return t.Store.Session(ctx, id)
}

func (t *timedStore) Enqueue(ctx context.Context, n store.Notification) (bool, error) {
	defer t.since(opEnqueue, time.Now())
	return t.Store.Enqueue(ctx, n)
}

func (t *timedStore) Claim(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]store.Notification, error) {
	defer t.since(opClaim, time.Now())
	return t.Store.Claim(ctx, now, limit, lease)
}

func (t *timedStore) Delivered(ctx context.Context, id int64) error {
	defer t.since(opDelivered, time.Now())
	return t.Store.Delivered(ctx, id)
}

func (t *timedStore) Retry(ctx context.Context, id int64, next time.Time, lastErr string) error {
	defer t.since(opRetry, time.Now())
	return t.Store.Retry(ctx, id, next, lastErr)
}

func (t *timedStore) Dead(ctx context.Context, id int64, lastErr string) error {
	defer t.since(opDead, time.Now())
	return t.Store.Dead(ctx, id, lastErr)
}

func (t *timedStore) ClaimCall(ctx context.Context, key store.CallKey, now time.Time, window time.Duration) (store.Call, bool, error) {
	defer t.since(opClaimCall, time.Now())
	return t.Store.ClaimCall(ctx, key, now, window)
}

func (t *timedStore) CallDone(ctx context.Context, key store.CallKey, claim string, rec store.CallRecord, now time.Time) error {
	defer t.since(opCallDone, time.Now())
	return t.Store.CallDone(ctx, key, claim, rec, now)
}
