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
