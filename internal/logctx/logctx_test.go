package logctx

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestWithRequestIDTagsEveryLine(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	base := zap.New(core)
	ctx := WithRequestID(context.Background(), base, "req-1")

	From(ctx, nil).Info("one", zap.Int("n", 1))
	From(ctx, nil).Debug("dropped")
	From(ctx, nil).Warn("two")
	require.Same(t, From(ctx, nil), From(ctx, nil), "the child logger is made once per request")

	got := logs.All()
	require.Len(t, got, 2)
	for _, e := range got {
		require.Equal(t, "req-1", e.ContextMap()["request_id"], e.Message)
	}
	require.Equal(t, int64(1), got[0].ContextMap()["n"])
	require.Same(t, base, From(context.Background(), base), "no logger in the context: the fallback")
}

// A request whose lines are all dropped costs no child logger: only the
// context value and its small holder.
func TestWithRequestIDAllocatesLittle(t *testing.T) {
	base := zap.New(zapcore.NewNopCore())
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		_ = WithRequestID(ctx, base, "req-1")
	})
	require.LessOrEqual(t, allocs, 2.0)
}

// The caller's address recorded by the server is on every line of the
// request logger, beside the request id.
func TestWithRequestIDCarriesClientIP(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	ctx := WithClientIP(context.Background(), "192.0.2.7")
	require.Equal(t, "192.0.2.7", ClientIP(ctx))
	ctx = WithRequestID(ctx, zap.New(core), "req-2")
	From(ctx, nil).Info("refund done")
	From(ctx, nil).Warn("in doubt")
	require.Len(t, logs.All(), 2)
	for _, e := range logs.All() {
		require.Equal(t, "192.0.2.7", e.ContextMap()["client_ip"], e.Message)
		require.Equal(t, "req-2", e.ContextMap()["request_id"], e.Message)
	}
	require.Empty(t, ClientIP(context.Background()))
}

// TestWithCall: one context value that is the request logger (with the
// client's address recorded before it), the start time, and passes every
// other key, cancellation and deadline on to its parent.
func TestWithCall(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	base := zap.New(core)
	type other struct{}
	parent, cancel := context.WithCancel(context.WithValue(WithClientIP(context.Background(), "192.0.2.7"), other{}, "kept"))
	start := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	ctx := WithCall(parent, base, "req-2", start)

	From(ctx, nil).Info("one")
	got, ok := Start(ctx)
	require.True(t, ok)
	require.Equal(t, start, got)
	_, ok = Start(parent)
	require.False(t, ok, "no WithCall: no start")
	require.Equal(t, "kept", ctx.Value(other{}))
	require.Equal(t, "192.0.2.7", ClientIP(ctx))
	require.Len(t, logs.All(), 1)
	require.Equal(t, "req-2", logs.All()[0].ContextMap()["request_id"])
	require.Equal(t, "192.0.2.7", logs.All()[0].ContextMap()["client_ip"])

	// Detached and bounded as a call is (operations.Service.CallContext).
	inner, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Hour)
	defer stop()
	got, _ = Start(inner)
	require.Equal(t, start, got)
	require.Same(t, From(ctx, nil), From(inner, nil))
	cancel()
	require.Error(t, ctx.Err(), "the parent's cancellation")
	require.NoError(t, inner.Err(), "detached")
}
