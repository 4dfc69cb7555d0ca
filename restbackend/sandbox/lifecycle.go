package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
)

// Customer actions (Action.Do).
const (
	ActPay    = "pay"
	ActCancel = "cancel"
	ActWait   = "wait"
)

// Outcomes of a pay action.
const (
	OutcomeSuccess   = "success"
	OutcomeDeclined  = "declined"
	Outcome3DSFailed = "3ds_failed"
)

// Sub-states the sandbox sets.
const (
	subOnlineWaiting  = "_101"
	subOfflineWaiting = "_102"
	subBankPaid       = "_3001"
	subBankRefused    = "_3003" // bank payment not authorised (_3001 signature, _3002 statement: confirmed)
	subCardDeclined   = "_5006" // declined by the issuer (insufficient funds)
	subCard3DSFailed  = "_5009" // 3-D Secure authentication failed
	// subCardVerified: an identification payment (payer.verify_pin) whose
	// card was charged, authorised or paid: its status carries a sub_state
	// as the gateway's published status example of such a payment does.
	subCardVerified = "_3002"
)

// Action is what the customer does on the payment page; the JSON body of
// POST /sandbox/payments/{id}/{pay|cancel|wait} (Do comes from the path).
type Action struct {
	Do         string `json:"do,omitempty"`
	Outcome    string `json:"outcome,omitempty"`    // pay: success (default), declined, 3ds_failed
	Instrument string `json:"instrument,omitempty"` // pay/wait: PAYMENT_CARD, BANK_ACCOUNT, ...
	Swift      string `json:"swift,omitempty"`      // BANK_ACCOUNT: the bank's button
	Card       string `json:"card,omitempty"`       // PAYMENT_CARD: test card number (default 4188030000000003)
}

const defaultCard = "4188030000000003"

// cardRecord is a stored card (identification payments).
type cardRecord struct {
	goid int64
	card restbackend.PaymentCard
	pan  string
}

// Act performs a customer action on payment id, exactly as the payment
// page and POST /sandbox/payments/{id}/{action} do.
func (g *Gateway) Act(ctx context.Context, id int64, a Action) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.payments[id]
	if p == nil {
		return errNotFound(id)
	}
	return g.act(p, a)
}

