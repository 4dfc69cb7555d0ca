package operations

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/soapenc"
	"github.com/legacybridge/soapbridge/store"
)

// sessionRef is a request's view of one payment: the goid and id it names
// and, when the goid is configured, its merchant.
type sessionRef struct {
	GoID      *int64
	PaymentID *int64
	M         Merchant
	Known     bool // M is set: replies can be signed
}

// readSessionInfo reads an EPaymentSessionInfo part, finds the merchant and
// verifies the paymentSession signature. Nothing is asked of the gateway
// before this succeeds.
func (s *Service) readSessionInfo(call *soapenc.Call, part string) (sessionRef, *refusal) {
	f := readPart(call, part)
	var ref sessionRef
	if f.err != nil {
		return ref, f.err
	}
	ref.GoID = f.long("targetGoId")
	ref.PaymentID = f.long("paymentSessionId")
	sig := f.str("encryptedSignature")
	if f.err != nil {
		s.merchantOf(&ref)
		return ref, f.err
	}
	if r := s.merchantOf(&ref); r != nil {
		return ref, r
	}
	f.need("paymentSessionId", ref.PaymentID != nil)
	if f.err != nil {
		return ref, f.err
	}
	if !Verify(ref.M.SecureKey, sig, PaymentSessionFields(FormatOptInt(ref.GoID), FormatOptInt(ref.PaymentID))...) {
		return ref, badSignature(part)
	}
	return ref, nil
}

// merchantOf resolves ref.GoID to a configured merchant.
func (s *Service) merchantOf(ref *sessionRef) *refusal {
	if ref.GoID == nil {
		return refuse("missing targetGoId")
	}
	m, ok := s.merchants[*ref.GoID]
	if !ok {
		return refuse("unknown targetGoId %d: no such e-shop is configured at this bridge (reply not signed: no secure key is known)", *ref.GoID)
	}
	ref.M, ref.Known = m, true
	return nil
}

func badSignature(part string) *refusal {
	return refuse("invalid encryptedSignature of %s: it does not verify with the e-shop's secure key", part)
}

// failedStatus is the CALL_FAILED reply to ref, signed when a key is known.
func (s *Service) failedStatus(ref sessionRef, desc string) *Status {
	st := &Status{GoID: ref.GoID, PaymentID: ref.PaymentID, Result: CallFailed, ResultDescription: &desc}
	if ref.Known {
		if err := st.Sign(ref.M.SecureKey); err != nil {
			s.log.Error("signing a reply failed", zap.Int64("goid", ref.M.GoID), zap.Error(err))
		}
	}
	return st
}

func (s *Service) paymentStatus(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error) {
	return s.statusOp(ctx, call, "paymentStatusReturn", false)
}

func (s *Service) paymentStatusWCust(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error) {
	return s.statusOp(ctx, call, "paymentStatusWCustReturn", true)
}

func (s *Service) statusOp(ctx context.Context, call *soapenc.Call, ret string, wcust bool) (*soapenc.Value, error) {
	ref, r := s.readSessionInfo(call, "paymentSessionInfo")
	if r != nil {
		s.refused(ctx, call, ref, r)
		return s.failedStatus(ref, r.desc).Value(ret, wcust), nil
	}
	st, err := s.statusFor(ctx, ref.M, *ref.PaymentID)
	if err != nil {
		if errors.As(err, &r) {
			s.refused(ctx, call, ref, r)
			return s.failedStatus(ref, r.desc).Value(ret, wcust), nil
		}
		return nil, err
	}
	return st.Value(ret, wcust), nil
}

// statusFor reads payment id of m from the gateway and builds its signed
// legacy status, productName taken from the bridge's session (the parent's
// for a recurring child without one). The error is a *refusal (the gateway
// refused) or a *soapenc.Fault.
func (s *Service) statusFor(ctx context.Context, m Merchant, id int64) (*Status, error) {
	p, err := s.gw.PaymentStatus(ctx, m.Credentials(), id)
	if err != nil {
		return nil, s.gatewayFailed(ctx, "payment status", m.GoID, id, err)
	}
	sess, found, err := s.sessionOf(ctx, p.ID, p.ParentID)
	if err != nil {
		return nil, err
	}
	var product *string
	if found {
		product = &sess.ProductName
	}
	st := statusFromPayment(p, m, product)
	// The gateway's status reply need not carry parent_id (the
	// specification lists it for the create-recurrence reply); the child's
	// session knows it, as the return and the notification report it.
	if st.ParentID == nil && found && sess.PaymentID == p.ID {
		st.ParentID = optInt(sess.ParentID)
	}
	if err := st.Sign(m.SecureKey); err != nil {
		return nil, err
	}
	return st, nil
}

