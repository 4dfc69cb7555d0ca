package operations

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// contact is the e-shop's customer of c, trimmed, its countryCode in the
// gateway's three-letter form; nil when it gave none. A countryCode that
// names no country is left out and logged (it is optional data).
func (s *Service) contact(ctx context.Context, c *PaymentCommand, goid int64) *restbackend.Contact {
	cd := c.CustomerData
	if cd == nil {
		return nil
	}
	t := strings.TrimSpace
	ct := restbackend.Contact{
		FirstName: t(cd.FirstName), LastName: t(cd.LastName), Email: t(cd.Email),
		PhoneNumber: t(cd.PhoneNumber), City: t(cd.City), Street: t(cd.Street),
		PostalCode: t(cd.PostalCode), CountryCode: t(cd.CountryCode),
	}
	if iso3, known := GatewayCountry(ct.CountryCode); known {
		ct.CountryCode = iso3
	} else {
		s.logFor(ctx).Warn("unknown customerData.countryCode left out", zap.String("countryCode", strings.ToValidUTF8(ct.CountryCode, "?")),
			zap.Int64("goid", goid))
		ct.CountryCode = ""
	}
	if ct == (restbackend.Contact{}) {
		return nil
	}
	return &ct
}

// SignatureFields are the paymentCommand signature fields as sent.
func (c *PaymentCommand) SignatureFields() []string { return c.signatureFields().Fields() }

// verify checks the command's signature over the canonical fields or, for
// the .NET library, over the untrimmed ones; each in UTF-8 or windows-1250.
// digest is what was signed (SignedDigest): the ledger's key.
func (c *PaymentCommand) verify(secureKey string) (digest string, ok bool) {
	f := c.signatureFields()
	return SignedDigest(secureKey, c.EncryptedSignature, f.Fields(), f.Untrimmed())
}

func (c *PaymentCommand) signatureFields() PaymentCommandFields {
	return PaymentCommandFields{
		TargetGoID:       formatOptInt(c.TargetGoID),
		ProductName:      c.ProductName,
		TotalPrice:       formatOptInt(c.TotalPrice),
		Currency:         c.Currency,
		OrderNumber:      c.OrderNumber,
		FailedURL:        c.FailedURL,
		SuccessURL:       c.SuccessURL,
		PreAuthorization: FormatBool(c.PreAuthorization),
		RecurrentPayment: FormatBool(c.RecurrentPayment),
		RecurrenceDateTo: c.RecurrenceDateTo,
		RecurrenceCycle:  c.RecurrenceCycle,
		RecurrencePeriod: formatOptInt(c.RecurrencePeriod),
		PaymentChannels:  c.PaymentChannels,
	}
}

// paymentRequest maps a verified command of merchant m onto the REST create
// request; the callbacks point at the bridge, which relays them to the
// e-shop. What the gateway would refuse but the shop cannot change (a
// channel code the bridge does not know, a language it does not offer) is
// dropped or replaced with a warning, never a failed payment.
func (s *Service) paymentRequest(ctx context.Context, c *PaymentCommand, m Merchant, token string) (*restbackend.PaymentRequest, *refusal) {
	goid := m.GoID
	switch {
	case c.TotalPrice == nil || *c.TotalPrice <= 0:
		return nil, refuse("paymentCommand.totalPrice must be a positive amount in minor units")
	case trim(c.Currency) == "":
		return nil, refuse("missing paymentCommand.currency")
	case trim(c.OrderNumber) == "":
		return nil, refuse("missing paymentCommand.orderNumber")
	case trim(c.ProductName) == "":
		return nil, refuse("missing paymentCommand.productName")
	}
	for _, u := range []struct{ name, v string }{{"successURL", c.SuccessURL}, {"failedURL", c.FailedURL}} {
		if !absoluteURL(trim(u.v)) {
			return nil, refuse("paymentCommand.%s must be an absolute http(s) URL", u.name)
		}
	}
	payer, r := s.channelsOf(ctx, c, m)
	if r != nil {
		return nil, r
	}
	payer.Contact = s.contact(ctx, c, goid)
	lang, known := GatewayLang(c.Lang, m.Lang)
	if !known {
		s.logFor(ctx).Warn("unknown lang replaced by the merchant's default", zap.String("lang", strings.ToValidUTF8(c.Lang, "?")),
			zap.String("default", lang), zap.Int64("goid", goid))
	}
	if payer.AllowedPaymentInstruments == nil && payer.DefaultPaymentInstrument == "" && payer.Contact == nil {
		payer = nil
	}
	product := trim(c.ProductName)
	req := &restbackend.PaymentRequest{
		Payer:            payer,
		Target:           restbackend.Target{Type: "ACCOUNT", GoID: goid},
		Items:            []restbackend.Item{{Type: "ITEM", Name: product, Amount: *c.TotalPrice, Count: 1}},
		Amount:           *c.TotalPrice,
		Currency:         strings.ToUpper(trim(c.Currency)),
		OrderNumber:      trim(c.OrderNumber),
		OrderDescription: product,
		Lang:             lang,
		Callback:         s.callbacks(goid, token),
		Preauthorization: c.PreAuthorization != nil && *c.PreAuthorization,
	}
	for i, p := range []string{c.P1, c.P2, c.P3, c.P4} {
		if p != "" {
			req.AdditionalParams = append(req.AdditionalParams, restbackend.AdditionalParam{Name: "p" + strconv.Itoa(i+1), Value: p})
		}
	}
	if c.RecurrentPayment != nil && *c.RecurrentPayment {
		rec, r := recurrence(c)
		if r != nil {
			return nil, r
		}
		req.Recurrence = rec
	}
	return req, nil
}

