// Package logctx carries a request's logger in its context, so that the
// log lines of one call (SOAP or browser flow) share its request id from
// the adapter that received it down to the core that serves it.
package logctx

import (
	"context"

	"go.uber.org/zap"
)

type key struct{}

// With makes l the logger of the work done under the returned context.
func With(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, key{}, l)
}

// From returns the logger set by With, or fallback.
func From(ctx context.Context, fallback *zap.Logger) *zap.Logger {
	if l, ok := ctx.Value(key{}).(*zap.Logger); ok {
		return l
	}
	return fallback
}
