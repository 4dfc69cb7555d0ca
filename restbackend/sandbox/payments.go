package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/legacybridge/soapbridge/restbackend"
)

// payment is the sandbox's record of one payment. Guarded by Gateway.mu.
type payment struct {
	id, parentID int64
	goid         int64
	gwToken      string
	gwURL        string
	req          restbackend.PaymentRequest // as created (children: derived)
	state        string
	subState     string
	instrument   string
	swift        string
	amount       int64 // current amount (a partial capture lowers it)
	authorized   int64 // amount held by the authorization
	refunded     int64
	created      time.Time
	authorizedAt time.Time
	card         *restbackend.PaymentCard
	bank         *restbackend.BankAccount
	preauth      *restbackend.Preauthorization
	recurrence   *restbackend.Recurrence
	recurStart   time.Time // first charge of an automatic recurrence
	recurCount   int       // automatic charges made
	chargeAt     time.Time // ON_DEMAND follow-up: when RunDue charges the stored card
	chargeSub    string    // ON_DEMAND follow-up: decline sub-state a scenario forces ("" pays)
	captureAt    time.Time // an ACCEPTED capture: when RunDue settles it
	captureAmt   int64
	requestToken bool // payer.request_card_token: store the card once paid
	voided       bool // the authorization was voided by void-authorization
	refunds      []refund
	moves        []movement
}

// refund is one refund request; state SUCCESS, FAILED or REQUESTED (an
// ACCEPTED refund that RunDue completes).
type refund struct {
	amount  int64
	state   string
	at      time.Time
	changed time.Time
}

// movement is one line of the merchant account: a payment received or a refund.
type movement struct {
	at     time.Time
	kind   string // PAYMENT, REFUND
	amount int64  // signed
}

// view is the REST reply for p.
func (p *payment) view() *restbackend.Payment {
	v := &restbackend.Payment{
		ID:                p.id,
		ParentID:          p.parentID,
		OrderNumber:       p.req.OrderNumber,
		State:             p.state,
		SubState:          p.subState,
		Amount:            p.amount,
		Currency:          p.req.Currency,
		PaymentInstrument: p.instrument,
		Target:            &restbackend.Target{Type: "ACCOUNT", GoID: p.goid},
		AdditionalParams:  append([]restbackend.AdditionalParam(nil), p.req.AdditionalParams...),
		Lang:              p.req.Lang,
		GwURL:             p.gwURL,
		EET:               p.req.EET,
	}
	payer := restbackend.Payer{}
	if p.req.Payer != nil {
		payer = *p.req.Payer
		if payer.Contact != nil {
			c := *payer.Contact
			payer.Contact = &c
		}
	}
	if p.card != nil {
		c := *p.card
		payer.PaymentCard = &c
	}
	if p.bank != nil {
		b := *p.bank
		payer.BankAccount = &b
	}
	v.Payer = &payer
	if p.preauth != nil {
		pa := *p.preauth
		v.Preauthorization = &pa
	}
	if p.recurrence != nil {
		r := *p.recurrence
		v.Recurrence = &r
	}
	return v
}

// readJSON decodes the body into dst; syntax and type errors are refusals.
func readJSON(c echo.Context, dst any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	return decodeJSON(body, dst)
}

// readAs reads the body and decodes it into restbackend's type with decodeAs.
func readAs[In, Out any](c echo.Context, v *validator, rest func(*In, *validator) Out) (Out, error) {
	body, err := readBody(c)
	if err != nil {
		var zero Out
		return zero, err
	}
	return decodeAs(body, v, rest)
}

// readBody reads a non-empty body of at most maxBody bytes.
func readBody(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxBody+1))
	if err != nil {
		var limit *echo.HTTPError
		if errors.As(err, &limit) {
			return nil, err // a chunked body over the limit: 413, as a declared one gets
		}
		return nil, refuse(http.StatusConflict, globalErr(codeInvalidRequest, "cannot read the request body"))
	}
	if len(body) > maxBody {
		return nil, refuse(http.StatusConflict, globalErr(codeInvalidRequest, "request body too large"))
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil, refuse(http.StatusConflict, globalErr(codeInvalidRequest, "request body is empty; JSON expected"))
	}
	return body, nil
}

