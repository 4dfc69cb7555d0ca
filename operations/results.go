package operations

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// failedResult is the FAILED reply to ref, signed when a key is known.
func (s *Service) failedResult(ref sessionRef, desc string) *PaymentResult {
	r := &PaymentResult{PaymentSessionID: ref.PaymentID, Result: Failed, ResultDescription: &desc}
	if ref.Known {
		if err := r.sign(ref.M.SecureKey); err != nil {
			s.log.Error("signing a reply failed", zap.Int64("goid", ref.M.GoID), zap.Error(err))
		}
	}
	return r
}

// recordResult is the signed EPaymentResult of a ledger record about ref:
// the same reply for the call and for every repeat answered from the
// ledger. Only FINISHED and ACCEPTED are success (see resultRecord), so the
// bridge never reports a success it did not get.
func (s *Service) recordResult(ref sessionRef, rec store.CallRecord) *PaymentResult {
	r := &PaymentResult{PaymentSessionID: ref.PaymentID, Result: rec.Result}
	if rec.Description != "" {
		r.ResultDescription = ptr(rec.Description)
	}
	if err := r.sign(ref.M.SecureKey); err != nil {
		s.log.Error("signing a reply failed", zap.Int64("goid", ref.M.GoID), zap.Error(err))
	}
	return r
}

// sessionAction serves the operations that take an EPaymentSessionInfo
// part "sessionInfo" and answer an EPaymentResult; each moves money, so it
// runs once per signed request (see once). do builds the call on payment id.
func (s *Service) sessionAction(ctx context.Context, op string, in *SessionInfo,
	do func(m Merchant, id int64, c *moneyCall)) (*PaymentResult, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ref, r := s.readSessionInfo(in, "sessionInfo")
	if r != nil {
		s.refused(ctx, op, ref, r)
		return s.failedResult(ref, r.desc), nil
	}
	id := *ref.PaymentID
	// The fields are digits only: their signed digest is their hash.
	c := &moneyCall{op: op, m: ref.M, id: id, signed: hashHex(ref.M.SecureKey, PaymentSessionFields(formatOptInt(ref.GoID), formatOptInt(ref.PaymentID)))}
	do(ref.M, id, c)
	rec, err := s.once(ctx, c)
	if err != nil {
		if errors.As(err, &r) {
			s.refused(ctx, op, ref, r)
			return s.failedResult(ref, r.desc), nil
		}
		return nil, err
	}
	return s.recordResult(ref, rec), nil
}

// CapturePayment serves capturePayment. A lost reply is reconciled by the
// payment's state: PAID (or refunded since) means captured.
func (s *Service) CapturePayment(ctx context.Context, in *SessionInfo) (*PaymentResult, error) {
	return s.sessionAction(ctx, "capturePayment", in, func(m Merchant, id int64, c *moneyCall) {
		c.act = func(ctx context.Context) (store.CallRecord, error) {
			res, err := s.gw.Capture(ctx, m.Credentials(), id, nil)
			if err != nil {
				return store.CallRecord{}, err
			}
			return resultRecord(id, res), nil
		}
		c.reconcile = s.stateCheck(m, id,
			stateIn(restbackend.StatePaid, restbackend.StatePartiallyRefunded, restbackend.StateRefunded),
			stateIn(restbackend.StateAuthorized, restbackend.StateCanceled, restbackend.StateTimeouted, restbackend.StateCreated))
	})
}

// VoidAuthorization serves voidAuthorization. A lost reply is reconciled
// by the payment's state: CANCELED means voided.
func (s *Service) VoidAuthorization(ctx context.Context, in *SessionInfo) (*PaymentResult, error) {
	return s.sessionAction(ctx, "voidAuthorization", in, func(m Merchant, id int64, c *moneyCall) {
		c.act = func(ctx context.Context) (store.CallRecord, error) {
			res, err := s.gw.VoidAuthorization(ctx, m.Credentials(), id)
			if err != nil {
				return store.CallRecord{}, err
			}
			return resultRecord(id, res), nil
		}
		c.reconcile = s.stateCheck(m, id, stateIn(restbackend.StateCanceled),
			stateIn(restbackend.StateAuthorized, restbackend.StatePaid, restbackend.StateCreated, restbackend.StateTimeouted))
	})
}

