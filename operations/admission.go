package operations

import "context"

// Admission is asked, once a call's signature has verified and before the
// call acts or anything is recorded of it (the ledger, the gateway), whether
// it may go on: the SOAP adapter's per-merchant rate limit. It is never
// asked about a call refused before (unknown goid, missing values, a
// forged signature), so a stranger cannot use up a merchant's rate. A
// non-nil error ends the call: Invoke returns it as it is, no reply is
// built, and the adapter answers it (a SOAP fault).
type Admission func(ctx context.Context, goid int64) error

type admissionKey struct{}

// WithAdmission returns ctx carrying a: the calls served with it are asked
// a once verified. The adapter of an entry that limits its callers sets
// it; calls served without one are not asked.
func WithAdmission(ctx context.Context, a Admission) context.Context {
	return context.WithValue(ctx, admissionKey{}, a)
}

// admit asks the call's Admission, if any, once c is verified.
func (c *call) admit(ctx context.Context) error {
	a, _ := ctx.Value(admissionKey{}).(Admission)
	if a == nil || !c.known {
		return nil
	}
	return a(ctx, c.m.GoID)
}