func decodeJSON(body []byte, dst any) error {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields() // the gateway refuses fields it does not know
	err := dec.Decode(dst)
	if err == nil && dec.More() {
		err = errors.New("data after the JSON value")
	}
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return refuse(http.StatusConflict, globalErr(codeInvalidRequest, "JSON object expected"))
		}
		return errField(codeWrongFormat, field, fmt.Sprintf("%s must be %s, not a JSON %s", field, jsonKind(te.Type.Kind().String()), te.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errField(codeWrongFormat, name, "unknown field "+strconv.Quote(name))
	default:
		return refuse(http.StatusConflict, globalErr(codeInvalidRequest, "request body is not valid JSON: "+err.Error()))
	}
}

func jsonKind(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"):
		return "an integer"
	case goKind == "bool":
		return "a boolean"
	case goKind == "slice":
		return "a list"
	case goKind == "struct", goKind == "ptr":
		return "an object"
	}
	return "a " + goKind
}

// validator collects field errors.
type validator struct {
	items  []restbackend.ErrorItem
	refund bool // item amounts may be negative (itemsAddUp)
}

func (v *validator) add(code int, field, format string, args ...any) {
	v.items = append(v.items, fieldErr(code, field, fmt.Sprintf(format, args...)))
}

func (v *validator) err() error {
	if len(v.items) == 0 {
		return nil
	}
	return &apiError{status: http.StatusConflict, items: v.items}
}

func (v *validator) orderFields(orderNumber, description string) {
	switch {
	case strings.TrimSpace(orderNumber) == "":
		v.add(codeMandatory, "order_number", "order_number is required")
	case len([]rune(orderNumber)) > 128:
		v.add(codeWrongFormat, "order_number", "order_number is longer than 128 characters")
	}
	if len([]rune(description)) > 256 {
		v.add(codeWrongFormat, "order_description", "order_description is longer than 256 characters")
	}
}

func (v *validator) amountField(field string, amount int64) {
	if amount <= 0 {
		v.add(codeWrongFormat, field, "%s must be a positive integer in minor units", field)
	}
}

func (v *validator) currencyField(field, cur string) {
	switch {
	case cur == "":
		v.add(codeMandatory, field, "%s is required", field)
	case !currencies[cur]:
		v.add(codeWrongFormat, field, "unknown currency %q (accepted: CZK, EUR, PLN, HUF, GBP, USD, RON, BGN)", cur)
	}
}

func (v *validator) additionalParams(ps []restbackend.AdditionalParam) {
	if len(ps) > 4 {
		v.add(codeWrongFormat, "additional_params", "at most 4 additional_params are allowed, got %d", len(ps))
	}
	for i, p := range ps {
		if strings.TrimSpace(p.Name) == "" {
			v.add(codeMandatory, fmt.Sprintf("additional_params[%d].name", i), "additional parameter name is required")
		}
	}
}

func (v *validator) itemList(items []restbackend.Item) {
	for i, it := range items {
		f := fmt.Sprintf("items[%d]", i)
		if strings.TrimSpace(it.Name) == "" {
			v.add(codeMandatory, f+".name", "item name is required")
		}
		if it.Type != "" && it.Type != "ITEM" && it.Type != "DISCOUNT" && it.Type != "DELIVERY" {
			v.add(codeWrongFormat, f+".type", "item type must be ITEM, DISCOUNT or DELIVERY")
		}
		if it.Count < 0 {
			v.add(codeWrongFormat, f+".count", "item count must not be negative")
		}
	}
}

// itemsAddUp refuses items whose amounts do not add up to amount (360).
// Refund items may be written negative (the documented EET refund): their
// sum then matches -amount.
func (v *validator) itemsAddUp(items []restbackend.Item, amount int64) {
	if len(items) == 0 || amount <= 0 {
		return
	}
	var sum int64
	for _, it := range items {
		sum += it.Amount
	}
	if sum != amount && !(v.refund && sum == -amount) {
		v.add(codeItemsMismatch, "items", "the items add up to %d, the amount is %d", sum, amount)
	}
}