// sessionOf returns the session of payment id, or of its parent when the
// payment has none (children created by the gateway's own recurrence).
func (s *Service) sessionOf(ctx context.Context, id, parentID int64) (store.Session, bool, error) {
	for _, pid := range []int64{id, parentID} {
		if pid == 0 {
			continue
		}
		sess, err := s.store.Session(ctx, pid)
		if err == nil {
			return sess, true, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			s.logFor(ctx).Error("session store read failed", zap.Int64("payment", pid), zap.Error(err))
			return store.Session{}, false, serverFault("session store unavailable")
		}
	}
	return store.Session{}, false, nil
}

// statusFromPayment maps a REST payment onto EPaymentStatus (unsigned).
// productName is the e-shop's (the REST reply carries none); nil when the
// payment was not created through the bridge.
func statusFromPayment(p *restbackend.Payment, m Merchant, productName *string) *Status {
	goid := m.GoID
	if p.Target != nil && p.Target.GoID != 0 {
		goid = p.Target.GoID
	}
	st := &Status{
		Currency:         opt(p.Currency),
		OrderNumber:      opt(p.OrderNumber),
		ParentID:         optInt(p.ParentID),
		PaymentID:        ptr(p.ID),
		PreAuthorization: ptr(p.Preauthorization != nil && p.Preauthorization.Requested),
		ProductName:      productName,
		RecurrentPayment: ptr(p.Recurrence != nil),
		Result:           CallCompleted,
		SessionState:     opt(p.State),
		GoID:             &goid,
		TotalPrice:       ptr(p.Amount),
	}
	if sub := strings.TrimPrefix(p.SubState, "_"); sub != "" {
		st.SessionSubState = &sub
		st.SessionSubStateDesc = opt(subStateDesc(sub))
	}
	swift := ""
	if p.Payer != nil {
		if p.Payer.BankAccount != nil {
			swift = p.Payer.BankAccount.BIC
		}
		st.Customer = p.Payer.Contact
		st.Card = p.Payer.PaymentCard
		if c := p.Payer.PaymentCard; c != nil {
			st.InstCountry = opt(c.CardIssuerCountry)
		}
	}
	if code, ok := legacyCode(p.PaymentInstrument, swift); ok {
		st.PaymentChannel = &code
	}
	for _, ap := range p.AdditionalParams {
		if len(ap.Name) == 2 && ap.Name[0] == 'p' && ap.Name[1] >= '1' && ap.Name[1] <= '4' {
			st.P[ap.Name[1]-'1'] = ptr(ap.Value)
		}
	}
	return st
}

// subStateDescs are short texts of the sub-states the gateway documents.
var subStateDescs = map[string]string{
	"101":  "payment pending: waiting for the online payment to be completed",
	"102":  "payment pending: waiting for the offline transfer to arrive",
	"3001": "bank transfer confirmed by advice",
	"3002": "bank transfer confirmed by statement",
	"3003": "bank transfer not authorised",
	"5002": "declined: card limits exceeded",
	"5003": "declined: problem on the card issuer's side",
	"5004": "declined: problem on the card issuer's side",
	"5005": "declined: card blocked",
	"5006": "declined: insufficient funds",
	"5007": "declined: card expired",
	"5008": "declined: CVV/CVC refused",
	"5009": "declined: 3-D Secure verification failed",
	"5015": "declined: 3-D Secure verification failed",
	"5017": "declined: 3-D Secure verification failed",
	"5018": "declined: 3-D Secure verification failed",
	"5019": "declined: 3-D Secure verification failed",
	"5021": "declined: card limits exceeded",
	"5022": "declined: problem on the card issuer's side",
	"5023": "declined: problem on the card issuer's side",
	"5038": "declined: problem on the card issuer's side",
	"6502": "declined: problem on the card issuer's side",
	"6504": "declined: problem on the card issuer's side",
}

func subStateDesc(sub string) string {
	if d, ok := subStateDescs[sub]; ok {
		return d
	}
	if len(sub) == 4 && (sub[0] == '5' || sub[0] == '6') {
		return "payment declined"
	}
	return ""
}

// gatewayFailed logs a failed REST call and sorts it (see gatewayError).
func (s *Service) gatewayFailed(ctx context.Context, what string, goid, id int64, err error) error {
	out := gatewayError(err)
	lvl := s.logFor(ctx).Warn
	if _, isRefusal := out.(*refusal); isRefusal {
		lvl = s.logFor(ctx).Info
	}
	lvl("gateway call failed", zap.String("call", what), zap.Int64("goid", goid), zap.Int64("payment", id), zap.Error(err))
	return out
}

// refused logs a refused request (without its signature).
func (s *Service) refused(ctx context.Context, call *soapenc.Call, ref sessionRef, r *refusal) {
	fs := []zap.Field{zap.String("op", call.Operation.Local), zap.String("reason", r.desc)}
	if ref.GoID != nil {
		fs = append(fs, zap.Int64("goid", *ref.GoID))
	}
	if ref.PaymentID != nil {
		fs = append(fs, zap.Int64("payment", *ref.PaymentID))
	}
	s.logFor(ctx).Info("request refused", fs...)
}
