package operations

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// The legacy browser flows' decisions: where the customer goes (pay-full-v2,
// pay-base-v2, the return from the gateway), what a notification tells the
// e-shop and when it is accepted. The web adapter parses the HTTP requests
// and renders the answers.

// BadParamError: a flow parameter is missing or malformed.
type BadParamError struct{ Name string }

func (e *BadParamError) Error() string { return "parameter " + e.Name + " is missing or malformed" }

// UnknownMerchantError: no e-shop of that goid is configured.
type UnknownMerchantError struct{ GoID int64 }

func (e *UnknownMerchantError) Error() string { return "unknown goid " + strconv.FormatInt(e.GoID, 10) }

// Every flow is a call of the core's pipeline (begin … finish), in the
// stages of the SOAP rows: the adapter decodes, then the verification
// (flowMerchant, flowVerify: the merchant, the signature; for the
// callbacks, the return token), and only then what acts or is learnt (the
// key the shop signs with, the gateway, the outbox). finish tells the
// observer and the usage record the outcome, once per request.

// PayFullRequest is pay-full-v2's sessionInfo, each value as sent.
type PayFullRequest struct{ TargetGoID, PaymentSessionID, EncryptedSignature string }

// CallbackRequest is the query of the gateway's return or notification
// callback (goid, id, token), each value as sent.
type CallbackRequest struct{ GoID, PaymentID, Token string }

// flowMerchant reads the goid of flow parameter name (raw as sent) and
// finds its merchant.
func (c *call) flowMerchant(name, raw string) error {
	goid, err := FlowID(name, raw)
	if err != nil {
		return err
	}
	c.goid = &goid
	m, ok := c.s.merchant(c.ctx, goid)
	if !ok {
		return &UnknownMerchantError{GoID: goid}
	}
	c.m, c.known = m, true
	return nil
}

// flowVerify is a flow's verification stage: the signature sig of the
// request part (its legacy name) by the call's merchant, over one of
// signed, checked as the SOAP rows' is (authenticate). ErrBadSignature when
// it does not verify.
func (c *call) flowVerify(ctx context.Context, part, sig string, signed ...[]string) error {
	rf := c.authenticate(ctx, auth{part: part, goid: c.goid, sig: sig, signed: signed})
	if rf == nil {
		return nil
	}
	c.refused(rf)
	if rf.badSig {
		return ErrBadSignature
	}
	return &RequestError{Msg: rf.desc}
}

// FlowID reads a positive id (goid, payment id) of flow parameter name.
func FlowID(name, raw string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || id <= 0 {
		return 0, &BadParamError{Name: name}
	}
	return id, nil
}

// paymentOf reads payment id of m from the gateway. A payment the gateway
// does not know, or that belongs to another e-shop, is ErrUnknownPayment;
// other failures ErrGatewayDown (the cause is logged).
func (s *Service) paymentOf(ctx context.Context, m Merchant, id int64) (*restbackend.Payment, error) {
	p, err := s.gw.PaymentStatus(ctx, m.Credentials(), id)
	if err != nil {
		var ae *restbackend.APIError
		if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusForbidden) {
			return nil, ErrUnknownPayment
		}
		s.logFor(ctx).Warn("payment status failed", zap.Int64("goid", m.GoID), zap.Int64("payment", id), zap.Error(err))
		return nil, ErrGatewayDown
	}
	if p.Target != nil && p.Target.GoID != 0 && p.Target.GoID != m.GoID {
		return nil, ErrUnknownPayment
	}
	return p, nil
}

// PayFull is pay-full-v2: the gateway page of the payment req names,
// signed as paymentSession. Errors: *BadParamError, *UnknownMerchantError,
// ErrBadSignature, ErrUnknownPayment, ErrGatewayDown.
func (s *Service) PayFull(ctx context.Context, req PayFullRequest) (string, error) {
	c := s.begin(ctx, usage.FlowPayFull)
	loc, err := c.payFull(ctx, req)
	c.finish(flowResult(err), nil)
	return loc, err
}

func (c *call) payFull(ctx context.Context, req PayFullRequest) (string, error) {
	if err := c.flowMerchant("sessionInfo.targetGoId", req.TargetGoID); err != nil {
		return "", err
	}
	id, err := FlowID("sessionInfo.paymentSessionId", req.PaymentSessionID)
	if err != nil {
		return "", err
	}
	c.payment = &id
	if err := c.flowVerify(ctx, "sessionInfo", req.EncryptedSignature, PaymentSessionFields(FormatInt(c.m.GoID), FormatInt(id))); err != nil {
		return "", err
	}
	p, err := c.s.paymentOf(ctx, c.m, id)
	if err != nil {
		return "", err
	}
	return c.s.gatewayPage(ctx, p.ID, p.GwURL)
}