// validateCreate checks a create request of the merchant goid; the caller
// holds g.mu (card tokens are looked up).
func (g *Gateway) validateCreate(goid int64, r *restbackend.PaymentRequest, now time.Time) error {
	v := &validator{}
	switch {
	case r.Target.GoID == 0:
		v.add(codeMandatory, "target.goid", "target.goid is required")
	case r.Target.Type != "ACCOUNT":
		v.add(codeWrongFormat, "target.type", "target.type must be ACCOUNT")
	}
	if r.Target.GoID != 0 && r.Target.GoID != goid {
		return errForbidden(fmt.Sprintf("target.goid %d does not belong to this client", r.Target.GoID))
	}
	v.amountField("amount", r.Amount)
	v.currencyField("currency", r.Currency)
	v.orderFields(r.OrderNumber, r.OrderDescription)
	if r.Lang != "" && !languages[strings.ToUpper(r.Lang)] {
		v.add(codeWrongFormat, "lang", "unknown language %q", r.Lang)
	}
	v.additionalParams(r.AdditionalParams)
	v.itemList(r.Items)
	v.itemsAddUp(r.Items, r.Amount)
	if r.Callback == nil || r.Callback.ReturnURL == "" {
		v.add(codeMandatory, "callback.return_url", "callback.return_url is required")
	} else if !restbackend.IsHTTPURL(r.Callback.ReturnURL) {
		v.add(codeWrongFormat, "callback.return_url", "callback.return_url must be an absolute http(s) URL")
	}
	if r.Callback != nil && r.Callback.NotificationURL != "" && !restbackend.IsHTTPURL(r.Callback.NotificationURL) {
		v.add(codeWrongFormat, "callback.notification_url", "callback.notification_url must be an absolute http(s) URL")
	}
	if p := r.Payer; p != nil {
		for _, in := range p.AllowedPaymentInstruments {
			if !instrumentNames[in] {
				v.add(codeWrongFormat, "payer.allowed_payment_instruments", "unknown payment instrument %q", in)
			}
		}
		if p.DefaultPaymentInstrument != "" && !instrumentNames[p.DefaultPaymentInstrument] {
			v.add(codeWrongFormat, "payer.default_payment_instrument", "unknown payment instrument %q", p.DefaultPaymentInstrument)
		}
		for _, s := range p.AllowedSwifts {
			if _, ok := findSwift(s); !ok {
				v.add(codeWrongFormat, "payer.allowed_swifts", "unknown bank SWIFT code %q", s)
			}
		}
		if p.DefaultSwift != "" {
			if _, ok := findSwift(p.DefaultSwift); !ok {
				v.add(codeWrongFormat, "payer.default_swift", "unknown bank SWIFT code %q", p.DefaultSwift)
			}
		}
		if c := p.Contact; c != nil {
			if c.Email != "" && (!strings.Contains(c.Email, "@") || strings.ContainsAny(c.Email, " \t<>")) {
				v.add(codeWrongFormat, "payer.contact.email", "not an e-mail address")
			}
			if c.CountryCode != "" && len(c.CountryCode) != 3 {
				v.add(codeWrongFormat, "payer.contact.country_code", "country_code must be a three-letter code")
			}
		}
		if p.AllowedCardToken != "" {
			if rec, ok := g.cards[p.AllowedCardToken]; !ok || rec.goid != goid {
				v.add(codeWrongFormat, "payer.allowed_card_token", "unknown card token")
			}
		}
		if len([]rune(p.VerifyPin)) > 4 {
			v.add(codeWrongFormat, "payer.verify_pin", "verify_pin has at most 4 characters")
		}
	}
	if rc := r.Recurrence; rc != nil {
		switch rc.RecurrenceCycle {
		case "":
			v.add(codeMandatory, "recurrence.recurrence_cycle", "recurrence.recurrence_cycle is required")
		case restbackend.CycleDay, restbackend.CycleWeek, restbackend.CycleMonth:
			if rc.RecurrencePeriod <= 0 {
				v.add(codeMandatory, "recurrence.recurrence_period", "recurrence.recurrence_period must be a positive integer for cycle %s", rc.RecurrenceCycle)
			}
			if rc.RecurrenceDateTo == "" {
				v.add(codeMandatory, "recurrence.recurrence_date_to", "recurrence.recurrence_date_to is required for cycle %s", rc.RecurrenceCycle)
			}
		case restbackend.CycleOnDemand:
		default:
			v.add(codeWrongFormat, "recurrence.recurrence_cycle", "recurrence_cycle must be DAY, WEEK, MONTH or ON_DEMAND")
		}
		if rc.RecurrenceDateTo != "" {
			d, err := time.ParseInLocation("2006-01-02", rc.RecurrenceDateTo, prague)
			switch {
			case err != nil:
				v.add(codeWrongFormat, "recurrence.recurrence_date_to", "recurrence_date_to must be a date YYYY-MM-DD")
			case !d.AddDate(0, 0, 1).After(now):
				v.add(codeWrongFormat, "recurrence.recurrence_date_to", "recurrence_date_to lies in the past")
			}
		}
	}
	return v.err()
}