// VoidRecurrentPayment serves voidRecurrentPayment. A lost reply is
// reconciled by the recurrence's state: STOPPED means voided.
func (s *Service) VoidRecurrentPayment(ctx context.Context, in *SessionInfo) (*PaymentResult, error) {
	r, err := s.sessionAction(ctx, "voidRecurrentPayment", in, func(m Merchant, id int64, c *moneyCall) {
		c.act = func(ctx context.Context) (store.CallRecord, error) {
			res, err := s.gw.VoidRecurrence(ctx, m.Credentials(), id)
			if err != nil {
				return store.CallRecord{}, err
			}
			return resultRecord(id, res), nil
		}
		recState := func(states ...string) func(p *restbackend.Payment) bool {
			return func(p *restbackend.Payment) bool {
				for _, st := range states {
					if p.Recurrence != nil && p.Recurrence.RecurrenceState == st {
						return true
					}
				}
				return false
			}
		}
		c.reconcile = s.stateCheck(m, id, recState("STOPPED"), recState("STARTED", "REQUESTED"))
	})
	// The .NET library verifies this reply with the paymentSession scheme;
	// the merchant's setting says which its client library checks. Replies
	// without a known key stay unsigned either way.
	if err != nil || r.EncryptedSignature == nil || r.PaymentSessionID == nil || in == nil || in.TargetGoID == nil {
		return r, err
	}
	if m, ok := s.merchants[*in.TargetGoID]; ok && m.VoidRecurrentReply == ReplyPaymentSession {
		sig, err := Sign(m.SecureKey, PaymentSessionFields(FormatInt(m.GoID), FormatInt(*r.PaymentSessionID))...)
		if err != nil {
			return nil, err
		}
		r.EncryptedSignature = &sig
	}
	return r, nil
}

// RefundPayment serves refundPayment(sessionInfo): it refunds what is left
// of the payment. (The overload refundPayment(refundRequest) is
// RefundPaymentRequest.)
func (s *Service) RefundPayment(ctx context.Context, in *SessionInfo) (*PaymentResult, error) {
	return s.sessionAction(ctx, "refundPayment", in, func(m Merchant, id int64, c *moneyCall) {
		c.act = func(ctx context.Context) (store.CallRecord, error) { return s.refundRest(ctx, m, id, c) }
		c.needsBaseline = true
		c.reconcile = s.refundCheck(m, id, c)
	})
}

// RefundPaymentRequest serves refundPayment(refundRequest), a (partial)
// refund like partiallyRefundPayment.
func (s *Service) RefundPaymentRequest(ctx context.Context, in *RefundRequest) (*PaymentResult, error) {
	return s.refundRequest(ctx, "refundPayment", "refundPayment(refundRequest)", in)
}