func (s *Service) gatewayPage(ctx context.Context, id int64, gwURL string) (string, error) {
	if gwURL == "" {
		s.logFor(ctx).Warn("gateway gave no gw_url", zap.Int64("payment", id))
		return "", ErrGatewayDown
	}
	return gwURL, nil
}

// PayBase is pay-base-v2: it creates the payment of the form's command c
// (whose goid parameter is rawGoID, as sent) as createPayment would and
// returns its gateway page. It is one call, recorded as the flow (never
// also as a createPayment). A goid that names no merchant is a
// *BadParamError or *UnknownMerchantError, a malformed command a
// *RequestError, a forged one ErrBadSignature, a refused one a
// *RefusedError, and a gateway or store failure ErrNotCreated.
func (s *Service) PayBase(ctx context.Context, rawGoID string, cmd *PaymentCommand) (string, error) {
	c := s.begin(ctx, usage.FlowPayBase)
	loc, err := c.payBase(ctx, rawGoID, cmd)
	c.finish(flowResult(err), cmd)
	return loc, err
}

func (c *call) payBase(ctx context.Context, rawGoID string, cmd *PaymentCommand) (string, error) {
	if err := c.flowMerchant("paymentCommand.targetGoId", rawGoID); err != nil {
		return "", err
	}
	if cmd.Invalid != "" {
		return "", &RequestError{Msg: cmd.Invalid}
	}
	// Verified here too (createPayment verifies again) so that a forged
	// form is told apart from a malformed one.
	if err := c.flowVerify(ctx, "paymentCommand", cmd.EncryptedSignature, cmd.signedFields()...); err != nil {
		return "", err
	}
	// Detached from the browser's connection like a SOAP call: a customer
	// who leaves mid-call must not cut the create POST short (its outcome
	// would be unknown) nor the session write after it. The REST client's
	// timeout bounds each gateway call.
	ctx = context.WithoutCancel(ctx)
	st, gwURL, err := c.s.createPayment(ctx, cmd)
	if err != nil {
		// The gateway or the session store failed.
		c.logger().Warn("pay-base-v2: createPayment failed", zap.Int64("goid", c.m.GoID), zap.Error(err))
		return "", ErrNotCreated
	}
	if st.Result != CallCompleted || st.PaymentSessionID == nil {
		desc := strings.TrimSpace(deref(st.ResultDescription))
		if desc == "" {
			desc = "payment not created"
		}
		return "", &RefusedError{Desc: desc}
	}
	return c.s.gatewayPage(ctx, *st.PaymentSessionID, gwURL)
}

// childSession makes the legacy session of a recurring payment the gateway
// charged (a DAY/WEEK/MONTH cycle, or an ON_DEMAND child whose
// createRecurrentPayment reply was lost), which the bridge has not seen
// yet: derived from its parent's, so that returns, notifications,
// paymentStatus and the reconciliation of a lost createRecurrentPayment
// (findChild) treat it like any other payment. It carries the parent's
// token (the gateway copied the parent's callbacks), which the callback's
// token must match before anything is saved (errWrongToken). A parent the
// bridge has no session of (created before the bridge, whose callbacks
// carry no token) gives a child session from the gateway's facts alone.
// store.ErrNotFound when p has no parent, or its parent is another
// merchant's.
func (s *Service) childSession(ctx context.Context, m Merchant, p *restbackend.Payment, token string) (store.Session, error) {
	if p.ParentID == 0 {
		return store.Session{}, store.ErrNotFound
	}
	parent, err := s.store.Session(ctx, p.ParentID)
	switch {
	case errors.Is(err, store.ErrNotFound) && token == "":
		parent = store.Session{PaymentID: p.ParentID, GoID: m.GoID}
	case err != nil:
		return store.Session{}, err
	}
	if parent.GoID != m.GoID {
		return store.Session{}, store.ErrNotFound
	}
	if !tokenAccepts(parent.TokenHash, token) {
		s.logFor(ctx).Warn("callback refused: wrong or missing return token of a recurring child", zap.Int64("goid", m.GoID),
			zap.Int64("payment", p.ID), zap.Int64("parent", p.ParentID), zap.Bool("token_given", token != ""))
		return store.Session{}, errWrongToken
	}
	child := store.Session{
		PaymentID:   p.ID,
		ParentID:    p.ParentID,
		GoID:        m.GoID,
		ProductName: parent.ProductName,
		OrderNumber: p.OrderNumber,
		Amount:      p.Amount,
		Currency:    p.Currency,
		SuccessURL:  parent.SuccessURL,
		FailedURL:   parent.FailedURL,
		CreatedAt:   s.now(),
		TokenHash:   parent.TokenHash,
		// The gateway charged it on the parent's request: the parent's key.
		KeyID: parent.KeyID,
		// The child is paid by the parent's card: the shop's channel
		// codes still name it.
		PaymentChannels: parent.PaymentChannels,
	}
	if child.OrderNumber == "" {
		child.OrderNumber = parent.OrderNumber
	}
	if child.Currency == "" {
		child.Currency = parent.Currency
	}
	if err := s.store.SaveSession(ctx, child); err != nil {
		return store.Session{}, err
	}
	s.logFor(ctx).Info("recurring child payment recorded", zap.Int64("goid", m.GoID),
		zap.Int64("payment", p.ID), zap.Int64("parent", p.ParentID))
	return child, nil
}

