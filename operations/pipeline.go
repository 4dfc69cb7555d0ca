package operations

import (
	"context"
	"crypto/cipher"
	"errors"
	"reflect"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// One pipeline serves every legacy operation (serve); the operations are
// rows of a table (table.go) that say only what differs: how a request names
// its merchant and proves to be the merchant's (auth), what else it must
// satisfy (check), how it moves money (money) and what it answers (reply,
// fail). The pipeline does the rest the same way for all: the call deadline,
// the merchant lookup, the signature check with the merchant's keys, a
// refusal answered as a signed failure, the ledger and the refund lock of a
// money-moving call, the log lines, the reply's signature, and the call's
// one outcome for the observer (metrics) and the usage record (finish,
// outcome.go). The browser flows (flows.go, statement.go) are calls of the
// same pipeline: begin, the same verification (authenticate), then their
// action, then finish.

// Operation is one row of the table, as the adapters see it: the SOAP
// adapter binds each to the WSDL operation of the same name and input type.
type Operation interface {
	// Name is the legacy operation's name (refundPayment has two rows).
	Name() string
	// Input is the legacy request type (*Input is what Invoke takes); nil
	// when the operation takes none.
	Input() reflect.Type
	// Output is the reply's type, as Invoke returns it.
	Output() reflect.Type
	invoke(ctx context.Context, s *Service, in any) (any, error)
}

// Invoke serves one call of op; in is a *Input (nil for an operation
// without input). The error is a *ServerError (or an internal one), or the
// error of the ctx's Admission (admission.go) that refused the verified
// call: every other refusal is a reply.
func (s *Service) Invoke(ctx context.Context, op Operation, in any) (any, error) {
	return op.invoke(ctx, s, in)
}

// Operations is the table, in no particular order.
func Operations() []Operation { return table }

// noInput is the input of the operations that take none.
type noInput struct{}

// row is one operation. In is its request type, Out its reply type.
type row[In, Out any] struct {
	name string
	// auth reads how the request names its merchant and what it signed;
	// nil for the operations that name none (touch, paymentMethodList).
	auth func(in *In) auth
	// check validates what the signature covers, before any gateway call.
	check func(c *call, in *In) *refusal
	// money, for a call that moves money, is its ledger policy; the
	// pipeline runs it once per signed request (see once) and puts the
	// record in c.rec for reply.
	money func(ctx context.Context, c *call, in *In) (*money, *refusal)
	// reply builds the answer (unsigned). A *refusal error becomes fail's
	// reply; any other error is the call's error.
	reply func(ctx context.Context, c *call, in *In) (Out, error)
	// fail is the reply to a refused call (unsigned).
	fail func(c *call, in *In, r *refusal) Out
	// sign signs a reply with key; nil when replies are not signed.
	sign func(c *call, out Out, key string) error
}

func (r *row[In, Out]) Name() string { return r.name }

func (r *row[In, Out]) Input() reflect.Type {
	if t := reflect.TypeFor[In](); t != reflect.TypeFor[noInput]() {
		return t
	}
	return nil
}

func (r *row[In, Out]) Output() reflect.Type { return reflect.TypeFor[Out]() }

func (r *row[In, Out]) invoke(ctx context.Context, s *Service, in any) (any, error) {
	typed, _ := in.(*In)
	return serve(ctx, s, r, typed)
}

// auth is what a request says of its merchant and its signature.
type auth struct {
	part    string // the request part's legacy name, for messages
	invalid string // the adapter's first reading problem ("" none)
	goid    *int64
	payment *int64 // the payment the call is about; nil when none
	// need are values that must be present before the signature is
	// checked, in order: the first absent one refuses the call.
	need []need
	sig  string
	// signed are the field lists the signature may cover, canonical
	// first; nil: the request is not signed.
	signed [][]string
}

type need struct {
	name    string // as the refusal names it
	present bool
}

// call is one call on its way through the pipeline.
type call struct {
	s       *Service
	op      string
	goid    *int64
	payment *int64
	m       Merchant
	known   bool // m is the merchant of goid: replies can be signed
	// verified: the request proved to be the merchant's (or names none);
	// only then does what it sends count beyond its result. Beside known:
	// the two share a word.
	verified bool
	v        verified
	ctx      context.Context // the call's, for its logger and the usage record
	log      *zap.Logger     // built on first use (logger)
	start    time.Time       // when the call was read (logctx.WithCall)

	// What a money call leaves for its reply (see once).
	rec      store.CallRecord      // the ledger's record: acted now, replayed or reconciled
	ledger   *held                 // the ledger entry this call holds
	since    time.Time             // when the ledger entry of the call was made
	baseline *store.RefundBaseline // a refund's baseline, once recorded or read
	// fresh is the payment this call created (createPayment,
	// createRecurrentPayment), freshProduct the productName its reply
	// carries.
	fresh        *restbackend.Payment
	freshProduct *string
	// replay is the read of a recorded payment for a repeat answered from
	// the ledger.
	replay *replay
}

// replay is a recorded payment as it is now.
type replay struct {
	st  *PaymentStatus
	p   *restbackend.Payment
	err error
}

// logger is the call's logger (with the request's id), built when a line
// is first written: most calls write none.
func (c *call) logger() *zap.Logger {
	if c.log == nil {
		c.log = c.s.logFor(c.ctx)
	}
	return c.log
}

// signingKey is the key replies to c are signed with: the one the request
// was signed with (the shop verifies with the key it signs with), else the
// merchant's current key.
// cipherFor is key's Triple DES cipher: the one the request verified
// with when it is key's, else from tripleDES.
func (c *call) cipherFor(key string) (cipher.Block, error) {
	if c.v.block != nil && c.v.key == key {
		return c.v.block, nil
	}
	return tripleDES(key)
}

func (c *call) signingKey() string {
	if c.v.key != "" {
		return c.v.key
	}
	return c.m.SecureKey
}

// serve runs one call of r, from begin to finish.
func serve[In, Out any](ctx context.Context, s *Service, r *row[In, Out], in *In) (Out, error) {
	ctx, cancel := s.Bound(ctx)
	defer cancel()
	c := s.begin(ctx, r.name)
	out, result, err := r.run(ctx, c, in)
	c.finish(result, in)
	return out, err
}

// run takes a call of r through the stages, in this order: the
// verification (authenticate: the merchant, what must be present, the
// signature), the row's checks, the ledger (money), the reply and its
// signature. Nothing acts or is learnt before the verification passed.
func (r *row[In, Out]) run(ctx context.Context, c *call, in *In) (out Out, result Result, err error) {
	if r.auth == nil {
		c.verified = true // names no merchant: nothing to verify
	} else {
		if rf := c.authenticate(ctx, r.auth(in)); rf != nil {
			return r.refused(c, in, rf)
		}
		// Verified: only now may the call spend its merchant's rate.
		if err := c.admit(ctx); err != nil {
			var zero Out
			return zero, ResultRateLimited, err
		}
	}
	if r.check != nil {
		if rf := r.check(c, in); rf != nil {
			return r.refused(c, in, rf)
		}
	}
	if r.money != nil {
		pol, rf := r.money(ctx, c, in)
		if rf != nil {
			return r.refused(c, in, rf)
		}
		if c.rec, err = c.s.once(ctx, c, pol); err != nil {
			return r.failed(c, in, err)
		}
	}
	out, err = r.reply(ctx, c, in)
	if err != nil {
		return r.failed(c, in, err)
	}
	if r.sign != nil && c.known {
		if err := r.sign(c, out, c.signingKey()); err != nil {
			return r.failed(c, in, err)
		}
	}
	return out, ResultOK, nil
}

// refused is the reply to a refused call: the row's failure reply,
// signed when the merchant is known. run's exits are methods, not
// closures, so that run's frame, held under the wait for the gateway by
// every call in flight, stays small (issue 28).
//
//go:noinline
func (r *row[In, Out]) refused(c *call, in *In, rf *refusal) (Out, Result, error) {
	c.refused(rf)
	out := r.fail(c, in, rf)
	if c.known && r.sign != nil {
		if err := r.sign(c, out, c.signingKey()); err != nil {
			c.logger().Error("signing a reply failed", zap.Int64("goid", c.m.GoID), zap.Error(err))
		}
	}
	if rf.badSig {
		return out, ResultBadSignature, nil
	}
	return out, ResultRefused, nil
}

// failed is run's outcome of err: a refusal's reply, else a server error.
//
//go:noinline
func (r *row[In, Out]) failed(c *call, in *In, err error) (Out, Result, error) {
	var rf *refusal
	if errors.As(err, &rf) {
		return r.refused(c, in, rf)
	}
	var zero Out
	return zero, ResultServerError, err
}

// authenticate finds the merchant a request names and checks what it
// signed; nothing is asked of the gateway before it succeeds.
func (c *call) authenticate(ctx context.Context, a auth) *refusal {
	c.goid, c.payment = a.goid, a.payment
	if a.goid != nil {
		c.m, c.known = c.s.merchant(ctx, *a.goid)
	}
	switch {
	case a.invalid != "":
		// Refused as read, signed when the merchant is known.
		return &refusal{desc: a.invalid}
	case a.goid == nil:
		return refuse("missing targetGoId")
	case !c.known:
		return refuse("unknown targetGoId %d: no such e-shop is configured at this bridge (reply not signed: no secure key is known)", *a.goid)
	}
	for _, n := range a.need {
		if !n.present {
			return refuse("missing %s", n.name)
		}
	}
	if a.signed == nil {
		return nil
	}
	v, ok := c.m.verify(c.s.now(), a.sig, a.signed...)
	if !ok {
		return badSignatureOf(a)
	}
	c.v, c.verified = v, true
	return nil
}

// refused logs a refused call (never its signature) and counts a forgery.
func (c *call) refused(r *refusal) {
	fs := append([]zap.Field{zap.String("op", c.op), zap.String("reason", r.desc)}, c.explain(r)...)
	if c.goid != nil {
		fs = append(fs, zap.Int64("goid", *c.goid))
	}
	if c.payment != nil {
		fs = append(fs, zap.Int64("payment", *c.payment))
	}
	c.logger().Info("request refused", fs...)
	if r.badSig && c.s.onBadSignature != nil && c.goid != nil && !isFlow(c.op) {
		c.s.onBadSignature(c.op, *c.goid)
	}
}

// Replies of the legacy result types: failures and signatures.

// failStatus is the CALL_FAILED EPaymentStatus of a refused call.
func failStatus[In any](c *call, _ *In, r *refusal) *PaymentStatus {
	desc := r.desc
	return &PaymentStatus{TargetGoID: c.goid, PaymentSessionID: c.payment, Result: callFailed, ResultDescription: &desc}
}

// signStatus signs st with key, with the cipher the call's signature
// verified with when it is key's (the usual case: one cipher look-up per
// call, not two).
func signStatus(c *call, st *PaymentStatus, key string) error {
	block, err := c.cipherFor(key)
	if err != nil {
		return err
	}
	sig := signSum(block, statusSum(st, key))
	st.EncryptedSignature = &sig
	return nil
}

// failResult is the FAILED EPaymentResult of a refused call.
func failResult[In any](c *call, _ *In, r *refusal) *PaymentResult {
	desc := r.desc
	return &PaymentResult{PaymentSessionID: c.payment, Result: Failed, ResultDescription: &desc}
}

func signResult(_ *call, r *PaymentResult, key string) error { return r.sign(key) }

// recordResult is the EPaymentResult of a money call's ledger record: the
// same reply for the call and for every repeat answered from the ledger.
// Only FINISHED and ACCEPTED are success (see resultRecord), so the bridge
// never reports a success it did not get.
func recordResult[In any](_ context.Context, c *call, _ *In) (*PaymentResult, error) {
	r := &PaymentResult{PaymentSessionID: c.payment, Result: c.rec.Result}
	if c.rec.Description != "" {
		r.ResultDescription = ptr(c.rec.Description)
	}
	return r, nil
}

// validUTF8 makes values safe to log.
func validUTF8(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.ToValidUTF8(v, "?")
	}
	return out
}
