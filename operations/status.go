package operations

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// sessionAuth reads an EPaymentSessionInfo sent as part: the goid and
// payment it names, signed as paymentSession.
func sessionAuth(part string) func(in *SessionInfo) auth {
	idName := part + ".paymentSessionId"
	return func(in *SessionInfo) auth {
		if in == nil {
			return auth{part: part, invalid: "missing " + part}
		}
		// The lists an auth points to, in one allocation.
		b := &sessionAuthBlock{
			need:   [1]need{{idName, in.PaymentSessionID != nil}},
			fields: [2]string{formatOptInt(in.TargetGoID), formatOptInt(in.PaymentSessionID)}, // PaymentSessionFields' order
		}
		b.signed[0] = b.fields[:]
		return auth{part: part, invalid: in.Invalid, goid: in.TargetGoID, payment: in.PaymentSessionID,
			need: b.need[:], sig: in.EncryptedSignature, signed: b.signed[:]}
	}
}

type sessionAuthBlock struct {
	need   [1]need
	fields [2]string
	signed [1][]string
}

func badSignature(part string) *refusal {
	r := refuse("invalid encryptedSignature of %s: it does not verify with the e-shop's secure key", part)
	r.badSig = true
	return r
}

// paymentStatus: the payment's status, read from the gateway.
var paymentStatusRow = &row[SessionInfo, *PaymentStatus]{
	name: "paymentStatus",
	auth: sessionAuth("paymentSessionInfo"),
	reply: func(ctx context.Context, c *call, _ *SessionInfo) (*PaymentStatus, error) {
		st, _, err := c.s.statusFor(ctx, &c.m, *c.payment)
		return st, err
	},
	fail: failStatus[SessionInfo],
	sign: signStatus,
}

// paymentStatusWCust: the status and the payer.
var paymentStatusWCustRow = &row[SessionInfo, *PaymentStatusWCust]{
	name: "paymentStatusWCust",
	auth: sessionAuth("paymentSessionInfo"),
	reply: func(ctx context.Context, c *call, _ *SessionInfo) (*PaymentStatusWCust, error) {
		st, p, err := c.s.statusFor(ctx, &c.m, *c.payment)
		if err != nil {
			return nil, err
		}
		return withCustomer(st, p), nil
	},
	fail: func(c *call, in *SessionInfo, r *refusal) *PaymentStatusWCust {
		return withCustomer(failStatus(c, in, r), nil)
	},
	sign: func(c *call, w *PaymentStatusWCust, key string) error { return signStatus(c, &w.PaymentStatus, key) },
}

// statusFor reads payment id of m from the gateway and builds its legacy
// status (unsigned), productName taken from the bridge's session (the
// parent's for a recurring child without one). The error is a *refusal
// (the gateway refused) or a *ServerError.
func (s *Service) statusFor(ctx context.Context, m *Merchant, id int64) (*PaymentStatus, *restbackend.Payment, error) {
	p, err := s.gw.PaymentStatus(ctx, m.Credentials(), id)
	if err != nil {
		return nil, nil, s.gatewayFailed(ctx, "payment status", m.GoID, id, err)
	}
	return s.statusOf(ctx, m, p)
}

// statusOf is statusFor once the gateway replied: apart so that its
// locals are not in statusFor's frame under the wait for the gateway
// (held per call in flight, issue 28).
//
//go:noinline
func (s *Service) statusOf(ctx context.Context, m *Merchant, p *restbackend.Payment) (*PaymentStatus, *restbackend.Payment, error) {
	sess, found, err := s.sessionOf(ctx, p.ID, p.ParentID)
	if err != nil {
		return nil, nil, err
	}
	var product *string
	if found {
		product = &sess.ProductName
	}
	st := statusFromPayment(p, m, product)
	if found { // the channel as the shop knows it (a code of earlier years it listed)
		st.PaymentChannel = paymentChannelOf(p, sess.PaymentChannels)
	}
	// The gateway's status reply need not carry parent_id (the
	// specification lists it for the create-recurrence reply); the child's
	// session knows it, as the return and the notification report it.
	if st.ParentPaymentSessionID == nil && found && sess.PaymentID == p.ID {
		st.ParentPaymentSessionID = optInt(sess.ParentID)
	}
	return st, p, nil
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
			return store.Session{}, false, s.sessionReadFailed(ctx, pid, err)
		}
	}
	return store.Session{}, false, nil
}