// flowIdentity is what the return redirect and the notification tell the
// e-shop (the paymentIdentity message).
type flowIdentity struct {
	GoID, PaymentID, ParentID int64
	OrderNumber               string
}

// flowIdentityOf takes the identity from the payment and, where the payment
// lacks them, its session (sess may be zero).
func flowIdentityOf(m Merchant, p *restbackend.Payment, sess store.Session) flowIdentity {
	id := flowIdentity{GoID: m.GoID, PaymentID: p.ID, ParentID: p.ParentID, OrderNumber: sess.OrderNumber}
	if id.ParentID == 0 {
		id.ParentID = sess.ParentID
	}
	if id.OrderNumber == "" {
		id.OrderNumber = p.OrderNumber
	}
	return id
}

// IdentityQuery is the query of the legacy return and notification: the
// five parameters in the legacy order, signed as paymentIdentity.
func IdentityQuery(secureKey string, goid, paymentID, parentID int64, orderNumber string) (string, error) {
	sig, err := signIdentity(secureKey, goid, paymentID, parentID, orderNumber)
	if err != nil {
		return "", err
	}
	return identityParams(goid, paymentID, parentID, orderNumber) + "&encryptedSignature=" + sig, nil
}

// identityParams are the first four parameters of IdentityQuery: the
// identity without its signature.
func identityParams(goid, paymentID, parentID int64, orderNumber string) string {
	return "targetGoId=" + FormatInt(goid) +
		"&paymentSessionId=" + FormatInt(paymentID) +
		"&parentPaymentSessionId=" + formatOptInt(optInt(parentID)) +
		"&orderNumber=" + url.QueryEscape(orderNumber)
}

// signIdentity is the paymentIdentity signature of an identity.
func signIdentity(secureKey string, goid, paymentID, parentID int64, orderNumber string) (string, error) {
	return Sign(secureKey, PaymentIdentityFields(FormatInt(goid), FormatInt(paymentID), formatOptInt(optInt(parentID)), orderNumber)...)
}

// AppendQuery adds query to rawURL, keeping the query the URL already has
// and its fragment exactly as written.
func AppendQuery(rawURL, query string) string {
	base, frag, hasFrag := strings.Cut(rawURL, "#")
	switch {
	case !strings.Contains(base, "?"):
		base += "?"
	case strings.HasSuffix(base, "?") || strings.HasSuffix(base, "&"):
	default:
		base += "&"
	}
	base += query
	if hasFrag {
		base += "#" + frag
	}
	return base
}

// identityURL is target with the identity, signed with secureKey.
func identityURL(secureKey, target string, id flowIdentity) (string, error) {
	q, err := IdentityQuery(secureKey, id.GoID, id.PaymentID, id.ParentID, id.OrderNumber)
	if err != nil {
		return "", err
	}
	return AppendQuery(target, q), nil
}

// returnsToSuccess decides which of the e-shop's URLs the customer returns
// to: the success URL when the payment is paid, authorized or waiting for a
// method already chosen to finish (sub-state 101 online, 102 offline
// transfer); the failed URL otherwise (canceled, timed out, declined, or
// still CREATED: the customer left the gateway without choosing).
func returnsToSuccess(p *restbackend.Payment) bool {
	switch p.State {
	case restbackend.StatePaid, restbackend.StateAuthorized,
		restbackend.StateRefunded, restbackend.StatePartiallyRefunded:
		return true
	case restbackend.StatePaymentMethodChosen:
		sub := strings.TrimPrefix(p.SubState, "_")
		return sub == "101" || sub == "102"
	}
	return false
}