func (g *Gateway) handleCreate(c echo.Context) error {
	conv := &validator{}
	req, err := readAs(c, conv, (*createIn).rest)
	if err != nil {
		return err
	}
	if err := conv.err(); err != nil {
		return err
	}
	// The card request is the payment's (requestToken), not echoed in replies.
	requestToken := req.Payer != nil && req.Payer.RequestCardToken
	if requestToken {
		req.Payer.RequestCardToken = false
	}
	goid := goidOf(c)
	base := g.baseURL(c.Request())
	g.mu.Lock()
	now := g.clock.Now()
	if err := g.validateCreate(goid, &req, now); err != nil {
		g.mu.Unlock()
		return err
	}
	if err := createScenario(req.Amount); err != nil {
		g.mu.Unlock()
		return err
	}
	if req.Lang == "" {
		req.Lang = "CS"
	}
	req.Lang = strings.ToUpper(req.Lang)
	p := &payment{
		id:           g.newID(),
		goid:         goid,
		gwToken:      randomToken(18),
		req:          req,
		state:        restbackend.StateCreated,
		amount:       req.Amount,
		created:      now,
		requestToken: requestToken,
	}
	p.gwURL = base + "/gw/v3/" + p.gwToken
	if req.Preauthorization {
		p.preauth = &restbackend.Preauthorization{Requested: true, State: "REQUESTED"}
	}
	if rc := req.Recurrence; rc != nil {
		p.recurrence = &restbackend.Recurrence{
			RecurrenceCycle: rc.RecurrenceCycle, RecurrencePeriod: rc.RecurrencePeriod,
			RecurrenceDateTo: rc.RecurrenceDateTo, RecurrenceState: "REQUESTED",
		}
	}
	g.payments[p.id] = p
	g.byGwToken[p.gwToken] = p
	g.order = append(g.order, p)
	g.dirty = true
	v := p.reply()
	g.mu.Unlock()
	return c.JSON(http.StatusOK, v)
}

// owned returns the payment id of the caller's merchant; the caller holds g.mu.
func (g *Gateway) owned(goid, id int64) (*payment, error) {
	p := g.payments[id]
	if p == nil {
		return nil, errNotFound(id)
	}
	if p.goid != goid {
		return nil, errForbidden(fmt.Sprintf("payment %d belongs to another merchant", id))
	}
	return p, nil
}

