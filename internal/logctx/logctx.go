// Package logctx carries a request's logger in its context, so that the
// log lines of one call (SOAP or browser flow) share its request id and its
// caller's address from the adapter that received it down to the core that
// serves it.
package logctx

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

type key struct{}

type clientKey struct{}

// With makes l the logger of the work done under the returned context.
func With(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, key{}, l)
}

// WithClientIP records the caller's address (after the trusted proxies:
// the client a load balancer names, not the balancer) for the request
// logger WithRequestID makes under the returned context. The server sets
// it before the adapters run.
func WithClientIP(ctx context.Context, ip string) context.Context {
	return &clientCtx{Context: ctx, ip: ip} // one allocation, as reqid.With
}

type clientCtx struct {
	context.Context
	ip string
}

func (c *clientCtx) Value(k any) any {
	if _, ok := k.(clientKey); ok {
		return c
	}
	return c.Context.Value(k)
}

// ClientIP is the address WithClientIP recorded, or "".
func ClientIP(ctx context.Context) string {
	if c, ok := ctx.Value(clientKey{}).(*clientCtx); ok {
		return c.ip
	}
	return ""
}

// WithRequestID makes base with a request_id field, and a client_ip field
// when WithClientIP recorded one, the logger of the work done under the
// returned context. The child logger is made on the first From, and its
// fields are encoded only when a line is written (zap's WithLazy): most
// calls log nothing beyond the access log line, and Logger.With costs some
// 1.4 KiB and 7 allocations per request even when the level drops every
// line.
func WithRequestID(ctx context.Context, base *zap.Logger, id string) context.Context {
	return context.WithValue(ctx, key{}, &lazy{base: base, id: id, ip: ClientIP(ctx)})
}

// WithCall is WithRequestID that also records when the adapter started
// reading the call (Start), in one allocation: the returned context is the
// record itself, answering for both keys and asking ctx for any other.
func WithCall(ctx context.Context, base *zap.Logger, id string, start time.Time) context.Context {
	return &call{Context: ctx, lazy: lazy{base: base, id: id, ip: ClientIP(ctx)}, start: start}
}

type startKey struct{}

type call struct {
	context.Context
	lazy  lazy
	start time.Time
}

func (c *call) Value(k any) any {
	switch k.(type) {
	case key:
		return &c.lazy
	case startKey:
		return c // not c.start: a time.Time in an interface is an allocation
	}
	return c.Context.Value(k)
}

// Start is the time WithCall recorded, if any.
func Start(ctx context.Context) (time.Time, bool) {
	if c, ok := ctx.Value(startKey{}).(*call); ok {
		return c.start, true
	}
	return time.Time{}, false
}

type lazy struct {
	base   *zap.Logger
	id, ip string
	once   sync.Once
	l      *zap.Logger
}

func (z *lazy) logger() *zap.Logger {
	z.once.Do(func() {
		if z.ip == "" {
			z.l = z.base.WithLazy(zap.String("request_id", z.id))
			return
		}
		z.l = z.base.WithLazy(zap.String("request_id", z.id), zap.String("client_ip", z.ip))
	})
	return z.l
}

// From returns the logger set by With or WithRequestID, or fallback.
func From(ctx context.Context, fallback *zap.Logger) *zap.Logger {
	switch l := ctx.Value(key{}).(type) {
	case *zap.Logger:
		return l
	case *lazy:
		return l.logger()
	}
	return fallback
}