func recurrence(c *PaymentCommand) (*restbackend.Recurrence, *refusal) {
	rec := &restbackend.Recurrence{RecurrenceCycle: strings.ToUpper(trim(c.RecurrenceCycle))}
	switch rec.RecurrenceCycle {
	case restbackend.CycleDay, restbackend.CycleWeek, restbackend.CycleMonth, restbackend.CycleOnDemand:
	case "":
		return nil, refuse("recurrentPayment is true but paymentCommand.recurrenceCycle is missing")
	default:
		return nil, refuse("paymentCommand.recurrenceCycle must be DAY, WEEK, MONTH or ON_DEMAND")
	}
	if c.RecurrencePeriod != nil {
		if *c.RecurrencePeriod <= 0 {
			return nil, refuse("paymentCommand.recurrencePeriod must be positive")
		}
		rec.RecurrencePeriod = *c.RecurrencePeriod
	} else if rec.RecurrenceCycle != restbackend.CycleOnDemand {
		return nil, refuse("paymentCommand.recurrencePeriod is required for cycle %s", rec.RecurrenceCycle)
	}
	if d := trim(c.RecurrenceDateTo); d != "" {
		if _, err := time.Parse("2006-01-02", d); err != nil {
			return nil, refuse("paymentCommand.recurrenceDateTo must be a date yyyy-MM-dd")
		}
		rec.RecurrenceDateTo = d
	}
	return rec, nil
}

func absoluteURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// callbacks are the bridge's own endpoints given to the gateway, carrying
// the payment's return token (see callbackSession); the gateway adds &id=P.
func (s *Service) callbacks(goid int64, token string) *restbackend.Callback {
	q := "?goid=" + strconv.FormatInt(goid, 10) + "&" + CallbackTokenParam + "=" + url.QueryEscape(token)
	return &restbackend.Callback{
		ReturnURL:       s.publicURL + "/callback/return" + q,
		NotificationURL: s.publicURL + "/callback/notify" + q,
	}
}

// CreatePayment serves createPayment.
func (s *Service) CreatePayment(ctx context.Context, c *PaymentCommand) (*PaymentStatus, error) {
	st, _, err := s.createPayment(ctx, c)
	return st, err
}

