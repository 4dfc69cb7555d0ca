package tracing

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/legacybridge/soapbridge/store"
)

// Store wraps st so that its writes and the session reads of the request
// path each get a span under the call's; the rest (outbox worker claims,
// counts, purges) pass through. With tracing disabled st is returned as is.
func (t *Tracer) Store(st store.Store) store.Store {
	if !t.Enabled() {
		return st
	}
	return &tracedStore{Store: st, t: t.t}
}

type tracedStore struct {
	store.Store
	t trace.Tracer
}

func (s *tracedStore) start(ctx context.Context, op string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	// Only under a call's span: the outbox worker's own store traffic
	// would otherwise make a root trace every poll.
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanFromContext(context.Background()) // a no-op span: never end the caller's
	}
	return s.t.Start(ctx, "store "+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(attrs, attribute.String("db.operation.name", op))...))
}

func (s *tracedStore) SaveSession(ctx context.Context, ss store.Session) (err error) {
	ctx, span := s.start(ctx, "save_session", attribute.Int64("soapbridge.payment_id", ss.PaymentID))
	defer func() { end(span, err) }()
	return s.Store.SaveSession(ctx, ss)
}

func (s *tracedStore) Session(ctx context.Context, id int64) (ss store.Session, err error) {
	ctx, span := s.start(ctx, "session", attribute.Int64("soapbridge.payment_id", id))
	ss, err = s.Store.Session(ctx, id)
	spanErr := err
	if errors.Is(err, store.ErrNotFound) {
		spanErr = nil // an answer, not a failure
	}
	end(span, spanErr)
	return ss, err
}

func (s *tracedStore) Enqueue(ctx context.Context, n store.Notification) (added bool, err error) {
	ctx, span := s.start(ctx, "enqueue", attribute.Int64("soapbridge.payment_id", n.PaymentID))
	defer func() { span.SetAttributes(attribute.Bool("soapbridge.added", added)); end(span, err) }()
	return s.Store.Enqueue(ctx, n)
}

func (s *tracedStore) ClaimCall(ctx context.Context, key store.CallKey, now time.Time, window time.Duration) (c store.Call, claimed bool, err error) {
	ctx, span := s.start(ctx, "claim_call", attribute.String("soapbridge.operation", key.Operation))
	defer func() { span.SetAttributes(attribute.Bool("soapbridge.claimed", claimed)); end(span, err) }()
	return s.Store.ClaimCall(ctx, key, now, window)
}

func (s *tracedStore) SetBaseline(ctx context.Context, key store.CallKey, claim string, b store.RefundBaseline, now time.Time) (err error) {
	ctx, span := s.start(ctx, "set_baseline", attribute.String("soapbridge.operation", key.Operation))
	defer func() { end(span, err) }()
	return s.Store.SetBaseline(ctx, key, claim, b, now)
}

func (s *tracedStore) CallDone(ctx context.Context, key store.CallKey, claim string, rec store.CallRecord, now time.Time) (err error) {
	ctx, span := s.start(ctx, "call_done", attribute.String("soapbridge.operation", key.Operation))
	defer func() { end(span, err) }()
	return s.Store.CallDone(ctx, key, claim, rec, now)
}

func (s *tracedStore) CallInDoubt(ctx context.Context, key store.CallKey, claim, note string, now time.Time) (err error) {
	ctx, span := s.start(ctx, "call_in_doubt", attribute.String("soapbridge.operation", key.Operation))
	defer func() { end(span, err) }()
	return s.Store.CallInDoubt(ctx, key, claim, note, now)
}

func (s *tracedStore) ReleaseCall(ctx context.Context, key store.CallKey, claim string) (err error) {
	ctx, span := s.start(ctx, "release_call", attribute.String("soapbridge.operation", key.Operation))
	defer func() { end(span, err) }()
	return s.Store.ReleaseCall(ctx, key, claim)
}

func (s *tracedStore) TryLock(ctx context.Context, name string, ttl time.Duration) (unlock func(), ok bool, err error) {
	ctx, span := s.start(ctx, "try_lock")
	defer func() { span.SetAttributes(attribute.Bool("soapbridge.locked", ok)); end(span, err) }()
	return s.Store.TryLock(ctx, name, ttl)
}

func (s *tracedStore) CallNotDone(ctx context.Context, key store.CallKey, claim string) (err error) {
	ctx, span := s.start(ctx, "call_not_done", attribute.String("soapbridge.operation", key.Operation))
	defer func() { end(span, err) }()
	return s.Store.CallNotDone(ctx, key, claim)
}
