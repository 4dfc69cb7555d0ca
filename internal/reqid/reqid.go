// Package reqid carries the request id of a call (SOAP or browser flow) in
// its context, so that what the call leaves behind for later (an outbox
// notification) can name the call that caused it.
package reqid

import "context"

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