// createPayment creates the payment of c; gwURL is the gateway page of the
// created payment ("" on refusal).
func (s *Service) createPayment(ctx context.Context, c *PaymentCommand) (st *PaymentStatus, gwURL string, err error) {
	const op = "createPayment"
	var created *restbackend.Payment // set when this call created it
	if c == nil {
		c = &PaymentCommand{Invalid: "missing paymentCommand"}
	}
	ref := sessionRef{GoID: c.TargetGoID}
	fail := func(r *refusal) (*PaymentStatus, string, error) {
		s.refused(ctx, op, ref, r)
		return s.failedStatus(ref, r.desc), "", nil
	}
	if c.Invalid != "" {
		s.merchantOf(&ref)
		return fail(&refusal{desc: c.Invalid})
	}
	if r := s.merchantOf(&ref); r != nil {
		return fail(r)
	}
	digest, ok := c.verify(ref.M.SecureKey)
	if !ok {
		return fail(badSignature("paymentCommand"))
	}
	m := ref.M
	token := newReturnToken()
	req, r := s.paymentRequest(ctx, c, m, token)
	if r != nil {
		return fail(r)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	// A payment cannot be looked up by order number: a create whose reply
	// was lost stays in doubt (a repeat answers "outcome unknown") for
	// createDoubtWindow, then a repeat creates a new payment. A repeat of a
	// created one answers the same payment while it is still CREATED; once
	// paid, canceled or timed out, the same signed command (a static
	// base-integration form) creates a new one.
	call := &moneyCall{op: op, m: m, signed: digest, doubtWindow: createDoubtWindow}
	var replaySt *PaymentStatus
	var replayP *restbackend.Payment
	var replayErr error
	call.replayable = func(ctx context.Context, rec store.CallRecord) bool {
		replaySt, replayP, replayErr = s.statusFor(ctx, m, rec.PaymentID)
		// Unreadable: answer the error below rather than create again.
		return replayErr != nil || replayP.State == restbackend.StateCreated
	}
	call.act = func(ctx context.Context) (store.CallRecord, error) {
		p, err := s.gw.CreatePayment(ctx, m.Credentials(), req)
		if err != nil {
			return store.CallRecord{}, err
		}
		// The session must be durable before the e-shop learns the
		// payment: status replies and the return redirect depend on it. If
		// it cannot be written the payment stays unpaid and lapses; failing
		// (not done: a retry creates another) is safe.
		sess := store.Session{
			PaymentID: p.ID, GoID: m.GoID, ProductName: c.ProductName, OrderNumber: p.OrderNumber,
			Amount: p.Amount, Currency: p.Currency, SuccessURL: trim(c.SuccessURL), FailedURL: trim(c.FailedURL),
			CreatedAt: s.now(), ReturnToken: token, PaymentChannels: trim(c.PaymentChannels),
		}
		if err := s.store.SaveSession(ctx, sess); err != nil {
			s.logFor(ctx).Error("session not recorded; the created payment is abandoned", zap.Int64("goid", m.GoID),
				zap.Int64("payment", p.ID), zap.Error(err))
			return store.CallRecord{}, serverError("session store unavailable")
		}
		s.logFor(ctx).Info("payment created", zap.Int64("goid", m.GoID), zap.Int64("payment", p.ID), zap.String("order", p.OrderNumber))
		created = p
		return store.CallRecord{PaymentID: p.ID, Result: CallCompleted, Reply: p.GwURL}, nil
	}
	rec, err := s.once(ctx, call)
	if err != nil {
		if errors.As(err, &r) {
			return fail(r)
		}
		return nil, "", err
	}
	p := created
	if p == nil { // a repeat answered from the ledger: the payment as it is now
		st, p, err := replaySt, replayP, replayErr
		if st == nil && err == nil {
			st, p, err = s.statusFor(ctx, m, rec.PaymentID)
		}
		if err != nil {
			if errors.As(err, &r) {
				return fail(r)
			}
			return nil, "", err
		}
		gw := p.GwURL
		if gw == "" {
			gw = rec.Reply
		}
		return st, gw, nil
	}
	st = statusFromPayment(p, m, &c.ProductName)
	if err := st.sign(m.SecureKey); err != nil {
		return nil, "", err
	}
	return st, p.GwURL, nil
}

// CreateRecurrentPayment serves createRecurrentPayment.
func (s *Service) CreateRecurrentPayment(ctx context.Context, rr *RecurrenceRequest) (*PaymentStatus, error) {
	const op = "createRecurrentPayment"
	var ref sessionRef
	fail := func(r *refusal) (*PaymentStatus, error) {
		s.refused(ctx, op, ref, r)
		return s.failedStatus(ref, r.desc), nil
	}
	if rr == nil {
		rr = &RecurrenceRequest{Invalid: "missing recurrenceRequest"}
	}
	ref.GoID = rr.TargetGoID
	if rr.Invalid != "" {
		s.merchantOf(&ref)
		return fail(&refusal{desc: rr.Invalid})
	}
	if r := s.merchantOf(&ref); r != nil {
		return fail(r)
	}
	if rr.ParentPaymentSessionID == nil {
		return fail(refuse("missing recurrenceRequest.parentPaymentSessionId"))
	}
	digest, ok := SignedDigest(ref.M.SecureKey, rr.EncryptedSignature, RecurrenceRequestFields(formatOptInt(rr.ParentPaymentSessionID),
		formatOptInt(rr.TargetGoID), rr.OrderNumber, formatOptInt(rr.TotalPrice)))
	if !ok {
		return fail(badSignature("recurrenceRequest"))
	}
	switch {
	case rr.TotalPrice == nil || *rr.TotalPrice <= 0:
		return fail(refuse("recurrenceRequest.totalPrice must be a positive amount in minor units"))
	case trim(rr.OrderNumber) == "":
		return fail(refuse("missing recurrenceRequest.orderNumber"))
	}
	m, parentID := ref.M, *rr.ParentPaymentSessionID
	ctx, cancel := s.bound(ctx)
	defer cancel()
	// The gateway lists no children of a parent, so a child whose reply was
	// lost cannot be found: the call stays in doubt and a repeat answers
	// "outcome unknown" instead of charging again.
	var child *restbackend.Payment
	var found bool
	var parent store.Session
	call := &moneyCall{op: op, m: m, id: parentID, signed: digest}
	call.act = func(ctx context.Context) (store.CallRecord, error) {
		// The child inherits currency and productName from the parent: from
		// the bridge's session, else (a parent not created here) the
		// currency from the gateway's status, and no productName.
		var err error
		parent, found, err = s.sessionOf(ctx, parentID, 0)
		if err != nil {
			return store.CallRecord{}, err
		}
		if !found {
			p, err := s.gw.PaymentStatus(ctx, m.Credentials(), parentID)
			if err != nil {
				return store.CallRecord{}, err
			}
			parent = store.Session{PaymentID: parentID, GoID: m.GoID, Currency: p.Currency}
		}
		itemName := parent.ProductName
		if trim(itemName) == "" {
			itemName = "order " + trim(rr.OrderNumber)
		}
		req := &restbackend.RecurrenceRequest{
			Amount:           *rr.TotalPrice,
			Currency:         parent.Currency,
			OrderNumber:      trim(rr.OrderNumber),
			OrderDescription: trim(parent.ProductName),
			Items:            []restbackend.Item{{Type: "ITEM", Name: trim(itemName), Amount: *rr.TotalPrice, Count: 1}},
		}
		c, err := s.gw.CreateRecurrence(ctx, m.Credentials(), parentID, req)
		if err != nil {
			return store.CallRecord{}, err
		}
		if c.ParentID == 0 {
			c.ParentID = parentID
		}
		// The child may already be charged: unlike createPayment, a failed
		// session write must not turn into a failure the e-shop might retry
		// (and charge twice). Status replies fall back to the parent's session.
		sess := store.Session{
			PaymentID: c.ID, ParentID: parentID, GoID: m.GoID, ProductName: parent.ProductName,
			OrderNumber: c.OrderNumber, Amount: c.Amount, Currency: c.Currency,
			SuccessURL: parent.SuccessURL, FailedURL: parent.FailedURL, CreatedAt: s.now(),
		}
		if err := s.store.SaveSession(ctx, sess); err != nil {
			s.logFor(ctx).Error("session of recurring child not recorded; answering from the parent's", zap.Int64("goid", m.GoID),
				zap.Int64("payment", c.ID), zap.Int64("parent", parentID), zap.Error(err))
		}
		s.logFor(ctx).Info("recurrence created", zap.Int64("goid", m.GoID), zap.Int64("payment", c.ID), zap.Int64("parent", parentID))
		child = c
		return store.CallRecord{PaymentID: c.ID, Result: CallCompleted}, nil
	}
	rec, err := s.once(ctx, call)
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return fail(r)
		}
		return nil, err
	}
	if child == nil { // a repeat answered from the ledger: the child as it is now
		st, _, err := s.statusFor(ctx, m, rec.PaymentID)
		if err != nil {
			var r *refusal
			if errors.As(err, &r) {
				return fail(r)
			}
			return nil, err
		}
		return st, nil
	}
	var product *string
	if found {
		product = &parent.ProductName
	}
	st := statusFromPayment(child, m, product)
	if err := st.sign(m.SecureKey); err != nil {
		return nil, err
	}
	return st, nil
}