// act: the caller holds g.mu.
func (g *Gateway) act(p *payment, a Action) error {
	waiting := p.state == restbackend.StateCreated || p.state == restbackend.StatePaymentMethodChosen
	switch a.Do {
	case ActCancel:
		if !waiting {
			return errWrongState(p.state, "only an unpaid payment can be canceled by the customer")
		}
		if p.preauth != nil {
			p.preauth.State = "CANCELED"
		}
		g.stopRecurrence(p)
		g.setState(p, restbackend.StateCanceled, "")
		return nil
	case ActWait, ActPay:
	default:
		return refuse(http.StatusConflict, globalErr(codeInvalidRequest, "unknown action "+strconv.Quote(a.Do)+" (pay, cancel, wait)"))
	}
	if !waiting {
		return errWrongState(p.state, "the payment is no longer waiting for the customer")
	}
	in := a.Instrument
	if in == "" && p.state == restbackend.StatePaymentMethodChosen {
		in = p.instrument
	}
	if in == "" && a.Swift != "" {
		in = restbackend.InstrumentBankAccount
	}
	if in == "" && a.Do == ActWait {
		in = restbackend.InstrumentBankAccount
	}
	if in == "" && p.req.Payer != nil {
		in = p.req.Payer.DefaultPaymentInstrument
	}
	if in == "" {
		in = restbackend.InstrumentPaymentCard
	}
	if err := g.checkInstrument(p, in, a.Swift); err != nil {
		return err
	}
	if a.Do == ActWait {
		sub := subOfflineWaiting
		if in != restbackend.InstrumentBankAccount || (a.Swift != "" && a.Swift != "OTHERS") {
			sub = subOnlineWaiting
		}
		p.instrument, p.swift = in, a.Swift
		g.setState(p, restbackend.StatePaymentMethodChosen, sub)
		return nil
	}
	outcome := a.Outcome
	if outcome == "" {
		outcome = OutcomeSuccess
	}
	if outcome != OutcomeSuccess && outcome != OutcomeDeclined && outcome != Outcome3DSFailed {
		return errField(codeWrongFormat, "outcome", "outcome must be success, declined or 3ds_failed")
	}
	if outcome == Outcome3DSFailed && in != restbackend.InstrumentPaymentCard {
		return errField(codeWrongFormat, "outcome", "3ds_failed applies to PAYMENT_CARD only")
	}
	now := g.clock.Now()
	p.instrument = in
	if a.Swift != "" {
		p.swift = a.Swift
	}
	switch in {
	case restbackend.InstrumentPaymentCard:
		pan := a.Card
		if pan == "" {
			pan = defaultCard
			if p.req.Payer != nil && p.req.Payer.AllowedCardToken != "" {
				pan = g.cards[p.req.Payer.AllowedCardToken].pan
			}
		}
		if len(pan) < 12 || len(pan) > 19 || !digits(pan) {
			return errField(codeWrongFormat, "card", "card must be a test card number of 12 to 19 digits")
		}
		if p.req.Payer != nil && p.req.Payer.AllowedCardToken != "" && g.cards[p.req.Payer.AllowedCardToken].pan != pan {
			return errField(codeWrongFormat, "card", "this payment accepts only the card of payer.allowed_card_token")
		}
		p.card = testCard(pan)
		if outcome == OutcomeSuccess {
			switch sub := forcedDecline(p, pan); sub {
			case "":
			case subCard3DSFailed:
				outcome = Outcome3DSFailed
			default:
				g.fail(p, sub)
				return nil
			}
		}
		switch outcome {
		case OutcomeDeclined:
			g.fail(p, subCardDeclined)
			return nil
		case Outcome3DSFailed:
			p.card.ThreeDSResult = "N"
			g.fail(p, subCard3DSFailed)
			return nil
		}
		verify := p.req.Payer != nil && p.req.Payer.VerifyPin != ""
		if p.requestToken || verify {
			p.card.CardToken = g.storeCard(p.goid, pan, *p.card)
		}
		authorizedSub := ""
		if verify {
			p.subState, authorizedSub = subCardVerified, subCardVerified // kept through capture and settle
		}
		if p.preauth != nil {
			p.authorized = p.amount
			p.authorizedAt = now
			p.preauth.State = "AUTHORIZED"
			g.setState(p, restbackend.StateAuthorized, authorizedSub)
			return nil
		}
		g.settle(p, now)
	case restbackend.InstrumentBankAccount:
		p.bank = testAccount(p.swift, p.req.Currency)
		if outcome == OutcomeDeclined || p.req.Amount == magicBankRefused {
			g.fail(p, subBankRefused)
			return nil
		}
		p.subState = subBankPaid
		g.settle(p, now)
	default:
		if outcome == OutcomeDeclined {
			g.fail(p, "")
			return nil
		}
		g.settle(p, now)
	}
	return nil
}

// checkInstrument refuses an instrument or bank the payment does not allow.
func (g *Gateway) checkInstrument(p *payment, in, swift string) error {
	if !instrumentNames[in] {
		return errField(codeWrongFormat, "instrument", "unknown payment instrument "+strconv.Quote(in))
	}
	if !instrumentEnabled(in, p.req.Currency) {
		return errField(codeWrongFormat, "instrument", in+" is not enabled for "+p.req.Currency)
	}
	if pr := p.req.Payer; pr != nil && len(pr.AllowedPaymentInstruments) > 0 && !contains(pr.AllowedPaymentInstruments, in) {
		return errField(codeWrongFormat, "instrument", in+" is not among the payment's allowed instruments")
	}
	cardOnly := p.preauth != nil || p.recurrence != nil || (p.req.Payer != nil && (p.req.Payer.VerifyPin != "" || p.req.Payer.AllowedCardToken != ""))
	if cardOnly && in != restbackend.InstrumentPaymentCard {
		return errField(codeWrongFormat, "instrument", "preauthorized, recurring and card-verified payments are paid by PAYMENT_CARD only")
	}
	if swift != "" {
		if in != restbackend.InstrumentBankAccount {
			return errField(codeWrongFormat, "swift", "swift applies to BANK_ACCOUNT only")
		}
		if !swiftAllowed(p, swift) {
			return errField(codeWrongFormat, "swift", swift+" is not offered for this payment")
		}
	}
	return nil
}

