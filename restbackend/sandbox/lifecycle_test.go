package sandbox

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

func (e *env) post(id int64, op string, body any) (int, restbackend.Result, []byte) {
	e.t.Helper()
	st, b := e.call(http.MethodPost, "/api/payments/payment/"+itoa(id)+"/"+op, body)
	var r restbackend.Result
	if st == http.StatusOK {
		require.NoError(e.t, json.Unmarshal(b, &r), string(b))
		assert.Equal(e.t, id, r.ID)
		assert.Equal(e.t, restbackend.ResultFinished, r.Result)
	}
	return st, r, b
}

func (e *env) mustPost(id int64, op string, body any) {
	e.t.Helper()
	st, _, b := e.post(id, op, body)
	require.Equal(e.t, http.StatusOK, st, string(b))
}

// refusal asserts a 409 (or status) whose first error has code and field.
func (e *env) refusal(st int, body []byte, wantStatus, code int, field string) {
	e.t.Helper()
	require.Equal(e.t, wantStatus, st, string(body))
	eb := errorBody(e.t, body)
	assert.Equal(e.t, code, eb.Errors[0].ErrorCode, string(body))
	assert.Equal(e.t, field, eb.Errors[0].Field, string(body))
	if field != "" {
		assert.Equal(e.t, "F", eb.Errors[0].Scope)
	}
	assert.NotEmpty(e.t, eb.Errors[0].Message)
}

func amount(n int64) url.Values { return url.Values{"amount": {itoa(n)}} }

