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
	"github.com/legacybridge/soapbridge/soapenc"
	"github.com/legacybridge/soapbridge/store"
)

// paymentCommand is an EPaymentCommand as sent.
type paymentCommand struct {
	GoID                  *int64
	Currency              string
	Customer              *restbackend.Contact
	DefaultPaymentChannel string
	Signature             string
	FailedURL             string
	Lang                  string
	OrderNumber           string
	P                     [4]string
	PaymentChannels       string
	PreAuthorization      *bool
	ProductName           string
	RecurrenceCycle       string
	RecurrenceDateTo      string
	RecurrencePeriod      *int64
	RecurrentPayment      *bool
	SuccessURL            string
	TotalPrice            *int64
}

func readPaymentCommand(call *soapenc.Call) (*paymentCommand, *refusal) {
	f := readPart(call, "paymentCommand")
	if f.err != nil {
		return &paymentCommand{}, f.err
	}
	c := &paymentCommand{
		GoID:                  f.long("targetGoId"),
		Currency:              f.str("currency"),
		DefaultPaymentChannel: f.str("defaultPaymentChannel"),
		Signature:             f.str("encryptedSignature"),
		FailedURL:             f.str("failedURL"),
		Lang:                  f.str("lang"),
		OrderNumber:           f.str("orderNumber"),
		PaymentChannels:       f.str("paymentChannels"),
		PreAuthorization:      f.boolean("preAuthorization"),
		ProductName:           f.str("productName"),
		RecurrenceCycle:       f.str("recurrenceCycle"),
		RecurrenceDateTo:      f.str("recurrenceDateTo"),
		RecurrencePeriod:      f.long("recurrencePeriod"),
		RecurrentPayment:      f.boolean("recurrentPayment"),
		SuccessURL:            f.str("successURL"),
		TotalPrice:            f.long("totalPrice"),
	}
	for i := range c.P {
		c.P[i] = f.str("p" + strconv.Itoa(i+1))
	}
	f.long("partnerGoId") // read only to reject a malformed one; not mapped
	if cd := f.v.Field("customerData"); !cd.IsAbsent() {
		s := func(n string) string { v, _ := cd.Field(n).String(); return strings.TrimSpace(v) }
		ct := restbackend.Contact{
			FirstName: s("firstName"), LastName: s("lastName"), Email: s("email"),
			PhoneNumber: s("phoneNumber"), City: s("city"), Street: s("street"),
			PostalCode: s("postalCode"), CountryCode: s("countryCode"),
		}
		if ct != (restbackend.Contact{}) {
			c.Customer = &ct
		}
	}
	return c, f.err
}

// signatureFields are the paymentCommand signature fields as sent.
func (c *paymentCommand) signatureFields() []string {
	return PaymentCommandFields{
		TargetGoID:       FormatOptInt(c.GoID),
		ProductName:      c.ProductName,
		TotalPrice:       FormatOptInt(c.TotalPrice),
		Currency:         c.Currency,
		OrderNumber:      c.OrderNumber,
		FailedURL:        c.FailedURL,
		SuccessURL:       c.SuccessURL,
		PreAuthorization: FormatBool(c.PreAuthorization),
		RecurrentPayment: FormatBool(c.RecurrentPayment),
		RecurrenceDateTo: c.RecurrenceDateTo,
		RecurrenceCycle:  c.RecurrenceCycle,
		RecurrencePeriod: FormatOptInt(c.RecurrencePeriod),
		PaymentChannels:  c.PaymentChannels,
	}.Fields()
}

