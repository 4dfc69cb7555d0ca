package operations

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
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
func (c *PaymentCommand) SignatureFields() []string {
	return signedValues("EPaymentCommand", reflect.ValueOf(c).Elem(), true)
}

// signedFields are the field lists a command's signature may cover: the
// canonical ones or, for the .NET library, the untrimmed ones.
func (c *PaymentCommand) signedFields() [][]string {
	v := reflect.ValueOf(c).Elem()
	return [][]string{signedValues("EPaymentCommand", v, true), signedValues("EPaymentCommand", v, false)}
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
		if !restbackend.IsHTTPURL(trim(u.v)) {
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
	ps := [...]string{c.P1, c.P2, c.P3, c.P4}
	n := 0
	for _, p := range ps {
		if p != "" {
			n++
		}
	}
	if n > 0 {
		req.AdditionalParams = make([]restbackend.AdditionalParam, 0, n)
		for i, p := range ps {
			if p != "" {
				req.AdditionalParams = append(req.AdditionalParams, restbackend.AdditionalParam{Name: paramNames[i], Value: p})
			}
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

// paramNames name the additional parameters p1..p4 in the REST call.
var paramNames = [...]string{"p1", "p2", "p3", "p4"}

// callbacks are the bridge's own endpoints given to the gateway, carrying
// the payment's return token (see callbackSession); the gateway adds &id=P.
func (s *Service) callbacks(goid int64, token string) *restbackend.Callback {
	q := "?goid=" + strconv.FormatInt(goid, 10) + "&" + CallbackTokenParam + "=" + url.QueryEscape(token)
	return &restbackend.Callback{
		ReturnURL:       s.publicURL + "/callback/return" + q,
		NotificationURL: s.publicURL + "/callback/notify" + q,
	}
}

// createPaymentRow: createPayment, also the core of pay-base-v2.
var createPaymentRow = &row[PaymentCommand, *PaymentStatus]{
	name: "createPayment",
	auth: func(in *PaymentCommand) auth {
		const part = "paymentCommand"
		if in == nil {
			return auth{part: part, invalid: "missing " + part}
		}
		return auth{part: part, invalid: in.Invalid, goid: in.TargetGoID, sig: in.EncryptedSignature,
			signed: in.signedFields()}
	},
	money: func(ctx context.Context, c *call, in *PaymentCommand) (*money, *refusal) {
		return c.s.createPolicy(ctx, c, in)
	},
	reply: func(ctx context.Context, c *call, in *PaymentCommand) (*PaymentStatus, error) {
		if c.fresh != nil {
			return statusFromPayment(c.fresh, &c.m, &in.ProductName), nil
		}
		return c.replayStatus(ctx)
	},
	fail: failStatus[PaymentCommand],
	sign: signStatus,
}

// createPolicy is the ledger policy of createPayment. A payment cannot be
// looked up by order number: a create whose reply was lost stays in doubt
// (a repeat answers "outcome unknown") for createDoubtWindow, then a repeat
// creates a new payment. A repeat of a created one answers the same payment
// while it is still CREATED; once paid, canceled or timed out, the same
// signed command (a static base-integration form) creates a new one.
func (s *Service) createPolicy(ctx context.Context, c *call, in *PaymentCommand) (*money, *refusal) {
	m := c.m
	token := newReturnToken()
	req, r := s.paymentRequest(ctx, in, m, token)
	if r != nil {
		return nil, r
	}
	return &money{
		doubtWindow: createDoubtWindow,
		replayable: func(ctx context.Context, rec store.CallRecord) bool {
			c.readReplay(ctx, rec)
			// Unreadable: answer the error rather than create again.
			return c.replay.err != nil || c.replay.p.State == restbackend.StateCreated
		},
		act: func(ctx context.Context) (store.CallRecord, error) {
			p, err := s.gw.CreatePayment(ctx, m.Credentials(), req)
			if err != nil {
				return store.CallRecord{}, err
			}
			// The session must be durable before the e-shop learns the
			// payment: status replies and the return redirect depend on it.
			// If it cannot be written the payment stays unpaid and lapses;
			// failing (not done: a retry creates another) is safe.
			sess := store.Session{
				PaymentID: p.ID, GoID: m.GoID, ProductName: in.ProductName, OrderNumber: p.OrderNumber,
				Amount: p.Amount, Currency: p.Currency, SuccessURL: trim(in.SuccessURL), FailedURL: trim(in.FailedURL),
				CreatedAt: s.now(), TokenHash: store.HashReturnToken(token), PaymentChannels: trim(in.PaymentChannels),
				// Its returns and notifications are signed with the key
				// the shop created it with (paymentKey).
				KeyID: keyID(c.v.key),
			}
			if err := s.store.SaveSession(ctx, sess); err != nil {
				c.logger().Error("session not recorded; the created payment is abandoned", zap.Int64("goid", m.GoID),
					zap.Int64("payment", p.ID), zap.Error(err))
				return store.CallRecord{}, serverError("session store unavailable")
			}
			c.logger().Info("payment created", zap.Int64("goid", m.GoID), zap.Int64("payment", p.ID), zap.String("order", p.OrderNumber))
			c.fresh = p
			return store.CallRecord{PaymentID: p.ID, Result: CallCompleted, Reply: p.GwURL}, nil
		},
	}, nil
}

// readReplay reads the status of the payment a ledger record names, for a
// repeat answered from the ledger.
func (c *call) readReplay(ctx context.Context, rec store.CallRecord) {
	st, p, err := c.s.statusFor(ctx, &c.m, rec.PaymentID)
	c.replay = &replay{st: st, p: p, err: err}
}

// replayStatus is the reply to a repeat answered from the ledger: the
// payment of the record as it is now.
func (c *call) replayStatus(ctx context.Context) (*PaymentStatus, error) {
	if c.replay == nil {
		c.readReplay(ctx, c.rec)
	}
	return c.replay.st, c.replay.err
}

// createPayment runs createPayment's row for pay-base-v2, inside the
// flow's call: the status and the gateway page of the created payment (""
// when refused). The row's call is not finished (neither observed nor
// recorded): the flow is, once.
func (s *Service) createPayment(ctx context.Context, in *PaymentCommand) (*PaymentStatus, string, error) {
	ctx, cancel := s.Bound(ctx)
	defer cancel()
	c := s.begin(ctx, createPaymentRow.name)
	st, _, err := createPaymentRow.run(ctx, c, in)
	if err != nil || st.Result != CallCompleted {
		return st, "", err
	}
	gw := c.rec.Reply
	switch {
	case c.fresh != nil:
		gw = c.fresh.GwURL
	case c.replay != nil && c.replay.p != nil && c.replay.p.GwURL != "":
		gw = c.replay.p.GwURL
	}
	return st, gw, nil
}

// createRecurrentPaymentRow: a child payment of a recurring parent,
// charged at once (ON_DEMAND).
var createRecurrentPaymentRow = &row[RecurrenceRequest, *PaymentStatus]{
	name: "createRecurrentPayment",
	auth: func(in *RecurrenceRequest) auth {
		const part = "recurrenceRequest"
		if in == nil {
			return auth{part: part, invalid: "missing " + part}
		}
		return auth{part: part, invalid: in.Invalid, goid: in.TargetGoID,
			need: []need{{part + ".parentPaymentSessionId", in.ParentPaymentSessionID != nil}},
			sig:  in.EncryptedSignature,
			signed: [][]string{RecurrenceRequestFields(formatOptInt(in.ParentPaymentSessionID),
				formatOptInt(in.TargetGoID), in.OrderNumber, formatOptInt(in.TotalPrice))},
		}
	},
	check: func(_ *call, in *RecurrenceRequest) *refusal {
		switch {
		case in.TotalPrice == nil || *in.TotalPrice <= 0:
			return refuse("recurrenceRequest.totalPrice must be a positive amount in minor units")
		case trim(in.OrderNumber) == "":
			return refuse("missing recurrenceRequest.orderNumber")
		}
		return nil
	},
	money: func(_ context.Context, c *call, in *RecurrenceRequest) (*money, *refusal) {
		return c.s.recurrencePolicy(c, in), nil
	},
	reply: func(ctx context.Context, c *call, _ *RecurrenceRequest) (*PaymentStatus, error) {
		if c.fresh != nil {
			return statusFromPayment(c.fresh, &c.m, c.freshProduct), nil
		}
		return c.replayStatus(ctx)
	},
	fail: failStatus[RecurrenceRequest],
	sign: signStatus,
}

// errRecurrenceUnconfirmed answers a createRecurrentPayment whose reply
// was lost until the gateway tells the bridge of the child.
var errRecurrenceUnconfirmed = serverError("outcome unknown: the payment gateway has not confirmed the recurring payment yet; " +
	"retry the same call later: it is answered with the payment once the gateway confirms it, and never charges twice")

// recurrenceConfirmWithin is how long a createRecurrentPayment in doubt
// waits for the gateway's word on the child (its notifications are
// repeated for hours when the bridge does not take them; one lost for an
// hour is unlikely to come) before its repeats hear that it is not coming.
const recurrenceConfirmWithin = time.Hour

// errRecurrenceNeverConfirmed answers a repeat of a createRecurrentPayment
// that stayed in doubt for recurrenceConfirmWithin.
var errRecurrenceNeverConfirmed = serverError(fmt.Sprintf("outcome unknown: the payment gateway has not confirmed the recurring payment "+
	"within %v of the call; it may or may not exist. Repeating this call never creates it, so it is not charged twice: look for it among "+
	"the parent payment's recurrences in the payment gateway's account, and create a new one with a new order number only if there is none",
	recurrenceConfirmWithin))

// recurrencePolicy is the ledger policy of createRecurrentPayment. The
// gateway lists no children of a parent, but it notifies the bridge of
// each child's state, and a child names its parent: the callback records
// the child's session (childSession). A call whose reply was lost stays in
// doubt until then; its repeats are reconciled with the parent's children
// the bridge has learnt since the call (findChild).
func (s *Service) recurrencePolicy(c *call, rr *RecurrenceRequest) *money {
	m, parentID := c.m, *rr.ParentPaymentSessionID
	order, amount := trim(rr.OrderNumber), *rr.TotalPrice
	return &money{
		payment:          parentID,
		unknown:          errRecurrenceUnconfirmed,
		unconfirmed:      errRecurrenceNeverConfirmed,
		unconfirmedAfter: recurrenceConfirmWithin,
		reconcile: func(ctx context.Context) (store.CallRecord, restbackend.Outcome) {
			return s.findChild(ctx, c, parentID, order, amount)
		},
		act: func(ctx context.Context) (store.CallRecord, error) {
			// The child inherits currency and productName from the parent:
			// from the bridge's session, else (a parent not created here)
			// the currency from the gateway's status, and no productName.
			parent, found, err := s.sessionOf(ctx, parentID, 0)
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
			child, err := s.gw.CreateRecurrence(ctx, m.Credentials(), parentID, req)
			if err != nil {
				return store.CallRecord{}, err
			}
			if child.ParentID == 0 {
				child.ParentID = parentID
			}
			// The child may already be charged: unlike createPayment, a
			// failed session write must not turn into a failure the e-shop
			// might retry (and charge twice). Status replies fall back to
			// the parent's session.
			sess := store.Session{
				PaymentID: child.ID, ParentID: parentID, GoID: m.GoID, ProductName: parent.ProductName,
				OrderNumber: child.OrderNumber, Amount: child.Amount, Currency: child.Currency,
				SuccessURL: parent.SuccessURL, FailedURL: parent.FailedURL, CreatedAt: s.now(),
				PaymentChannels: parent.PaymentChannels, KeyID: keyID(c.v.key),
			}
			if err := s.store.SaveSession(ctx, sess); err != nil {
				c.logger().Error("session of recurring child not recorded; answering from the parent's", zap.Int64("goid", m.GoID),
					zap.Int64("payment", child.ID), zap.Int64("parent", parentID), zap.Error(err))
			}
			c.logger().Info("recurrence created", zap.Int64("goid", m.GoID), zap.Int64("payment", child.ID), zap.Int64("parent", parentID))
			c.fresh = child
			if found {
				c.freshProduct = &parent.ProductName
			}
			return store.CallRecord{PaymentID: child.ID, Result: CallCompleted}, nil
		},
	}
}

// childClockSkew is how much earlier than the call's ledger entry a child
// may be recorded and still be its child: the two times come from the
// clocks of different replicas.
const childClockSkew = time.Minute

// findChild reconciles a createRecurrentPayment: done when exactly one
// child of parentID with its order number and amount was recorded since the
// call's ledger entry was made (less childClockSkew); unknown otherwise (none yet, or more than
// one to choose from). Never "not done": the gateway may still report it.
func (s *Service) findChild(ctx context.Context, c *call, parentID int64, order string, amount int64) (store.CallRecord, restbackend.Outcome) {
	kids, err := s.store.Children(ctx, parentID)
	if err != nil {
		c.logger().Warn("reconciliation: children not readable", zap.Int64("parent", parentID), zap.Error(err))
		return store.CallRecord{}, restbackend.OutcomeUnknown
	}
	var found []int64
	for _, k := range kids {
		if k.OrderNumber == order && k.Amount == amount && !k.CreatedAt.Before(c.since.Add(-childClockSkew)) {
			found = append(found, k.PaymentID)
		}
	}
	if len(found) != 1 {
		return store.CallRecord{}, restbackend.OutcomeUnknown
	}
	return store.CallRecord{PaymentID: found[0], Result: CallCompleted}, restbackend.OutcomeDone
}

// createBuyerNotSupported is every createBuyer's answer.
const createBuyerNotSupported = "createBuyer is not supported: the payment gateway's REST interface has no buyer accounts"

// createBuyerRow: createBuyer cannot be served, the REST interface has no
// buyer accounts. The request's signature is still checked with the Java
// 2.4 library's scheme (the only one published) so that the e-shop learns
// of a wrong key. No scheme is published for the reply: it is unsigned.
var createBuyerRow = &row[BuyerCreate, *BuyerCreateResult]{
	name: "createBuyer",
	auth: func(in *BuyerCreate) auth {
		const part = "buyerCreate"
		if in == nil {
			return auth{part: part, invalid: "missing " + part}
		}
		return auth{part: part, invalid: in.Invalid, goid: in.EshopGoID, sig: in.EncryptedSignature,
			signed: [][]string{CreateBuyerFields(formatOptInt(in.EshopGoID), in.BuyerUsername, deref(in.BuyerEmail))}}
	},
	reply: func(context.Context, *call, *BuyerCreate) (*BuyerCreateResult, error) {
		return nil, refuse(createBuyerNotSupported)
	},
	fail: func(c *call, in *BuyerCreate, r *refusal) *BuyerCreateResult {
		desc := r.desc
		if r.badSig {
			desc = "invalid encryptedSignature of buyerCreate: it does not verify with the e-shop's secure key (eshopGoId|buyerUsername|buyerEmail); " +
				createBuyerNotSupported
		}
		res := &BuyerCreateResult{EshopGoID: c.goid, Result: Failed, ResultDescription: &desc}
		if in != nil {
			res.BuyerEmail = in.BuyerEmail
		}
		return res
	},
}