func TestLifeCycle(t *testing.T) {
	preauth := func(r *restbackend.PaymentRequest) { r.Preauthorization = true }
	type want struct {
		state, sub, instrument string
		amount                 int64
		preauth                string // preauthorization.state, "" when none
	}
	cases := []struct {
		name   string
		create func(*restbackend.PaymentRequest)
		run    func(e *env, id int64)
		want   want
	}{
		{"created", nil, func(*env, int64) {}, want{restbackend.StateCreated, "", "", 1000, ""}},
		{"card success", nil, func(e *env, id int64) { e.mustHelper(id, "pay", Action{Outcome: OutcomeSuccess}) },
			want{restbackend.StatePaid, "", "PAYMENT_CARD", 1000, ""}},
		{"card declined", nil, func(e *env, id int64) { e.mustHelper(id, "pay", Action{Outcome: OutcomeDeclined}) },
			want{restbackend.StateCanceled, "_5006", "PAYMENT_CARD", 1000, ""}},
		{"3-D Secure failed", nil, func(e *env, id int64) { e.mustHelper(id, "pay", Action{Outcome: Outcome3DSFailed}) },
			want{restbackend.StateCanceled, "_5009", "PAYMENT_CARD", 1000, ""}},
		{"bank button", nil, func(e *env, id int64) {
			e.mustHelper(id, "pay", Action{Instrument: "BANK_ACCOUNT", Swift: "KOMBCZPP"})
		}, want{restbackend.StatePaid, "_3001", "BANK_ACCOUNT", 1000, ""}},
		{"bank refused", nil, func(e *env, id int64) {
			e.mustHelper(id, "pay", Action{Instrument: "BANK_ACCOUNT", Swift: "FIOBCZPP", Outcome: OutcomeDeclined})
		}, want{restbackend.StateCanceled, "_3003", "BANK_ACCOUNT", 1000, ""}},
		{"wallet", nil, func(e *env, id int64) { e.mustHelper(id, "pay", Action{Instrument: "PAYPAL"}) },
			want{restbackend.StatePaid, "", "PAYPAL", 1000, ""}},
		{"offline transfer waiting", nil, func(e *env, id int64) { e.mustHelper(id, "wait", nil) },
			want{restbackend.StatePaymentMethodChosen, "_102", "BANK_ACCOUNT", 1000, ""}},
		{"online method waiting", nil, func(e *env, id int64) { e.mustHelper(id, "wait", Action{Swift: "GIBACZPX"}) },
			want{restbackend.StatePaymentMethodChosen, "_101", "BANK_ACCOUNT", 1000, ""}},
		{"transfer arrives", nil, func(e *env, id int64) {
			e.mustHelper(id, "wait", nil)
			e.mustHelper(id, "pay", nil)
		}, want{restbackend.StatePaid, "_3001", "BANK_ACCOUNT", 1000, ""}},
		{"customer cancels", nil, func(e *env, id int64) { e.mustHelper(id, "cancel", nil) },
			want{restbackend.StateCanceled, "", "", 1000, ""}},
		{"unpaid not yet timed out", nil, func(e *env, id int64) { e.clock.Advance(unpaidTimeout - time.Second) },
			want{restbackend.StateCreated, "", "", 1000, ""}},
		{"unpaid timeout after 7 days", nil, func(e *env, id int64) { e.clock.Advance(unpaidTimeout) },
			want{restbackend.StateTimeouted, "", "", 1000, ""}},
		{"waiting transfer times out", nil, func(e *env, id int64) {
			e.mustHelper(id, "wait", nil)
			e.clock.Advance(unpaidTimeout)
		}, want{restbackend.StateTimeouted, "", "BANK_ACCOUNT", 1000, ""}},
		{"refund partial", nil, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			e.mustPost(id, "refund", amount(400))
		}, want{restbackend.StatePartiallyRefunded, "", "PAYMENT_CARD", 1000, ""}},
		{"refund whole in two parts", nil, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			e.mustPost(id, "refund", amount(400))
			st, _, b := e.post(id, "refund", amount(601))
			e.refusal(st, b, http.StatusConflict, codeRefundWrongAmount, "amount")
			e.mustPost(id, "refund", amount(600))
			st, _, b = e.post(id, "refund", amount(1))
			e.refusal(st, b, http.StatusConflict, codeRefundFailed, "")
		}, want{restbackend.StateRefunded, "", "PAYMENT_CARD", 1000, ""}},
		{"preauthorized", preauth, func(e *env, id int64) { e.mustHelper(id, "pay", nil) },
			want{restbackend.StateAuthorized, "", "PAYMENT_CARD", 1000, "AUTHORIZED"}},
		{"capture whole", preauth, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			e.mustPost(id, "capture", nil)
		}, want{restbackend.StatePaid, "", "PAYMENT_CARD", 1000, "CAPTURED"}},
		{"capture part, rest released", preauth, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			e.mustPost(id, "capture", restbackend.CaptureRequest{Amount: 600})
		}, want{restbackend.StatePaid, "", "PAYMENT_CARD", 600, "CAPTURED"}},
		{"capture by items", preauth, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			e.mustPost(id, "capture", restbackend.CaptureRequest{Items: []restbackend.Item{{Name: "a", Amount: 300}, {Name: "b", Amount: 200}}})
		}, want{restbackend.StatePaid, "", "PAYMENT_CARD", 500, "CAPTURED"}},
		{"capture above authorized refused", preauth, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			st, _, b := e.post(id, "capture", restbackend.CaptureRequest{Amount: 1001})
			e.refusal(st, b, http.StatusConflict, codeCaptureFailed, "amount")
		}, want{restbackend.StateAuthorized, "", "PAYMENT_CARD", 1000, "AUTHORIZED"}},
		{"void authorization", preauth, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			e.mustPost(id, "void-authorization", url.Values{})
		}, want{restbackend.StateCanceled, "", "PAYMENT_CARD", 1000, "CANCELED"}},
		{"authorization holds 4 days", preauth, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			e.clock.Advance(authorizationTT - time.Second)
		}, want{restbackend.StateAuthorized, "", "PAYMENT_CARD", 1000, "AUTHORIZED"}},
		{"authorization lapses after 4 days", preauth, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			e.clock.Advance(authorizationTT)
			st, _, b := e.post(id, "capture", nil)
			e.refusal(st, b, http.StatusConflict, codeCaptureFailed, "")
			st, _, b = e.post(id, "void-authorization", nil)
			e.refusal(st, b, http.StatusConflict, codeVoidAuthFailed, "")
		}, want{restbackend.StateCanceled, "", "PAYMENT_CARD", 1000, "CANCELED"}},
		{"capture twice: 351, void after void: 353", preauth, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			e.mustPost(id, "capture", restbackend.CaptureRequest{Amount: 500})
			st, _, b := e.post(id, "capture", nil)
			e.refusal(st, b, http.StatusConflict, codeCaptureDone, "")
			assert.Contains(e.t, string(b), "PAYMENT_CAPTURE_DONE")
		}, want{restbackend.StatePaid, "", "PAYMENT_CARD", 500, "CAPTURED"}},
		{"void twice: 353", preauth, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			e.mustPost(id, "void-authorization", nil)
			st, _, b := e.post(id, "void-authorization", nil)
			e.refusal(st, b, http.StatusConflict, codeVoidAuthDone, "")
		}, want{restbackend.StateCanceled, "", "PAYMENT_CARD", 1000, "CANCELED"}},
		{"preauthorization declined", preauth, func(e *env, id int64) { e.mustHelper(id, "pay", Action{Outcome: OutcomeDeclined}) },
			want{restbackend.StateCanceled, "_5006", "PAYMENT_CARD", 1000, "CANCELED"}},
		{"preauthorized customer cancels", preauth, func(e *env, id int64) { e.mustHelper(id, "cancel", nil) },
			want{restbackend.StateCanceled, "", "", 1000, "CANCELED"}},
		{"refund of unpaid refused", nil, func(e *env, id int64) {
			st, _, b := e.post(id, "refund", amount(100))
			e.refusal(st, b, http.StatusConflict, codeRefundNotSupported, "")
			assert.Contains(e.t, string(b), "PAYMENT_REFUND_NOT_SUPPORTED")
		}, want{restbackend.StateCreated, "", "", 1000, ""}},
		{"refund of authorized refused", preauth, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			st, _, b := e.post(id, "refund", amount(100))
			e.refusal(st, b, http.StatusConflict, codeRefundNotSupported, "")
		}, want{restbackend.StateAuthorized, "", "PAYMENT_CARD", 1000, "AUTHORIZED"}},
		{"capture of a plain payment refused", nil, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			st, _, b := e.post(id, "capture", nil)
			e.refusal(st, b, http.StatusConflict, codeCaptureFailed, "")
			st, _, b = e.post(id, "void-authorization", nil)
			e.refusal(st, b, http.StatusConflict, codeVoidAuthFailed, "")
		}, want{restbackend.StatePaid, "", "PAYMENT_CARD", 1000, ""}},
		{"paying twice refused", nil, func(e *env, id int64) {
			e.mustHelper(id, "pay", nil)
			st, b := e.helper(id, "pay", nil)
			e.refusal(st, b, http.StatusConflict, codeWrongState, "")
			st, b = e.helper(id, "cancel", nil)
			e.refusal(st, b, http.StatusConflict, codeWrongState, "")
		}, want{restbackend.StatePaid, "", "PAYMENT_CARD", 1000, ""}},
		{"preauthorization by bank refused", preauth, func(e *env, id int64) {
			st, b := e.helper(id, "pay", Action{Instrument: "BANK_ACCOUNT", Swift: "KOMBCZPP"})
			e.refusal(st, b, http.StatusConflict, codeWrongFormat, "instrument")
		}, want{restbackend.StateCreated, "", "", 1000, "REQUESTED"}},
		{"instrument not allowed refused", func(r *restbackend.PaymentRequest) {
			r.Payer.AllowedPaymentInstruments = []string{"BANK_ACCOUNT"}
			r.Payer.AllowedSwifts = []string{"FIOBCZPP"}
		}, func(e *env, id int64) {
			st, b := e.helper(id, "pay", Action{Instrument: "PAYMENT_CARD"})
			e.refusal(st, b, http.StatusConflict, codeWrongFormat, "instrument")
			st, b = e.helper(id, "pay", Action{Swift: "KOMBCZPP"})
			e.refusal(st, b, http.StatusConflict, codeWrongFormat, "swift")
			st, b = e.helper(id, "pay", Action{Swift: "TATRSKBX"})
			e.refusal(st, b, http.StatusConflict, codeWrongFormat, "swift")
			e.mustHelper(id, "pay", Action{Swift: "FIOBCZPP"})
		}, want{restbackend.StatePaid, "_3001", "BANK_ACCOUNT", 1000, ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			p := e.create(tc.create)
			require.Equal(t, restbackend.StateCreated, p.State)
			tc.run(e, p.ID)
			s := e.status(p.ID)
			assert.Equal(t, tc.want.state, s.State, "state")
			assert.Equal(t, tc.want.sub, s.SubState, "sub_state")
			assert.Equal(t, tc.want.instrument, s.PaymentInstrument, "payment_instrument")
			assert.Equal(t, tc.want.amount, s.Amount, "amount")
			if tc.want.preauth == "" {
				assert.Nil(t, s.Preauthorization)
			} else if assert.NotNil(t, s.Preauthorization) {
				assert.True(t, s.Preauthorization.Requested)
				assert.Equal(t, tc.want.preauth, s.Preauthorization.State, "preauthorization.state")
			}
			// Replies always repeat these.
			assert.Equal(t, p.ID, s.ID)
			assert.Equal(t, "OBJ-1", s.OrderNumber)
			assert.Equal(t, "CZK", s.Currency)
			assert.Equal(t, "CS", s.Lang)
			assert.Equal(t, p.GwURL, s.GwURL)
			assert.Equal(t, &restbackend.Target{Type: "ACCOUNT", GoID: testGoID}, s.Target)
			assert.Equal(t, []restbackend.AdditionalParam{{Name: "invoice", Value: "2026-001"}}, s.AdditionalParams)
			if s.PaymentInstrument == "PAYMENT_CARD" {
				require.NotNil(t, s.Payer.PaymentCard)
				c := s.Payer.PaymentCard
				assert.Equal(t, "418803******0003", c.CardNumber)
				assert.Equal(t, "2912", c.CardExpiration)
				assert.Equal(t, "VISA", c.CardBrand)
				assert.Equal(t, "CZE", c.CardIssuerCountry)
				assert.NotEmpty(t, c.CardIssuerBank)
				assert.NotEmpty(t, c.ThreeDSResult)
				assert.Empty(t, c.CardToken, "only identification payments carry a card token")
			}
			if s.SubState == "_3001" {
				require.NotNil(t, s.Payer.BankAccount)
				assert.NotEmpty(t, s.Payer.BankAccount.IBAN)
			}
		})
	}
}