// withPayment is the preamble of the /payments/payment/{id}/... handlers: it
// parses the path id, runs read (if any; it reads the body, so before
// locking), then calls do with the caller's merchant's payment under g.mu.
func (g *Gateway) withPayment(c echo.Context, read func() error, do func(p *payment) error) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if read != nil {
		if err := read(); err != nil {
			return err
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p, err := g.owned(goidOf(c), id)
	if err != nil {
		return err
	}
	return do(p)
}

// finished is the reply of an operation done at once.
func finished(c echo.Context, p *payment) error {
	return c.JSON(http.StatusOK, restbackend.Result{ID: p.id, Result: restbackend.ResultFinished})
}

func (g *Gateway) handleStatus(c echo.Context) error {
	return g.withPayment(c, nil, func(p *payment) error {
		return c.JSON(http.StatusOK, p.reply())
	})
}

// handleRefund: the ordinary form body (amount), or a JSON body
// {amount, items, eet} when the refund carries EET data.
func (g *Gateway) handleRefund(c echo.Context) error {
	var raw string
	read := func() error {
		ct := c.Request().Header.Get(echo.HeaderContentType)
		if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), echo.MIMEApplicationJSON) {
			raw = c.FormValue("amount")
			return nil
		}
		// in.EET is decoded (its fields and types checked) but not kept: no
		// reply of the interface shows a refund's fiscal data.
		v := &validator{refund: true}
		in, err := readAs(c, v, (*refundIn).rest)
		if err != nil {
			return err
		}
		v.itemList(in.Items)
		v.itemsAddUp(in.Items, in.Amount)
		if err := v.err(); err != nil {
			return err
		}
		if in.Amount != 0 {
			raw = strconv.FormatInt(in.Amount, 10)
		}
		return nil
	}
	return g.withPayment(c, read, func(p *payment) error {
		if raw == "" {
			return errField(codeMandatory, "amount", "amount is required")
		}
		amount, perr := strconv.ParseInt(raw, 10, 64)
		if perr != nil || amount <= 0 {
			return errField(codeWrongFormat, "amount", "amount must be a positive integer in minor units")
		}
		if p.state == restbackend.StateRefunded {
			return errConflict(codeRefundFailed, "payment %d is refunded in full; nothing is left to refund", p.id)
		}
		if p.state != restbackend.StatePaid && p.state != restbackend.StatePartiallyRefunded {
			return refuse(http.StatusConflict, restbackend.ErrorItem{Scope: "G", ErrorCode: codeRefundNotSupported, ErrorName: codeNames[codeRefundNotSupported],
				Message: "payment in state " + p.state + " cannot be refunded", Description: "only PAID and PARTIALLY_REFUNDED payments can be refunded"})
		}
		if left := p.amount - p.committedRefunds(); amount > left {
			return refuse(http.StatusConflict, fieldErr(codeRefundWrongAmount, "amount", fmt.Sprintf("amount %d exceeds what is left to refund (%d)", amount, left)))
		}
		result := scenarioResult(amount, magicRefundAccepted, magicRefundFailed)
		if amount == magicRefundNoFunds {
			return errConflict(codeRefundNoFunds, "not enough funds on the merchant account to refund %d", amount)
		}
		now := g.clock.Now()
		g.dirty = true
		switch result {
		case restbackend.ResultFailed:
			p.refunds = append(p.refunds, refund{amount: amount, state: restbackend.RefundFailed, at: now, changed: now})
		case restbackend.ResultAccepted:
			p.refunds = append(p.refunds, refund{amount: amount, state: restbackend.RefundRequested, at: now, changed: now})
		default:
			p.refunds = append(p.refunds, refund{amount: amount, state: restbackend.RefundSucceeded, at: now, changed: now})
			g.refunded(p, amount, now)
		}
		return c.JSON(http.StatusOK, restbackend.Result{ID: p.id, Result: result})
	})
}

// committedRefunds is what refunds have taken or are taking: all but FAILED.
func (p *payment) committedRefunds() int64 {
	var sum int64
	for _, r := range p.refunds {
		if r.state != restbackend.RefundFailed {
			sum += r.amount
		}
	}
	return sum
}