// refundRest refunds what is left of payment id. The legacy form carries no
// amount: the gateway's status tells the whole amount and, after partial
// refunds, its refund history what was already returned. The gateway refuses
// a refund larger than what is left, so the whole amount would fail there.
// The history read before the POST is also the reconciliation's baseline.
func (s *Service) refundRest(ctx context.Context, m Merchant, id int64, c *moneyCall) (store.CallRecord, error) {
	unlock, err := s.lockRefunds(ctx, m, id)
	if err != nil {
		return store.CallRecord{}, err
	}
	defer unlock()
	p, err := s.gw.PaymentStatus(ctx, m.Credentials(), id)
	if err != nil {
		return store.CallRecord{}, err
	}
	left := p.Amount
	var hist []restbackend.Refund
	switch p.State {
	case restbackend.StateRefunded:
		return store.CallRecord{}, refuse("payment %d is already refunded in full, nothing left to refund", id)
	case restbackend.StatePartiallyRefunded:
		hist, err = s.gw.RefundHistory(ctx, m.Credentials(), id)
		if err != nil {
			return store.CallRecord{}, err
		}
		done := refundedSum(hist)
		if left -= done; left <= 0 {
			return store.CallRecord{}, refuse("payment %d has nothing left to refund: %d of %d %s already refunded", id, done, p.Amount, p.Currency)
		}
	}
	if p.State != restbackend.StatePartiallyRefunded {
		// Read anyway: a refund of the whole amount may have failed before.
		if hist, err = s.gw.RefundHistory(ctx, m.Credentials(), id); err != nil {
			return store.CallRecord{}, err
		}
	}
	if err := c.setBaseline(ctx, refundBaselineOf(hist, left)); err != nil {
		return store.CallRecord{}, err
	}
	res, err := s.gw.Refund(ctx, m.Credentials(), id, left)
	if err != nil {
		return store.CallRecord{}, err
	}
	return resultRecord(id, res), nil
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

// PartiallyRefundPayment serves partiallyRefundPayment.
func (s *Service) PartiallyRefundPayment(ctx context.Context, in *RefundRequest) (*PaymentResult, error) {
	return s.refundRequest(ctx, "partiallyRefundPayment", "partiallyRefundPayment", in)
}

// refundRequest serves an ERefundRequest of operation op; ledgerOp keeps
// the two refundPayment forms apart in the ledger.
func (s *Service) refundRequest(ctx context.Context, op, ledgerOp string, in *RefundRequest) (*PaymentResult, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var ref sessionRef
	fail := func(r *refusal) (*PaymentResult, error) {
		s.refused(ctx, op, ref, r)
		return s.failedResult(ref, r.desc), nil
	}
	if in == nil {
		in = &RefundRequest{Invalid: "missing refundRequest"}
	}
	ref.PaymentID = in.PaymentSessionID
	ref.GoID = in.TargetGoID
	if in.Invalid != "" {
		s.merchantOf(&ref)
		return fail(&refusal{desc: in.Invalid})
	}
	if r := s.merchantOf(&ref); r != nil {
		return fail(r)
	}
	amount, currency := in.Amount, in.Currency
	switch {
	case ref.PaymentID == nil:
		return fail(refuse("missing refundRequest.paymentSessionId"))
	case amount == nil:
		return fail(refuse("missing refundRequest.amount"))
	case currency == "":
		return fail(refuse("missing refundRequest.currency"))
	}
	fields := RefundRequestFields(formatOptInt(ref.GoID), formatOptInt(ref.PaymentID), formatOptInt(amount), currency, in.Description)
	digest, ok := SignedDigest(ref.M.SecureKey, in.EncryptedSignature, fields)
	if !ok {
		return fail(badSignature("refundRequest"))
	}
	if *amount <= 0 {
		return fail(refuse("refundRequest.amount must be positive"))
	}
	m, id := ref.M, *ref.PaymentID
	c := &moneyCall{op: ledgerOp, m: m, id: id, signed: digest}
	c.act = func(ctx context.Context) (store.CallRecord, error) {
		// The currency must be the payment's; the bridge's session knows
		// it, otherwise the gateway's status does.
		sess, found, err := s.sessionOf(ctx, id, 0)
		if err != nil {
			return store.CallRecord{}, err
		}
		payCurrency := sess.Currency
		if !found {
			p, err := s.gw.PaymentStatus(ctx, m.Credentials(), id)
			if err != nil {
				return store.CallRecord{}, err
			}
			payCurrency = p.Currency
		}
		if !strings.EqualFold(strings.TrimSpace(currency), payCurrency) {
			return store.CallRecord{}, refuse("refund currency %s does not match the payment's currency %s", strings.ToValidUTF8(currency, "?"), payCurrency)
		}
		unlock, err := s.lockRefunds(ctx, m, id)
		if err != nil {
			return store.CallRecord{}, err
		}
		defer unlock()
		b, err := s.refundBaseline(ctx, m, id, *amount)
		if err != nil {
			return store.CallRecord{}, err
		}
		if err := c.setBaseline(ctx, b); err != nil {
			return store.CallRecord{}, err
		}
		res, err := s.gw.Refund(ctx, m.Credentials(), id, *amount)
		if err != nil {
			return store.CallRecord{}, err
		}
		return resultRecord(id, res), nil
	}
	c.reconcile = s.refundCheck(m, id, c)
	c.needsBaseline = true
	rec, err := s.once(ctx, c)
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return fail(r)
		}
		return nil, err
	}
	return s.recordResult(ref, rec), nil
}