// paymentRequest maps a verified command onto the REST create request; the
// callbacks point at the bridge, which relays them to the e-shop.
func (s *Service) paymentRequest(c *paymentCommand, goid int64) (*restbackend.PaymentRequest, *refusal) {
	switch {
	case c.TotalPrice == nil || *c.TotalPrice <= 0:
		return nil, refuse("paymentCommand.totalPrice must be a positive amount in minor units")
	case Trim(c.Currency) == "":
		return nil, refuse("missing paymentCommand.currency")
	case Trim(c.OrderNumber) == "":
		return nil, refuse("missing paymentCommand.orderNumber")
	case Trim(c.ProductName) == "":
		return nil, refuse("missing paymentCommand.productName")
	}
	for _, u := range []struct{ name, v string }{{"successURL", c.SuccessURL}, {"failedURL", c.FailedURL}} {
		if !absoluteURL(Trim(u.v)) {
			return nil, refuse("paymentCommand.%s must be an absolute http(s) URL", u.name)
		}
	}
	payer, err := allowedMethods(c.PaymentChannels, c.DefaultPaymentChannel)
	if err != nil {
		return nil, &refusal{desc: err.Error()}
	}
	payer.Contact = c.Customer
	if payer.AllowedPaymentInstruments == nil && payer.DefaultPaymentInstrument == "" && payer.Contact == nil {
		payer = nil
	}
	product := Trim(c.ProductName)
	req := &restbackend.PaymentRequest{
		Payer:            payer,
		Target:           restbackend.Target{Type: "ACCOUNT", GoID: goid},
		Items:            []restbackend.Item{{Type: "ITEM", Name: product, Amount: *c.TotalPrice, Count: 1}},
		Amount:           *c.TotalPrice,
		Currency:         strings.ToUpper(Trim(c.Currency)),
		OrderNumber:      Trim(c.OrderNumber),
		OrderDescription: product,
		Lang:             strings.ToUpper(Trim(c.Lang)),
		Callback:         s.callbacks(goid),
		Preauthorization: c.PreAuthorization != nil && *c.PreAuthorization,
	}
	for i, p := range c.P {
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

func recurrence(c *paymentCommand) (*restbackend.Recurrence, *refusal) {
	rec := &restbackend.Recurrence{RecurrenceCycle: strings.ToUpper(Trim(c.RecurrenceCycle))}
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
	if d := Trim(c.RecurrenceDateTo); d != "" {
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

// callbacks are the bridge's own endpoints given to the gateway.
func (s *Service) callbacks(goid int64) *restbackend.Callback {
	g := strconv.FormatInt(goid, 10)
	return &restbackend.Callback{
		ReturnURL:       s.publicURL + "/callback/return?goid=" + g,
		NotificationURL: s.publicURL + "/callback/notify?goid=" + g,
	}
}

func (s *Service) createPayment(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error) {
	const ret = "createPaymentReturn"
	c, r := readPaymentCommand(call)
	ref := sessionRef{GoID: c.GoID}
	fail := func(r *refusal) (*soapenc.Value, error) {
		s.refused(ctx, call, ref, r)
		st := s.failedStatus(ref, r.desc)
		return st.Value(ret, false), nil
	}
	if r != nil {
		s.merchantOf(&ref)
		return fail(r)
	}
	if r := s.merchantOf(&ref); r != nil {
		return fail(r)
	}
	if !Verify(ref.M.SecureKey, c.Signature, c.signatureFields()...) {
		return fail(badSignature("paymentCommand"))
	}
	m := ref.M
	req, r := s.paymentRequest(c, m.GoID)
	if r != nil {
		return fail(r)
	}
	p, err := s.gw.CreatePayment(ctx, m.Credentials(), req)
	if err != nil {
		err = s.gatewayFailed(ctx, "create payment", m.GoID, 0, err)
		if errors.As(err, &r) {
			return fail(r)
		}
		return nil, err
	}
	// The session must be durable before the e-shop learns the payment:
	// status replies and the return redirect depend on it. If it cannot be
	// written the payment stays unpaid and lapses; failing is safe.
	sess := store.Session{
		PaymentID: p.ID, GoID: m.GoID, ProductName: c.ProductName, OrderNumber: p.OrderNumber,
		Amount: p.Amount, Currency: p.Currency, SuccessURL: Trim(c.SuccessURL), FailedURL: Trim(c.FailedURL),
		CreatedAt: s.now(),
	}
	if err := s.store.SaveSession(ctx, sess); err != nil {
		s.logFor(ctx).Error("session not recorded; the created payment is abandoned", zap.Int64("goid", m.GoID),
			zap.Int64("payment", p.ID), zap.Error(err))
		return nil, serverFault("session store unavailable")
	}
	s.logFor(ctx).Info("payment created", zap.Int64("goid", m.GoID), zap.Int64("payment", p.ID), zap.String("order", p.OrderNumber))
	st := statusFromPayment(p, m, &c.ProductName)
	if err := st.Sign(m.SecureKey); err != nil {
		return nil, err
	}
	return st.Value(ret, false), nil
}

// recurrenceRequest is an ERecurrenceRequest as sent.
type recurrenceRequest struct {
	Signature   string
	OrderNumber string
	ParentID    *int64
	GoID        *int64
	TotalPrice  *int64
}

func (s *Service) createRecurrentPayment(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error) {
	const ret = "createRecurrentPaymentReturn"
	var ref sessionRef
	fail := func(r *refusal) (*soapenc.Value, error) {
		s.refused(ctx, call, ref, r)
		st := s.failedStatus(ref, r.desc)
		return st.Value(ret, false), nil
	}
	f := readPart(call, "recurrenceRequest")
	if f.err != nil {
		return fail(f.err)
	}
	rr := recurrenceRequest{
		Signature:   f.str("encryptedSignature"),
		OrderNumber: f.str("orderNumber"),
		ParentID:    f.long("parentPaymentSessionId"),
		GoID:        f.long("targetGoId"),
		TotalPrice:  f.long("totalPrice"),
	}
	ref.GoID = rr.GoID
	if f.err != nil {
		s.merchantOf(&ref)
		return fail(f.err)
	}
	if r := s.merchantOf(&ref); r != nil {
		return fail(r)
	}
	f.need("parentPaymentSessionId", rr.ParentID != nil)
	if f.err != nil {
		return fail(f.err)
	}
	if !Verify(ref.M.SecureKey, rr.Signature, RecurrenceRequestFields(FormatOptInt(rr.ParentID), FormatOptInt(rr.GoID),
		rr.OrderNumber, FormatOptInt(rr.TotalPrice))...) {
		return fail(badSignature("recurrenceRequest"))
	}
	switch {
	case rr.TotalPrice == nil || *rr.TotalPrice <= 0:
		return fail(refuse("recurrenceRequest.totalPrice must be a positive amount in minor units"))
	case Trim(rr.OrderNumber) == "":
		return fail(refuse("missing recurrenceRequest.orderNumber"))
	}
	m, parentID := ref.M, *rr.ParentID

	// The child inherits currency and productName from the parent: from the
	// bridge's session, else (a parent not created here) the currency from
	// the gateway's status, and no productName.
	parent, found, err := s.sessionOf(ctx, parentID, 0)
	if err != nil {
		return nil, err
	}
	if !found {
		p, err := s.gw.PaymentStatus(ctx, m.Credentials(), parentID)
		if err != nil {
			err = s.gatewayFailed(ctx, "payment status", m.GoID, parentID, err)
			if r, ok := err.(*refusal); ok {
				return fail(r)
			}
			return nil, err
		}
		parent = store.Session{PaymentID: parentID, GoID: m.GoID, Currency: p.Currency}
	}
	itemName := parent.ProductName
	if Trim(itemName) == "" {
		itemName = "order " + Trim(rr.OrderNumber)
	}
	req := &restbackend.RecurrenceRequest{
		Amount:           *rr.TotalPrice,
		Currency:         parent.Currency,
		OrderNumber:      Trim(rr.OrderNumber),
		OrderDescription: Trim(parent.ProductName),
		Items:            []restbackend.Item{{Type: "ITEM", Name: Trim(itemName), Amount: *rr.TotalPrice, Count: 1}},
	}
	child, err := s.gw.CreateRecurrence(ctx, m.Credentials(), parentID, req)
	if err != nil {
		err = s.gatewayFailed(ctx, "create recurrence", m.GoID, parentID, err)
		if r, ok := err.(*refusal); ok {
			return fail(r)
		}
		return nil, err
	}
	if child.ParentID == 0 {
		child.ParentID = parentID
	}
	// The child may already be charged: unlike createPayment, a failed
	// session write must not turn into a failure the e-shop might retry
	// (and charge twice). Status replies fall back to the parent's session.
	sess := store.Session{
		PaymentID: child.ID, ParentID: parentID, GoID: m.GoID, ProductName: parent.ProductName,
		OrderNumber: child.OrderNumber, Amount: child.Amount, Currency: child.Currency,
		SuccessURL: parent.SuccessURL, FailedURL: parent.FailedURL, CreatedAt: s.now(),
	}
	if err := s.store.SaveSession(ctx, sess); err != nil {
		s.logFor(ctx).Error("session of recurring child not recorded; answering from the parent's", zap.Int64("goid", m.GoID),
			zap.Int64("payment", child.ID), zap.Int64("parent", parentID), zap.Error(err))
	}
	s.logFor(ctx).Info("recurrence created", zap.Int64("goid", m.GoID), zap.Int64("payment", child.ID), zap.Int64("parent", parentID))
	var product *string
	if found {
		product = &parent.ProductName
	}
	st := statusFromPayment(child, m, product)
	if err := st.Sign(m.SecureKey); err != nil {
		return nil, err
	}
	return st.Value(ret, false), nil
}

// createBuyer cannot be served: the REST interface has no buyer accounts.
// No signature scheme is published for its reply, so none is sent.
func (s *Service) createBuyer(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error) {
	f := readPart(call, "buyerCreate")
	email := f.optStr("buyerEmail")
	goid := f.long("eshopGoId")
	desc := "createBuyer is not supported: the payment gateway's REST interface has no buyer accounts"
	s.logFor(ctx).Info("request refused", zap.String("op", "createBuyer"), zap.String("reason", desc))
	return soapenc.NewStruct("createBuyerReturn", typeBuyerResult,
		soapenc.NewString("buyerEmail", email),
		soapenc.NewLong("buyerGoId", nil),
		soapenc.NewString("encryptedSignature", nil),
		soapenc.NewLong("eshopGoId", goid),
		soapenc.NewString("result", ptr(Failed)),
		soapenc.NewString("resultDescription", &desc),
	), nil
}