// refunded moves the money of a completed refund. Caller holds g.mu.
func (g *Gateway) refunded(p *payment, amount int64, now time.Time) {
	p.refunded += amount
	p.moves = append(p.moves, movement{at: now, kind: "REFUND", amount: -amount})
	switch {
	case p.refunded == p.amount:
		g.setState(p, restbackend.StateRefunded, "")
	case p.state == restbackend.StatePartiallyRefunded:
		g.notifyLocked(p) // a further partial refund: same state, still news
	default:
		g.setState(p, restbackend.StatePartiallyRefunded, "")
	}
}

const historyTime = "2006-01-02T15:04:05.000-0700"

func (g *Gateway) handleRefunds(c echo.Context) error {
	return g.withPayment(c, nil, func(p *payment) error {
		out := []restbackend.Refund{}
		for i, r := range p.refunds {
			out = append(out, restbackend.Refund{ID: p.id*100 + int64(i+1), Amount: r.amount, Currency: p.req.Currency, State: r.state,
				DateRequested: r.at.In(prague).Format(historyTime), DateLastChange: r.changed.In(prague).Format(historyTime)})
		}
		return c.JSON(http.StatusOK, out)
	})
}

func (g *Gateway) handleCapture(c echo.Context) error {
	var in restbackend.CaptureRequest
	read := func() error {
		body, _ := io.ReadAll(io.LimitReader(c.Request().Body, maxBody))
		if !strings.HasPrefix(strings.TrimSpace(string(body)), "{") {
			return nil
		}
		v := &validator{}
		var err error
		if in, err = decodeAs(body, v, (*captureIn).rest); err != nil {
			return err
		}
		v.itemList(in.Items)
		if in.Amount != 0 {
			v.itemsAddUp(in.Items, in.Amount)
		}
		return v.err()
	}
	return g.withPayment(c, read, func(p *payment) error {
		if p.preauth != nil && p.preauth.State == "CAPTURED" {
			return errConflict(codeCaptureDone, "payment %d is already captured", p.id)
		}
		if p.state != restbackend.StateAuthorized || !p.captureAt.IsZero() {
			return errConflict(codeCaptureFailed, "payment in state %s has no authorization to capture", p.state)
		}
		amount := in.Amount
		if amount == 0 {
			for _, it := range in.Items {
				amount += it.Amount
			}
		}
		if amount == 0 {
			amount = p.authorized
		}
		if amount < 0 || amount > p.authorized {
			return refuse(http.StatusConflict, fieldErr(codeCaptureFailed, "amount", fmt.Sprintf("capture amount %d must be between 1 and the authorized %d", amount, p.authorized)))
		}
		now := g.clock.Now()
		result := scenarioResult(amount, magicCaptureAccepted, magicCaptureFailed)
		switch result {
		case restbackend.ResultFailed: // the acquirer refused: the hold stays
		case restbackend.ResultAccepted: // settled acceptedDelay later
			p.captureAt, p.captureAmt = now, amount
			g.dirty = true
		default:
			g.capture(p, amount, now)
		}
		return c.JSON(http.StatusOK, restbackend.Result{ID: p.id, Result: result})
	})
}

// capture takes amount of the hold; the rest is released. Caller holds g.mu.
func (g *Gateway) capture(p *payment, amount int64, now time.Time) {
	p.captureAt, p.captureAmt = time.Time{}, 0
	p.amount = amount
	p.preauth.State = "CAPTURED"
	g.settle(p, now)
}

func (g *Gateway) handleVoidAuthorization(c echo.Context) error {
	return g.withPayment(c, nil, func(p *payment) error {
		if p.voided {
			return errConflict(codeVoidAuthDone, "the authorization of payment %d is already voided", p.id)
		}
		if p.state != restbackend.StateAuthorized || !p.captureAt.IsZero() {
			return errConflict(codeVoidAuthFailed, "payment in state %s has no authorization to void", p.state)
		}
		p.preauth.State = "CANCELED"
		p.voided = true
		g.stopRecurrence(p)
		g.setState(p, restbackend.StateCanceled, "")
		return finished(c, p)
	})
}