// ReturnURL is where the customer returning from the gateway for the
// payment req names, with the callback's token, goes: the e-shop's success or failed
// URL with the signed identity. The status read has its own short timeout
// (Config.ReturnStatusTimeout): a customer facing a slow gateway is better
// told at once that the payment may have gone through (ErrGatewayDown,
// which the web adapter shows as a page with a reload link) than kept
// waiting. Errors: ErrUnknownPayment (also for a wrong or missing token),
// ErrGatewayDown, ErrStoreDown, ErrNoReturnURL, *BadParamError,
// *UnknownMerchantError, or an internal one.
func (s *Service) ReturnURL(ctx context.Context, req CallbackRequest) (string, error) {
	c := s.begin(ctx, usage.FlowReturn)
	loc, err := c.returnURL(ctx, req)
	c.finish(flowResult(err), nil)
	return loc, err
}

// callback is the verification stage of the gateway's callbacks: the
// merchant and payment req names, then the payment's return token
// (callbackPayment). statusCtx bounds the status read.
func (c *call) callback(ctx, statusCtx context.Context, req CallbackRequest) (*callback, error) {
	if err := c.flowMerchant("goid", req.GoID); err != nil {
		return nil, err
	}
	id, err := FlowID("id", req.PaymentID)
	if err != nil {
		return nil, err
	}
	c.payment = &id
	cb, err := c.s.callbackPayment(ctx, statusCtx, c.m, id, req.Token)
	if err != nil {
		return nil, err
	}
	c.verified = true
	return cb, nil
}

func (c *call) returnURL(ctx context.Context, req CallbackRequest) (string, error) {
	s := c.s
	statusCtx, cancel := context.WithTimeout(ctx, s.returnStatusTimeout)
	defer cancel()
	cb, err := c.callback(ctx, statusCtx, req)
	if err != nil {
		return "", err
	}
	m, id := c.m, *c.payment
	p, sess := cb.p, cb.sess
	target := sess.FailedURL
	if returnsToSuccess(p) {
		target = sess.SuccessURL
	}
	if target == "" {
		return "", ErrNoReturnURL
	}
	loc, err := identityURL(s.paymentKey(ctx, m, sess), target, flowIdentityOf(m, p, sess))
	if err != nil {
		return "", err
	}
	s.logFor(ctx).Info("customer returned", zap.Int64("goid", m.GoID), zap.Int64("payment", id),
		zap.String("state", p.State), zap.Bool("success", target == sess.SuccessURL))
	return loc, nil
}

// notificationKey identifies one change of a payment, so that the gateway's
// repeats of one notification collapse into one delivery while every real
// change reaches the e-shop:
//
//   - the payment's identity is its id and its session's token hash (or, for a
//     session from before tokens, its creation time): an id the gateway
//     hands out again (a sandbox restarted on a kept database) belongs to
//     a new session and never collides with the old payment's keys;
//   - the change is state and sub-state, and for a refunded payment the
//     refund history's count and sum: a second partial refund leaves the
//     state PARTIALLY_REFUNDED but adds a refund.
//
// refunds is "" for a payment that is not refunded.
func notificationKey(goid int64, p *restbackend.Payment, sess store.Session, tokenHash, refunds string) string {
	identity := "-"
	switch {
	case tokenHash != "":
		identity = "t" + tokenDigest(tokenHash)
	case !sess.CreatedAt.IsZero():
		identity = "c" + strconv.FormatInt(sess.CreatedAt.UnixMicro(), 10)
	}
	key := FormatInt(goid) + ":" + FormatInt(p.ID) + ":" + identity + ":" + p.State + ":" + p.SubState
	if refunds != "" {
		key += ":refunds=" + refunds
	}
	return key
}

// refundMark is the refund history of a refunded payment p as "count/sum"
// for its notification key; "" when p is not refunded. A gateway that does
// not offer the history (refused, 4xx) gives "?": the key then falls back to
// the state alone. Other failures are ErrGatewayDown, so the gateway
// repeats the notification rather than one being lost.
func (s *Service) refundMark(ctx context.Context, m Merchant, p *restbackend.Payment) (string, error) {
	if p.State != restbackend.StateRefunded && p.State != restbackend.StatePartiallyRefunded {
		return "", nil
	}
	refunds, err := s.gw.RefundHistory(ctx, m.Credentials(), p.ID)
	if err != nil {
		var ae *restbackend.APIError
		if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 {
			s.logFor(ctx).Warn("notification: refund history refused; key by state only", zap.Int64("payment", p.ID), zap.Error(err))
			return "?", nil
		}
		s.logFor(ctx).Warn("notification: refund history failed", zap.Int64("payment", p.ID), zap.Error(err))
		return "", ErrGatewayDown
	}
	var sum int64
	for _, r := range refunds {
		sum += r.Amount
	}
	return strconv.Itoa(len(refunds)) + "/" + strconv.FormatInt(sum, 10), nil
}