func TestIdentificationPaymentAndAllowedCardToken(t *testing.T) {
	e := newEnv(t)
	p := e.create(func(r *restbackend.PaymentRequest) { r.Payer.VerifyPin = "1234"; r.Amount = 100 })
	e.mustHelper(p.ID, "pay", Action{Card: "5555444433331111"})
	s := e.status(p.ID)
	require.Equal(t, restbackend.StatePaid, s.State)
	require.NotNil(t, s.Payer.PaymentCard)
	tok := s.Payer.PaymentCard.CardToken
	require.NotEmpty(t, tok)
	assert.Equal(t, "MASTERCARD", s.Payer.PaymentCard.CardBrand)
	assert.Equal(t, "1234", s.Payer.VerifyPin)
	assert.Equal(t, subCardVerified, s.SubState, "an identification payment's status carries a sub_state")

	// The same card yields the same token within the goid.
	p2 := e.create(func(r *restbackend.PaymentRequest) { r.Payer.VerifyPin = "99" })
	e.mustHelper(p2.ID, "pay", Action{Card: "5555444433331111"})
	assert.Equal(t, tok, e.status(p2.ID).Payer.PaymentCard.CardToken)

	// A follow-up restricted to that card: another card is refused, the token's card pays.
	f := e.create(func(r *restbackend.PaymentRequest) { r.Payer.AllowedCardToken = tok })
	st, b := e.helper(f.ID, "pay", Action{Card: defaultCard})
	e.refusal(st, b, http.StatusConflict, codeWrongFormat, "card")
	e.mustHelper(f.ID, "pay", nil) // no card given: the customer uses the stored one
	fs := e.status(f.ID)
	assert.Equal(t, restbackend.StatePaid, fs.State)
	assert.Empty(t, fs.SubState, "a follow-up payment is no identification payment")
	assert.Equal(t, "555544******1111", fs.Payer.PaymentCard.CardNumber)

	// Another merchant cannot use the token.
	other := e.getToken("other-client", "other-secret", restbackend.ScopePaymentAll)
	r := e.baseRequest()
	r.Target.GoID = otherGoID
	r.Payer.AllowedCardToken = tok
	st, b = e.callAs(other, http.MethodPost, "/api/payments/payment", r)
	e.refusal(st, b, http.StatusConflict, codeWrongFormat, "payer.allowed_card_token")
}

