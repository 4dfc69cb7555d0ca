package operations

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
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

// resultOf maps the gateway's operation result onto a signed EPaymentResult.
// Only FINISHED and ACCEPTED are success; anything else is FAILED, so the
// bridge never reports a success it did not get.
func (s *Service) resultOf(ref sessionRef, res *restbackend.Result) *PaymentResult {
	r := &PaymentResult{PaymentSessionID: ref.PaymentID}
	switch res.Result {
	case restbackend.ResultFinished:
		r.Result = Finished
	case restbackend.ResultAccepted:
		r.Result = accepted
	case restbackend.ResultFailed:
		r.Result = Failed
		r.ResultDescription = ptr("the payment gateway answered FAILED")
	default:
		r.Result = Failed
		r.ResultDescription = ptr("the payment gateway answered an unknown result " + strings.ToValidUTF8(res.Result, "?"))
	}
	if err := r.sign(ref.M.SecureKey); err != nil {
		s.log.Error("signing a reply failed", zap.Int64("goid", ref.M.GoID), zap.Error(err))
	}
	return r
}

// sessionAction serves the operations that take an EPaymentSessionInfo
// part "sessionInfo" and answer an EPaymentResult.
func (s *Service) sessionAction(ctx context.Context, op string, in *SessionInfo,
	do func(ctx context.Context, m Merchant, id int64) (*restbackend.Result, error)) (*PaymentResult, error) {
	ref, r := s.readSessionInfo(in, "sessionInfo")
	if r != nil {
		s.refused(ctx, op, ref, r)
		return s.failedResult(ref, r.desc), nil
	}
	res, err := do(ctx, ref.M, *ref.PaymentID)
	if err != nil {
		if errors.As(err, &r) {
			s.refused(ctx, op, ref, r)
			return s.failedResult(ref, r.desc), nil
		}
		return nil, err
	}
	return s.resultOf(ref, res), nil
}

// CapturePayment serves capturePayment.
func (s *Service) CapturePayment(ctx context.Context, in *SessionInfo) (*PaymentResult, error) {
	return s.sessionAction(ctx, "capturePayment", in, func(ctx context.Context, m Merchant, id int64) (*restbackend.Result, error) {
		res, err := s.gw.Capture(ctx, m.Credentials(), id, nil)
		if err != nil {
			return nil, s.gatewayFailed(ctx, "capture", m.GoID, id, err)
		}
		return res, nil
	})
}

// VoidAuthorization serves voidAuthorization.
func (s *Service) VoidAuthorization(ctx context.Context, in *SessionInfo) (*PaymentResult, error) {
	return s.sessionAction(ctx, "voidAuthorization", in, func(ctx context.Context, m Merchant, id int64) (*restbackend.Result, error) {
		res, err := s.gw.VoidAuthorization(ctx, m.Credentials(), id)
		if err != nil {
			return nil, s.gatewayFailed(ctx, "void authorization", m.GoID, id, err)
		}
		return res, nil
	})
}

// VoidRecurrentPayment serves voidRecurrentPayment.
func (s *Service) VoidRecurrentPayment(ctx context.Context, in *SessionInfo) (*PaymentResult, error) {
	r, err := s.sessionAction(ctx, "voidRecurrentPayment", in, func(ctx context.Context, m Merchant, id int64) (*restbackend.Result, error) {
		res, err := s.gw.VoidRecurrence(ctx, m.Credentials(), id)
		if err != nil {
			return nil, s.gatewayFailed(ctx, "void recurrence", m.GoID, id, err)
		}
		return res, nil
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
	return s.sessionAction(ctx, "refundPayment", in, s.refundRest)
}

// RefundPaymentRequest serves refundPayment(refundRequest), a (partial)
// refund like partiallyRefundPayment.
func (s *Service) RefundPaymentRequest(ctx context.Context, in *RefundRequest) (*PaymentResult, error) {
	return s.refundRequest(ctx, "refundPayment", in)
}

// refundRest refunds what is left of payment id. The legacy form carries no
// amount: the gateway's status tells the whole amount and, after partial
// refunds, its refund history what was already returned. The gateway refuses
// a refund larger than what is left, so the whole amount would fail there.
func (s *Service) refundRest(ctx context.Context, m Merchant, id int64) (*restbackend.Result, error) {
	p, err := s.gw.PaymentStatus(ctx, m.Credentials(), id)
	if err != nil {
		return nil, s.gatewayFailed(ctx, "payment status", m.GoID, id, err)
	}
	left := p.Amount
	switch p.State {
	case restbackend.StateRefunded:
		return nil, refuse("payment %d is already refunded in full, nothing left to refund", id)
	case restbackend.StatePartiallyRefunded:
		hist, err := s.gw.RefundHistory(ctx, m.Credentials(), id)
		if err != nil {
			return nil, s.gatewayFailed(ctx, "refund history", m.GoID, id, err)
		}
		done := refundedSum(hist)
		if left -= done; left <= 0 {
			return nil, refuse("payment %d has nothing left to refund: %d of %d %s already refunded", id, done, p.Amount, p.Currency)
		}
	}
	res, err := s.gw.Refund(ctx, m.Credentials(), id, left)
	if err != nil {
		return nil, s.gatewayFailed(ctx, "refund", m.GoID, id, err)
	}
	return res, nil
}

// refundedSum is what the refunds of a history returned: all but the
// FAILED ones (a pending refund has its money committed).
func refundedSum(hist []restbackend.Refund) int64 {
	var sum int64
	for _, r := range hist {
		if r.State != restbackend.ResultFailed {
			sum += r.Amount
		}
	}
	return sum
}

// PartiallyRefundPayment serves partiallyRefundPayment.
func (s *Service) PartiallyRefundPayment(ctx context.Context, in *RefundRequest) (*PaymentResult, error) {
	return s.refundRequest(ctx, "partiallyRefundPayment", in)
}

// refundRequest serves an ERefundRequest.
func (s *Service) refundRequest(ctx context.Context, op string, in *RefundRequest) (*PaymentResult, error) {
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
	if !Verify(ref.M.SecureKey, in.EncryptedSignature, RefundRequestFields(formatOptInt(ref.GoID), formatOptInt(ref.PaymentID),
		formatOptInt(amount), currency, in.Description)...) {
		return fail(badSignature("refundRequest"))
	}
	if *amount <= 0 {
		return fail(refuse("refundRequest.amount must be positive"))
	}
	m, id := ref.M, *ref.PaymentID
	// The currency must be the payment's; the bridge's session knows it,
	// otherwise the gateway's status does.
	payCurrency := ""
	sess, found, err := s.sessionOf(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	if found {
		payCurrency = sess.Currency
	} else {
		p, err := s.gw.PaymentStatus(ctx, m.Credentials(), id)
		if err != nil {
			err = s.gatewayFailed(ctx, "payment status", m.GoID, id, err)
			var r *refusal
			if errors.As(err, &r) {
				return fail(r)
			}
			return nil, err
		}
		payCurrency = p.Currency
	}
	if !strings.EqualFold(strings.TrimSpace(currency), payCurrency) {
		return fail(refuse("refund currency %s does not match the payment's currency %s", strings.ToValidUTF8(currency, "?"), payCurrency))
	}
	res, err := s.gw.Refund(ctx, m.Credentials(), id, *amount)
	if err != nil {
		err = s.gatewayFailed(ctx, "refund", m.GoID, id, err)
		var r *refusal
		if errors.As(err, &r) {
			return fail(r)
		}
		return nil, err
	}
	return s.resultOf(ref, res), nil
}