// CreateBuyer cannot be served: the REST interface has no buyer accounts.
// The request's signature is still checked with the Java 2.4 library's
// scheme (the only one published) so that the e-shop learns of a wrong key.
// No scheme is published for the reply, so it is sent unsigned.
func (s *Service) CreateBuyer(ctx context.Context, in *BuyerCreate) (*BuyerCreateResult, error) {
	if in == nil {
		in = &BuyerCreate{Invalid: "missing buyerCreate"}
	}
	desc := "createBuyer is not supported: the payment gateway's REST interface has no buyer accounts"
	ref := sessionRef{GoID: in.EshopGoID}
	switch {
	case in.Invalid != "":
		desc = in.Invalid
	case s.merchantOf(&ref) != nil:
		desc = s.merchantOf(&ref).desc
	case !Verify(ref.M.SecureKey, in.EncryptedSignature, CreateBuyerFields(formatOptInt(in.EshopGoID), in.BuyerUsername, deref(in.BuyerEmail))...):
		desc = "invalid encryptedSignature of buyerCreate: it does not verify with the e-shop's secure key (eshopGoId|buyerUsername|buyerEmail); " + desc
	}
	s.logFor(ctx).Info("request refused", zap.String("op", "createBuyer"), zap.String("reason", strings.ToValidUTF8(desc, "?")))
	return &BuyerCreateResult{BuyerEmail: in.BuyerEmail, EshopGoID: in.EshopGoID, Result: Failed, ResultDescription: &desc}, nil
}

// validUTF8 makes values safe to log.
func validUTF8(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.ToValidUTF8(v, "?")
	}
	return out
}