// AcceptNotification takes the gateway's notification of the payment req
// names, with the callback's token: the notification for the e-shop is stored in
// the outbox before it returns nil, so the gateway may be told OK. Errors:
// ErrUnknownPayment (also for a wrong or missing token), ErrGatewayDown and
// ErrStoreDown (the gateway should repeat the call), *BadParamError,
// *UnknownMerchantError, or an internal one.
func (s *Service) AcceptNotification(ctx context.Context, req CallbackRequest) error {
	c := s.begin(ctx, usage.FlowNotification)
	err := c.acceptNotification(ctx, req)
	c.finish(flowResult(err), nil)
	return err
}

func (c *call) acceptNotification(ctx context.Context, req CallbackRequest) error {
	s := c.s
	cb, err := c.callback(ctx, ctx, req)
	if err != nil {
		return err
	}
	m, id := c.m, *c.payment
	p, sess := cb.p, cb.sess
	if m.NotificationURL == "" {
		s.logFor(ctx).Info("notification not forwarded: e-shop has no notification URL",
			zap.Int64("goid", m.GoID), zap.Int64("payment", id), zap.String("state", p.State))
		return nil
	}
	refunds, err := s.refundMark(ctx, m, p)
	if err != nil {
		return err
	}
	// Signed when it is sent (signNotification): the payment's key may
	// leave its overlap while the notification waits.
	who := flowIdentityOf(m, p, sess)
	target := AppendQuery(m.NotificationURL, identityParams(who.GoID, who.PaymentID, who.ParentID, who.OrderNumber))
	key := notificationKey(m.GoID, p, sess, cb.tokenHash, refunds)
	added, err := s.out.Enqueue(ctx, store.Notification{GoID: m.GoID, PaymentID: p.ID, Key: key, URL: target, Unsigned: true})
	if err != nil {
		s.logFor(ctx).Error("notification: enqueue failed", zap.String("key", key), zap.Error(err))
		return ErrStoreDown
	}
	s.logFor(ctx).Info("notification accepted", zap.String("key", key), zap.Bool("new", added))
	return nil
}

// RunOutbox delivers notifications until ctx ends.
func (s *Service) RunOutbox(ctx context.Context) { s.out.Run(ctx) }

// OutboxCounts reports the outbox by state.
func (s *Service) OutboxCounts(ctx context.Context) (store.OutboxCounts, error) {
	return s.out.Counts(ctx)
}

// signNotification is the URL of a notification queued unsigned, signed
// now with the payment's key (paymentKey). Its identity is the last of
// each parameter identityParams appended.
func (s *Service) signNotification(ctx context.Context, n store.Notification) (string, error) {
	m, ok := s.merchant(ctx, n.GoID)
	if !ok {
		return "", fmt.Errorf("merchant %d is no longer configured: the notification cannot be signed", n.GoID)
	}
	u, err := url.Parse(n.URL)
	if err != nil {
		return "", fmt.Errorf("notification URL: %w", err)
	}
	last := func(vs []string) string {
		if len(vs) == 0 {
			return ""
		}
		return vs[len(vs)-1]
	}
	q := u.Query()
	var parent int64
	if p := last(q["parentPaymentSessionId"]); p != "" {
		if parent, err = strconv.ParseInt(p, 10, 64); err != nil {
			return "", fmt.Errorf("notification URL: parentPaymentSessionId %q", p)
		}
	}
	sess, err := s.store.Session(ctx, n.PaymentID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// A payment the bridge has no session of (created before it).
	case err != nil:
		return "", fmt.Errorf("session of the payment not readable, so neither the key it was created with: %w", err)
	case sess.GoID != n.GoID:
		sess = store.Session{}
	}
	sig, err := signIdentity(s.paymentKey(ctx, m, sess), n.GoID, n.PaymentID, parent, last(q["orderNumber"]))
	if err != nil {
		return "", err
	}
	return n.URL + "&encryptedSignature=" + sig, nil
}