func swiftAllowed(p *payment, swift string) bool {
	ok := false
	for _, s := range swiftsFor(p.req.Currency) {
		ok = ok || s.swift == swift
	}
	if pr := p.req.Payer; ok && pr != nil && len(pr.AllowedSwifts) > 0 {
		ok = contains(pr.AllowedSwifts, swift)
	}
	return ok
}

// settle makes p PAID: money received, recurrence started. Caller holds g.mu.
func (g *Gateway) settle(p *payment, now time.Time) {
	p.moves = append(p.moves, movement{at: now, kind: "PAYMENT", amount: p.amount})
	if p.recurrence != nil && p.recurrence.RecurrenceState == "REQUESTED" {
		p.recurrence.RecurrenceState = "STARTED"
		p.recurStart = now
	}
	g.setState(p, restbackend.StatePaid, p.subState)
}

// fail cancels p after a refused payment attempt.
func (g *Gateway) fail(p *payment, sub string) {
	if p.preauth != nil {
		p.preauth.State = "CANCELED"
	}
	g.stopRecurrence(p)
	g.setState(p, restbackend.StateCanceled, sub)
}

func (g *Gateway) stopRecurrence(p *payment) {
	if p.recurrence != nil {
		p.recurrence.RecurrenceState = "STOPPED"
	}
}

// setState changes p's state and announces a change. Caller holds g.mu.
func (g *Gateway) setState(p *payment, state, sub string) {
	if p.state == state && p.subState == sub {
		return
	}
	p.state, p.subState = state, sub
	g.dirty = true
	g.log.Debug("sandbox: payment state", zap.Int64("payment", p.id), zap.Int64("parent", p.parentID),
		zap.String("state", state), zap.String("sub_state", sub))
	g.notifyLocked(p)
}

// child creates a follow-up payment of a recurring parent, CREATED and to be
// paid by the stored card. Caller holds g.mu.
func (g *Gateway) child(parent *payment, at time.Time, amount int64, orderNumber, desc string, items []restbackend.Item, params []restbackend.AdditionalParam) *payment {
	req := parent.req
	req.Amount = amount
	req.OrderNumber = orderNumber
	req.OrderDescription = desc
	req.Items = items
	req.AdditionalParams = params
	req.Recurrence = nil
	req.Preauthorization = false
	ch := &payment{
		id:         g.newID(),
		parentID:   parent.id,
		goid:       parent.goid,
		req:        req,
		state:      restbackend.StateCreated,
		amount:     amount,
		created:    at,
		instrument: restbackend.InstrumentPaymentCard,
	}
	g.payments[ch.id] = ch
	g.dirty = true
	g.order = append(g.order, ch)
	return ch
}

// payByStoredCard makes a follow-up payment PAID by its parent's card.
// Caller holds g.mu.
func (g *Gateway) payByStoredCard(ch *payment, at time.Time) {
	ch.chargeAt = time.Time{}
	if parent := g.payments[ch.parentID]; parent != nil && parent.card != nil {
		c := *parent.card
		c.CardToken = ""
		ch.card = &c
	}
	if ch.chargeSub != "" { // a scenario: the stored card is declined
		g.setState(ch, restbackend.StateCanceled, ch.chargeSub)
		return
	}
	g.settle(ch, at)
}