// The gateway's published status example of an identification payment is
// a preauthorized one, AUTHORIZED with sub_state _3002; it stays on capture.
func TestPreauthorizedIdentificationPaymentSubState(t *testing.T) {
	e := newEnv(t)
	p := e.create(func(r *restbackend.PaymentRequest) { r.Payer.VerifyPin = "77"; r.Preauthorization = true })
	assert.Empty(t, e.status(p.ID).SubState, "not before the card is verified")
	e.mustHelper(p.ID, "pay", nil)
	s := e.status(p.ID)
	require.Equal(t, restbackend.StateAuthorized, s.State)
	assert.Equal(t, "_3002", s.SubState)
	assert.NotEmpty(t, s.Payer.PaymentCard.CardToken)
	e.mustPost(p.ID, "capture", nil)
	s = e.status(p.ID)
	require.Equal(t, restbackend.StatePaid, s.State)
	assert.Equal(t, "_3002", s.SubState)

	// A preauthorized payment without verify_pin has none.
	q := e.create(func(r *restbackend.PaymentRequest) { r.Preauthorization = true })
	e.mustHelper(q.ID, "pay", nil)
	assert.Empty(t, e.status(q.ID).SubState)
}

func TestRefundHistory(t *testing.T) {
	e := newEnv(t)
	p := e.create(nil)
	e.mustHelper(p.ID, "pay", nil)
	e.mustPost(p.ID, "refund", amount(250))
	st, b := e.call(http.MethodGet, "/api/payments/payment/"+itoa(p.ID)+"/refunds", nil)
	require.Equal(t, http.StatusOK, st)
	// The shape the official libraries decode, with their strict state enum.
	var rs []map[string]any
	require.NoError(t, json.Unmarshal(b, &rs))
	require.Len(t, rs, 1)
	assert.Equal(t, map[string]any{"id": float64(p.ID*100 + 1), "amount": float64(250), "currency": "CZK", "state": "SUCCESS",
		"date_requested": "2026-03-02T10:00:00.000+0100", "date_last_change": "2026-03-02T10:00:00.000+0100"}, rs[0])
}

