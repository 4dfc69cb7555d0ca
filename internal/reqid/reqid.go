// Package reqid carries the request id of a call (SOAP or browser flow) in
// its context, so that what the call leaves behind for later (an outbox
// notification) can name the call that caused it.
package reqid

import (
	"context"
	"math/rand/v2"
)

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the request id in ctx, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
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
