package logctx

import (
	"context"
	"testing"

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
