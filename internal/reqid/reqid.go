// Package reqid carries the request id of a call (SOAP or browser flow) in
// its context, so that what the call leaves behind for later (an outbox
// notification) can name the call that caused it.
package reqid

import (
	"context"
	"math/rand/v2"
)

type key struct{}

// With returns ctx carrying id, in one allocation: the node answers the
// key with itself (a string put in an interface would be a second one).
func With(ctx context.Context, id string) context.Context {
	return &idCtx{Context: ctx, id: id}
}

type idCtx struct {
	context.Context
	id string
}

func (c *idCtx) Value(k any) any {
	if _, ok := k.(key); ok {
		return c
	}
	return c.Context.Value(k)
}

// From returns the request id in ctx, or "".
func From(ctx context.Context) string {
	if c, ok := ctx.Value(key{}).(*idCtx); ok {
		return c.id
	}
	return ""
}

// New returns a fresh request id: 32 hex digits from the runtime's
// ChaCha8 generator. Ids only need to be unique (a client may send its own
// anyway); crypto/rand, echo's default, costs more per call for nothing.
func New() string {
	var b [32]byte
	const hex = "0123456789abcdef"
	for i, w := range [2]uint64{rand.Uint64(), rand.Uint64()} {
		for j := range 16 {
			b[i*16+j] = hex[w>>(60-4*j)&0xf]
		}
	}
	return string(b[:])
}