// RunDue processes what is due at the clock's time: unpaid payments time out
// (7 days), authorizations lapse (4 days), ON_DEMAND follow-ups and
// automatic recurrences charge the stored card.
func (g *Gateway) RunDue() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	defer g.persistLocked()
	for _, p := range g.order {
		g.completeAccepted(p, now)
		if p.state == restbackend.StateCreated && !p.chargeAt.IsZero() {
			if !now.Before(p.chargeAt) {
				g.payByStoredCard(p, now)
			}
			continue
		}
		switch p.state {
		case restbackend.StateCreated, restbackend.StatePaymentMethodChosen:
			if !now.Before(p.created.Add(unpaidTimeout)) {
				if p.preauth != nil {
					p.preauth.State = "CANCELED"
				}
				g.stopRecurrence(p)
				g.setState(p, restbackend.StateTimeouted, "")
			}
		case restbackend.StateAuthorized:
			if !now.Before(p.authorizedAt.Add(authorizationTT)) {
				p.preauth.State = "CANCELED"
				g.stopRecurrence(p)
				g.setState(p, restbackend.StateCanceled, "")
			}
		}
		if p.recurrence == nil || p.recurrence.RecurrenceState != "STARTED" {
			continue
		}
		end := recurrenceEnd(p)
		if p.recurrence.RecurrenceCycle == restbackend.CycleOnDemand {
			if !end.IsZero() && !now.Before(end) {
				p.recurrence.RecurrenceState = "STOPPED"
			}
			continue
		}
		// Snapshot: charge appends to g.order, which the range already copied.
		for {
			due := nextDue(p)
			if !due.Before(end) {
				p.recurrence.RecurrenceState = "STOPPED"
				break
			}
			if due.After(now) {
				break
			}
			p.recurCount++
			ch := g.child(p, due, p.req.Amount, p.req.OrderNumber, p.req.OrderDescription, p.req.Items, p.req.AdditionalParams)
			g.payByStoredCard(ch, due)
		}
	}
}

// acceptedDelay is how long an ACCEPTED capture or refund stays pending
// (sandbox time): long enough to see it pending, short enough not to wait.
const acceptedDelay = 5 * time.Second

// completeAccepted finishes the operations p's replies called ACCEPTED once
// acceptedDelay has passed: a capture settles, requested refunds succeed.
// Caller holds g.mu.
func (g *Gateway) completeAccepted(p *payment, now time.Time) {
	if !p.captureAt.IsZero() && p.state == restbackend.StateAuthorized && !now.Before(p.captureAt.Add(acceptedDelay)) {
		g.capture(p, p.captureAmt, now)
	}
	for i := range p.refunds {
		if r := &p.refunds[i]; r.state == restbackend.RefundRequested && !now.Before(r.at.Add(acceptedDelay)) {
			r.state, r.changed = restbackend.RefundSucceeded, now
			g.refunded(p, r.amount, now)
		}
	}
}

// nextDue is when the next automatic charge of p falls due.
func nextDue(p *payment) time.Time {
	k := int64(p.recurCount+1) * p.recurrence.RecurrencePeriod
	start := p.recurStart.In(prague)
	switch p.recurrence.RecurrenceCycle {
	case restbackend.CycleDay:
		return start.AddDate(0, 0, int(k))
	case restbackend.CycleWeek:
		return start.AddDate(0, 0, int(7*k))
	default:
		return start.AddDate(0, int(k), 0)
	}
}

// testCard describes the sandbox test card pan.
func testCard(pan string) *restbackend.PaymentCard {
	brand := "VISA"
	switch pan[0] {
	case '5', '2':
		brand = "MASTERCARD"
	case '3':
		brand = "AMEX"
	}
	return &restbackend.PaymentCard{
		CardNumber:        pan[:6] + "******" + pan[len(pan)-4:],
		CardExpiration:    "2912",
		CardBrand:         brand,
		CardIssuerCountry: "CZE",
		CardIssuerBank:    "SANDBOX BANK, A.S.",
		ThreeDSResult:     "Y/Y",
	}
}

// storeCard returns the card token of pan for goid: one token per card and goid.
func (g *Gateway) storeCard(goid int64, pan string, card restbackend.PaymentCard) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("sandbox-card:%d:%s", goid, pan)))
	tok := hex.EncodeToString(sum[:])[:32]
	card.CardToken = tok
	g.cards[tok] = cardRecord{goid: goid, card: card, pan: pan}
	return tok
}

// testAccount is the payer's account of a bank payment.
func testAccount(swift, currency string) *restbackend.BankAccount {
	if currency == "EUR" {
		return &restbackend.BankAccount{IBAN: "SK3112000000198742637541", BIC: swift, AccountNumber: "198742637541", BankCode: "1200", AccountName: "SANDBOX PAYER"}
	}
	return &restbackend.BankAccount{IBAN: "CZ6508000000192000145399", BIC: swift, PrefixNumber: "19", AccountNumber: "2000145399", BankCode: "0800", AccountName: "SANDBOX PAYER"}
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
