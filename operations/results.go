package operations

import (
	"context"
	"slices"
	"strings"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// The operations that move money on one payment and answer an
// EPaymentResult: capture, the voids and the refunds.

// sessionMoney is the row of an operation on the payment an
// EPaymentSessionInfo part "sessionInfo" names; policy builds its ledger
// policy for the authenticated call.
func sessionMoney(name string, policy func(c *call) *money) *row[SessionInfo, *PaymentResult] {
	return &row[SessionInfo, *PaymentResult]{
		name:  name,
		auth:  sessionAuth("sessionInfo"),
		money: func(_ context.Context, c *call, _ *SessionInfo) (*money, *refusal) { return policy(c), nil },
		reply: recordResult[SessionInfo],
		fail:  failResult[SessionInfo],
		sign:  signResult,
	}
}

// gatewayResult is an act that calls one REST operation on the payment
// and records its result.
func gatewayResult(c *call, do func(ctx context.Context, cr restbackend.Credentials, id int64) (*restbackend.Result, error)) func(ctx context.Context) (store.CallRecord, error) {
	cr, id := c.m.Credentials(), *c.payment
	return func(ctx context.Context) (store.CallRecord, error) {
		res, err := do(ctx, cr, id)
		if err != nil {
			return store.CallRecord{}, err
		}
		return resultRecord(id, res)
	}
}

// capturePayment: a lost reply is reconciled by the payment's state: PAID
// (or refunded since) means captured.
var capturePaymentRow = sessionMoney("capturePayment", func(c *call) *money {
	return &money{
		act: gatewayResult(c, func(ctx context.Context, cr restbackend.Credentials, id int64) (*restbackend.Result, error) {
			return c.s.gw.Capture(ctx, cr, id, nil)
		}),
		reconcile: c.s.stateCheck(c.m, *c.payment,
			stateIn(restbackend.StatePaid, restbackend.StatePartiallyRefunded, restbackend.StateRefunded),
			stateIn(restbackend.StateAuthorized, restbackend.StateCanceled, restbackend.StateTimeouted, restbackend.StateCreated)),
	}
})

// voidAuthorization: a lost reply is reconciled by the payment's state:
// CANCELED means voided.
var voidAuthorizationRow = sessionMoney("voidAuthorization", func(c *call) *money {
	return &money{
		act: gatewayResult(c, c.s.gw.VoidAuthorization),
		reconcile: c.s.stateCheck(c.m, *c.payment, stateIn(restbackend.StateCanceled),
			stateIn(restbackend.StateAuthorized, restbackend.StatePaid, restbackend.StateCreated, restbackend.StateTimeouted)),
	}
})

// voidRecurrentPayment: a lost reply is reconciled by the recurrence's
// state: STOPPED means voided. The reply's signature scheme is the
// merchant's choice (Merchant.VoidRecurrentReply): the .NET library
// verifies it as paymentSession, the PHP library as paymentResult.
var voidRecurrentPaymentRow = func() *row[SessionInfo, *PaymentResult] {
	r := sessionMoney("voidRecurrentPayment", func(c *call) *money {
		recState := func(states ...string) func(p *restbackend.Payment) bool {
			return func(p *restbackend.Payment) bool {
				return p.Recurrence != nil && slices.Contains(states, p.Recurrence.RecurrenceState)
			}
		}
		return &money{
			act:       gatewayResult(c, c.s.gw.VoidRecurrence),
			reconcile: c.s.stateCheck(c.m, *c.payment, recState("STOPPED"), recState("STARTED", "REQUESTED")),
		}
	})
	r.sign = func(c *call, res *PaymentResult, key string) error {
		if c.m.VoidRecurrentReply != ReplyPaymentSession || res.PaymentSessionID == nil {
			return res.sign(key)
		}
		sig, err := Sign(key, PaymentSessionFields(FormatInt(c.m.GoID), FormatInt(*res.PaymentSessionID))...)
		if err != nil {
			return err
		}
		res.EncryptedSignature = &sig
		return nil
	}
	return r
}()

// refundPayment(sessionInfo) refunds what is left of the payment. (The
// overload refundPayment(refundRequest) is a (partial) refund like
// partiallyRefundPayment.)
var refundPaymentRow = sessionMoney("refundPayment", func(c *call) *money {
	return &money{
		refund:    true,
		act:       func(ctx context.Context) (store.CallRecord, error) { return c.s.refundRest(ctx, c) },
		reconcile: refundCheck(c),
	}
})

// refundRest refunds what is left of the payment of c. The legacy form
// carries no amount: the gateway's status tells the whole amount and, after
// partial refunds, its refund history what was already returned. The
// gateway refuses a refund larger than what is left, so the whole amount
// would fail there. The history read before the POST is also the
// reconciliation's baseline.
func (s *Service) refundRest(ctx context.Context, c *call) (store.CallRecord, error) {
	cr, id := c.m.Credentials(), *c.payment
	p, err := s.gw.PaymentStatus(ctx, cr, id)
	if err != nil {
		return store.CallRecord{}, err
	}
	if p.State == restbackend.StateRefunded {
		return store.CallRecord{}, refuse("payment %d is already refunded in full, nothing left to refund", id)
	}
	// Read in every state: a refund of the whole amount may have failed
	// before.
	hist, err := s.gw.RefundHistory(ctx, cr, id)
	if err != nil {
		return store.CallRecord{}, err
	}
	left := p.Amount
	if p.State == restbackend.StatePartiallyRefunded {
		done := refundedSum(hist)
		if left -= done; left <= 0 {
			return store.CallRecord{}, refuse("payment %d has nothing left to refund: %d of %d %s already refunded", id, done, p.Amount, p.Currency)
		}
	}
	if err := c.setBaseline(ctx, refundBaselineOf(id, hist, left)); err != nil {
		return store.CallRecord{}, err
	}
	res, err := s.gw.Refund(ctx, cr, id, left)
	if err != nil {
		return store.CallRecord{}, err
	}
	return resultRecord(id, res)
}

// refundedSum is what the refunds of a history returned: all but the
// FAILED ones (a pending refund has its money committed).
func refundedSum(hist []restbackend.Refund) int64 {
	var sum int64
	for _, r := range hist {
		if r.State != restbackend.RefundFailed {
			sum += r.Amount
		}
	}
	return sum
}

// refundRequestRow is the row of an operation taking an ERefundRequest;
// ledgerOp keeps the two refundPayment forms apart in the ledger.
func refundRequestRow(name, ledgerOp string) *row[RefundRequest, *PaymentResult] {
	const part = "refundRequest"
	return &row[RefundRequest, *PaymentResult]{
		name: name,
		auth: func(in *RefundRequest) auth {
			if in == nil {
				return auth{part: part, invalid: "missing " + part}
			}
			return auth{part: part, invalid: in.Invalid, goid: in.TargetGoID, payment: in.PaymentSessionID,
				need: []need{
					{part + ".paymentSessionId", in.PaymentSessionID != nil},
					{part + ".amount", in.Amount != nil},
					{part + ".currency", in.Currency != ""},
				},
				sig: in.EncryptedSignature,
				signed: [][]string{RefundRequestFields(formatOptInt(in.TargetGoID), formatOptInt(in.PaymentSessionID),
					formatOptInt(in.Amount), in.Currency, in.Description)},
			}
		},
		check: func(_ *call, in *RefundRequest) *refusal {
			if *in.Amount <= 0 {
				return refuse("refundRequest.amount must be positive")
			}
			return nil
		},
		money: func(_ context.Context, c *call, in *RefundRequest) (*money, *refusal) {
			return &money{
				op:     ledgerOp,
				refund: true,
				act: func(ctx context.Context) (store.CallRecord, error) {
					return c.s.refundAmount(ctx, c, *in.Amount, in.Currency)
				},
				reconcile: refundCheck(c),
			}, nil
		},
		reply: recordResult[RefundRequest],
		fail:  failResult[RefundRequest],
		sign:  signResult,
	}
}

var (
	refundPaymentRequestRow   = refundRequestRow("refundPayment", "refundPayment(refundRequest)")
	partiallyRefundPaymentRow = refundRequestRow("partiallyRefundPayment", "partiallyRefundPayment")
)

// refundAmount refunds amount of the payment of c, in currency, which must
// be the payment's: the bridge's session knows it, otherwise the gateway's
// status does.
func (s *Service) refundAmount(ctx context.Context, c *call, amount int64, currency string) (store.CallRecord, error) {
	cr, id := c.m.Credentials(), *c.payment
	sess, found, err := s.sessionOf(ctx, id, 0)
	if err != nil {
		return store.CallRecord{}, err
	}
	payCurrency := sess.Currency
	if !found {
		p, err := s.gw.PaymentStatus(ctx, cr, id)
		if err != nil {
			return store.CallRecord{}, err
		}
		payCurrency = p.Currency
	}
	if !strings.EqualFold(strings.TrimSpace(currency), payCurrency) {
		return store.CallRecord{}, refuse("refund currency %s does not match the payment's currency %s", strings.ToValidUTF8(currency, "?"), payCurrency)
	}
	hist, err := s.gw.RefundHistory(ctx, cr, id)
	if err != nil {
		return store.CallRecord{}, err
	}
	if err := c.setBaseline(ctx, refundBaselineOf(id, hist, amount)); err != nil {
		return store.CallRecord{}, err
	}
	res, err := s.gw.Refund(ctx, cr, id, amount)
	if err != nil {
		return store.CallRecord{}, err
	}
	return resultRecord(id, res)
}