// sessionReadFailed logs a failed session read and returns the call's
// error. Apart from sessionOf, so that the log fields take no room in its
// frame, which is under the handler's deepest ones (issue 28).
//
//go:noinline
func (s *Service) sessionReadFailed(ctx context.Context, pid int64, err error) error {
	s.logFor(ctx).Error("session store read failed", zap.Int64("payment", pid), zap.Error(err))
	return serverError("session store unavailable")
}

// statusFromPayment maps a REST payment onto EPaymentStatus (unsigned).
// productName is the e-shop's (the REST reply carries none); nil when the
// payment was not created through the bridge.
// statusBlock is a paymentStatus reply with room for the values its
// members point to: the reply of every call is one allocation.
type statusBlock struct {
	st                                            PaymentStatus
	currency, order, state, sub, subDesc, channel string
	p                                             [4]string
	parent, id, goid, price                       int64
	preauth, recurrent                            bool
}

func statusFromPayment(p *restbackend.Payment, m *Merchant, productName *string) *PaymentStatus {
	b := &statusBlock{
		currency: p.Currency, order: p.OrderNumber, state: p.State,
		parent: p.ParentID, id: p.ID, goid: m.GoID, price: p.Amount,
		preauth:   p.Preauthorization != nil && p.Preauthorization.Requested,
		recurrent: p.Recurrence != nil,
	}
	if p.Target != nil && p.Target.GoID != 0 {
		b.goid = p.Target.GoID
	}
	st := &b.st
	*st = PaymentStatus{
		Currency:               optIn(&b.currency),
		OrderNumber:            optIn(&b.order),
		ParentPaymentSessionID: optIntIn(&b.parent),
		PaymentSessionID:       &b.id,
		PreAuthorization:       &b.preauth,
		ProductName:            productName,
		RecurrentPayment:       &b.recurrent,
		Result:                 CallCompleted,
		SessionState:           optIn(&b.state),
		TargetGoID:             &b.goid,
		TotalPrice:             &b.price,
	}
	if b.sub = strings.TrimPrefix(p.SubState, "_"); b.sub != "" {
		st.SessionSubState = &b.sub
		b.subDesc = subStateDesc(b.sub)
		st.SessionSubStateDesc = optIn(&b.subDesc)
	}
	swift := ""
	if p.Payer != nil && p.Payer.BankAccount != nil {
		swift = p.Payer.BankAccount.BIC
	}
	if code, ok := legacyCode(p.PaymentInstrument, swift); ok {
		b.channel = code
		st.PaymentChannel = &b.channel
	}
	ps := [4]**string{&st.P1, &st.P2, &st.P3, &st.P4}
	for _, ap := range p.AdditionalParams {
		if len(ap.Name) == 2 && ap.Name[0] == 'p' && ap.Name[1] >= '1' && ap.Name[1] <= '4' {
			k := ap.Name[1] - '1'
			b.p[k] = ap.Value
			*ps[k] = &b.p[k]
		}
	}
	return st
}

// optIn is opt without a copy: s itself, or nil when empty.
func optIn(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}

// optIntIn is optInt without a copy.
func optIntIn(n *int64) *int64 {
	if *n == 0 {
		return nil
	}
	return n
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
	var r *refusal
	if errors.As(out, &r) {
		lvl = s.logFor(ctx).Info
	}
	lvl("gateway call failed", zap.String("call", what), zap.Int64("goid", goid), zap.Int64("payment", id), zap.Error(err))
	return out
}