func TestPaymentIDsAreTenDigits(t *testing.T) {
	e := newEnv(t)
	a, b := e.create(nil), e.create(nil)
	assert.EqualValues(t, 3000000001, a.ID, "a ManualClock sandbox has fixed ids")
	assert.Equal(t, a.ID+1, b.ID)
	assert.Len(t, itoa(a.ID), 10)
	assert.NotEqual(t, a.GwURL, b.GwURL)
}

// With SeedIDsFromClock the first id comes from the clock: tenths of a second, so a
// restart starts above every id of a run that made fewer than ten payments
// a second, and ids stay ten digits for twenty years.
func TestRealTimeIDsSeededFromTheClock(t *testing.T) {
	before := clockSeed(time.Now())
	g := New(Options{Merchants: []Merchant{{Account: restbackend.Account{GoID: testGoID, ClientID: testID, ClientSecret: testSecret}}}, SeedIDsFromClock: true})
	defer g.Close()
	after := clockSeed(time.Now())
	g.mu.Lock()
	first := g.newID()
	g.mu.Unlock()
	assert.GreaterOrEqual(t, first, before)
	assert.LessOrEqual(t, first, after)

	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	assert.Equal(t, clockSeed(start)+10, clockSeed(start.Add(time.Second)), "ten ids a second of room")
	assert.Len(t, itoa(clockSeed(time.Date(2047, 1, 1, 0, 0, 0, 0, time.UTC))), 10)
}

// IDsAbove keeps the first id above the highest one a kept database holds,
// even when that is ahead of the clock seed (two starts in one tenth of a
// second), and never lowers the clock seed.
func TestIDsAboveAKeptDatabase(t *testing.T) {
	ms := []Merchant{{Account: restbackend.Account{GoID: testGoID, ClientID: testID, ClientSecret: testSecret}}}
	first := func(above int64) int64 {
		g := New(Options{Merchants: ms, SeedIDsFromClock: true, IDsAbove: above})
		defer g.Close()
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.newID()
	}
	ahead := clockSeed(time.Now()) + 1000 // a database ahead of the clock
	assert.Equal(t, ahead+1, first(ahead))
	before := clockSeed(time.Now())
	assert.GreaterOrEqual(t, first(idBase), before, "a lower bound below the clock seed changes nothing")
}