func (g *Gateway) handleVoidRecurrence(c echo.Context) error {
	return g.withPayment(c, nil, func(p *payment) error {
		if p.recurrence == nil {
			return errConflict(codeRecurrenceNotAllowed, "payment %d is not a recurring payment", p.id)
		}
		if p.recurrence.RecurrenceState == "STOPPED" {
			return errConflict(codeRecurrenceStopped, "the recurrence of payment %d is already stopped", p.id)
		}
		p.recurrence.RecurrenceState = "STOPPED"
		g.dirty = true
		return finished(c, p)
	})
}

func (g *Gateway) handleCreateRecurrence(c echo.Context) error {
	var req restbackend.RecurrenceRequest
	read := func() error {
		v := &validator{}
		var err error
		if req, err = readAs(c, v, (*recurrenceReqIn).rest); err != nil {
			return err
		}
		return v.err()
	}
	var reply []byte
	err := g.withPayment(c, read, func(p *payment) error {
		now := g.clock.Now()
		if p.recurrence == nil || p.recurrence.RecurrenceCycle != restbackend.CycleOnDemand {
			return errConflict(codeRecurrenceNotAllowed, "payment %d is not an ON_DEMAND recurring payment", p.id)
		}
		if p.recurrence.RecurrenceState == "STARTED" && !recurrenceEnd(p).IsZero() && !now.Before(recurrenceEnd(p)) {
			p.recurrence.RecurrenceState = "STOPPED"
		}
		switch p.recurrence.RecurrenceState {
		case "STARTED":
		case "STOPPED":
			return errConflict(codeRecurrenceStopped, "the recurrence of payment %d is stopped", p.id)
		default:
			return errConflict(codeRecurrenceFailed, "recurrence is %s; follow-ups need a paid initiating payment", p.recurrence.RecurrenceState)
		}
		v := &validator{}
		v.amountField("amount", req.Amount)
		v.currencyField("currency", req.Currency)
		if req.Currency != "" && currencies[req.Currency] && req.Currency != p.req.Currency {
			v.add(codeWrongFormat, "currency", "currency must be the initiating payment's %s", p.req.Currency)
		}
		v.orderFields(req.OrderNumber, req.OrderDescription)
		v.additionalParams(req.AdditionalParams)
		v.itemList(req.Items)
		v.itemsAddUp(req.Items, req.Amount)
		if err := v.err(); err != nil {
			return err
		}
		if req.Amount == magicRecurrenceRefused {
			return errConflict(codeRecurrenceFailed, "the recurring charge of %d was refused", req.Amount)
		}
		// Like the real gateway, the reply shows the follow-up CREATED; the
		// card is charged right after and the outcome notified.
		ch := g.child(p, now, req.Amount, req.OrderNumber, req.OrderDescription, req.Items, req.AdditionalParams)
		ch.req.EET = req.EET // this sale's fiscal data, not the initiating payment's
		ch.chargeAt = now
		if req.Amount == magicRecurrenceDeclined {
			ch.chargeSub = subCardDeclined
		}
		body, merr := json.Marshal(ch.reply())
		if merr != nil {
			return merr
		}
		reply = append(body, '\n') // as c.JSON writes it
		return nil
	})
	if err != nil {
		return err
	}
	// The whole reply goes out (with its length, as c.JSON's would) before
	// the scheduler charges the card and notifies.
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(reply)))
	err = c.JSONBlob(http.StatusOK, reply)
	_ = http.NewResponseController(c.Response().Writer).Flush()
	g.kickScheduler()
	return err
}

// recurrenceEnd is the first instant after recurrence_date_to (Prague), or
// zero when there is none.
func recurrenceEnd(p *payment) time.Time {
	if p.recurrence == nil || p.recurrence.RecurrenceDateTo == "" {
		return time.Time{}
	}
	d, err := time.ParseInLocation("2006-01-02", p.recurrence.RecurrenceDateTo, prague)
	if err != nil {
		return time.Time{}
	}
	return d.AddDate(0, 0, 1)
}
