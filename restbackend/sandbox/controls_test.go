package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

// The official SDKs send numbers and booleans as strings, vat_rate as an
// integer and ean as a string; the reply carries real numbers.
func TestLenientInput(t *testing.T) {
	e := newEnv(t)
	body := `{"target":{"type":"ACCOUNT","goid":"8123456789"},"amount":"1900","currency":"CZK","order_number":"L-1",
	 "preauthorization":"true","lang":"cs",
	 "items":[{"type":"ITEM","name":"a","amount":"1500","count":"2","vat_rate":21,"ean":"1234567890123"},
	          {"type":"ITEM","name":"b","amount":400,"count":1,"vat_rate":"15","ean":1234567890189}],
	 "callback":{"return_url":"https://shop.example/r","notification_url":"https://shop.example/n"}}`
	st, b := e.call(http.MethodPost, "/api/payments/payment", body)
	require.Equal(t, http.StatusOK, st, string(b))
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	assert.Equal(t, float64(1900), raw["amount"], "a real number in the reply")
	assert.Equal(t, float64(testGoID), raw["target"].(map[string]any)["goid"])
	assert.Equal(t, true, raw["preauthorization"].(map[string]any)["requested"])

	rec := `{"target":{"type":"ACCOUNT","goid":8123456789},"amount":100,"currency":"CZK","order_number":"L-2",
	 "recurrence":{"recurrence_cycle":"WEEK","recurrence_period":"7","recurrence_date_to":"2100-04-01"},
	 "callback":{"return_url":"https://shop.example/r"}}`
	st, b = e.call(http.MethodPost, "/api/payments/payment", rec)
	require.Equal(t, http.StatusOK, st, string(b))
	require.NoError(t, json.Unmarshal(b, &raw))
	assert.Equal(t, float64(7), raw["recurrence"].(map[string]any)["recurrence_period"])
}

// Strict where the gateway is strict: bad strings, unknown fields, wrong
// enums, items that do not add up.
func TestStrictInput(t *testing.T) {
	e := newEnv(t)
	base := func(extra string) string {
		return `{"target":{"type":"ACCOUNT","goid":8123456789},"currency":"CZK","order_number":"S-1",` +
			`"callback":{"return_url":"https://shop.example/r"},` + extra + `}`
	}
	for _, tc := range []struct {
		name, body string
		code       int
		field      string
	}{
		{"amount not a number", base(`"amount":"12a"`), codeWrongFormat, "amount"},
		{"amount a fraction", base(`"amount":12.5`), codeWrongFormat, "amount"},
		{"goid not a number", strings.Replace(base(`"amount":1`), `"goid":8123456789`, `"goid":"abc"`, 1), codeWrongFormat, "target.goid"},
		{"preauthorization not a boolean", base(`"amount":1,"preauthorization":"yes"`), codeWrongFormat, "preauthorization"},
		{"unknown field", base(`"amount":1,"colour":"red"`), codeWrongFormat, "colour"},
		{"ean not a number", base(`"amount":5,"items":[{"name":"a","amount":5,"ean":"12x"}]`), codeWrongFormat, "items[0].ean"},
		{"items do not add up", base(`"amount":5,"items":[{"name":"a","amount":4}]`), codeItemsMismatch, "items"},
		{"wrong enum", base(`"amount":1,"items":[{"name":"a","amount":1,"type":"GIFT"}]`), codeWrongFormat, "items[0].type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := e.with(t).call(http.MethodPost, "/api/payments/payment", tc.body)
			e.with(t).refusal(st, b, http.StatusConflict, tc.code, tc.field)
		})
	}
}

func TestJSONRefundWithEETAndFiscalCodes(t *testing.T) {
	e := newEnv(t)
	p := e.create(func(r *restbackend.PaymentRequest) {
		r.Amount = 139950
		r.Items = []restbackend.Item{{Type: "ITEM", Name: "PC", Amount: 119990, Count: 1}, {Type: "ITEM", Name: "Fix", Amount: 19960, Count: 1}}
		r.EET = &restbackend.EET{CelkTrzba: 139950, ZaklDan1: 99165, Dan1: 20825, ZaklDan2: 17357, Dan2: 2603, Mena: "CZK"}
	})
	st, b := e.call(http.MethodGet, "/api/payments/payment/"+itoa(p.ID), nil)
	require.Equal(t, http.StatusOK, st)
	assert.NotContains(t, string(b), "eet_code", "no fiscal codes before the sale")
	e.mustHelper(p.ID, "pay", nil)
	_, b = e.call(http.MethodGet, "/api/payments/payment/"+itoa(p.ID), nil)
	var s struct {
		EETCode eetCode `json:"eet_code"`
	}
	require.NoError(t, json.Unmarshal(b, &s))
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-ff$`, s.EETCode.FIK)
	assert.Regexp(t, `^[0-9a-f]{8}(-[0-9a-f]{8}){4}$`, s.EETCode.BKP)
	assert.Len(t, s.EETCode.PKP, 344, "base64 of 256 bytes")

	refund := `{"amount":"19960","items":[{"type":"ITEM","name":"Fix","amount":"19960","count":"1","vat_rate":15,"ean":"1234567890189"}],
	 "eet":{"celk_trzba":19960,"zakl_dan2":17357,"dan2":2603,"mena":"CZK"}}`
	st, b = e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/refund", refund)
	require.Equal(t, http.StatusOK, st, string(b))
	assert.Equal(t, restbackend.StatePartiallyRefunded, e.status(p.ID).State)
}

// A partial capture of an EET merchant carries the captured sale's eet, as
// the gateway's documentation example (partial_preauthorized_capture_eet)
// sends it: accepted and FINISHED, the hold settled at the captured amount,
// both as the example's raw body and as the REST client sends it. Its eet
// is still checked: a field the interface does not name is refused.
func TestPartialCaptureWithEET(t *testing.T) {
	e := newEnv(t)
	preauth := func(r *restbackend.PaymentRequest) {
		r.Preauthorization = true
		r.Items = []restbackend.Item{{Type: "ITEM", Name: "Kniha", Amount: 1000, Count: 1, VatRate: "21"}}
		r.EET = &restbackend.EET{CelkTrzba: 1000, ZaklDan1: 826, Dan1: 174, Mena: "CZK"}
	}

	q := e.create(preauth)
	e.mustHelper(q.ID, "pay", nil)
	example := `{"amount":500,"items":[{"type":"ITEM","name":"Kniha","amount":500,"count":1,"vat_rate":"21"}],` +
		`"eet":{"celk_trzba":500,"zakl_dan1":413,"dan1":87,"mena":"CZK"}}`
	st, b := e.call(http.MethodPost, "/api/payments/payment/"+itoa(q.ID)+"/capture", example)
	require.Equal(t, http.StatusOK, st, string(b))
	assert.JSONEq(t, `{"id":`+itoa(q.ID)+`,"result":"FINISHED"}`, string(b))
	got := e.status(q.ID)
	assert.Equal(t, restbackend.StatePaid, got.State)
	assert.Equal(t, int64(500), got.Amount, "the captured part")

	c := e.create(preauth)
	e.mustHelper(c.ID, "pay", nil)
	client := restbackend.New(restbackend.Config{BaseURL: e.srv.URL + "/api"})
	res, err := client.Capture(context.Background(), restbackend.Credentials{ClientID: testID, ClientSecret: testSecret}, c.ID,
		&restbackend.CaptureRequest{Amount: 600, Items: []restbackend.Item{{Type: "ITEM", Name: "Kniha", Amount: 600, Count: 1}},
			EET: &restbackend.EET{CelkTrzba: 600, ZaklDan1: 496, Dan1: 104, Mena: "CZK"}})
	require.NoError(t, err)
	assert.Equal(t, restbackend.ResultFinished, res.Result)
	assert.Equal(t, int64(600), e.status(c.ID).Amount)

	r := e.create(preauth)
	e.mustHelper(r.ID, "pay", nil)
	st, b = e.call(http.MethodPost, "/api/payments/payment/"+itoa(r.ID)+"/capture", `{"amount":500,"eet":{"celk_trzba":500,"dan3":0,"mena":"CZK"}}`)
	e.refusal(st, b, http.StatusConflict, codeWrongFormat, "dan3")
	assert.Equal(t, restbackend.StateAuthorized, e.status(r.ID).State, "a refused capture takes nothing")
}

// EET data goes where the interface puts it and nowhere else: an on-demand
// follow-up shows the eet it was sent (not its parent's), fields the
// interface does not name are refused, not dropped.
func TestEETKeptOrRefused(t *testing.T) {
	e := newEnv(t)
	parentEET := &restbackend.EET{CelkTrzba: 1000, ZaklDan1: 826, Dan1: 174, Mena: "CZK"}
	p := e.create(func(r *restbackend.PaymentRequest) {
		recurring(restbackend.CycleOnDemand, 0, "")(r)
		r.EET = parentEET
	})
	assert.Equal(t, parentEET, p.EET)
	e.mustHelper(p.ID, "pay", nil)

	follow := restbackend.RecurrenceRequest{Amount: 500, Currency: "CZK", OrderNumber: "EET-2", Items: []restbackend.Item{{Name: "refill", Amount: 500, Count: 1}},
		EET: &restbackend.EET{CelkTrzba: 500, ZaklDan2: 435, Dan2: 65, Mena: "CZK"}}
	var ch restbackend.Payment
	st, b := e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/create-recurrence", follow)
	require.Equal(t, http.StatusOK, st, string(b))
	require.NoError(t, json.Unmarshal(b, &ch))
	assert.Equal(t, follow.EET, ch.EET, "the follow-up's own fiscal data")
	assert.Equal(t, follow.EET, e.status(ch.ID).EET)
	follow.OrderNumber, follow.EET = "EET-3", nil
	st, b = e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/create-recurrence", follow)
	require.Equal(t, http.StatusOK, st, string(b))
	var ch2 restbackend.Payment
	require.NoError(t, json.Unmarshal(b, &ch2))
	assert.Nil(t, ch2.EET, "no eet sent, none shown (the parent's amounts are not this sale's)")

	for _, field := range []string{"zakl_nepodl_dph", "zakl_dan3", "dan3"} {
		body := `{"target":{"type":"ACCOUNT","goid":8123456789},"amount":100,"currency":"CZK","order_number":"EET-4",` +
			`"callback":{"return_url":"https://shop.example/r"},"eet":{"celk_trzba":100,"` + field + `":0,"mena":"CZK"}}`
		st, b := e.call(http.MethodPost, "/api/payments/payment", body)
		e.refusal(st, b, http.StatusConflict, codeWrongFormat, field)
	}
}

func TestCardTokens(t *testing.T) {
	e := newEnv(t)
	body := `{"target":{"type":"ACCOUNT","goid":8123456789},"amount":100,"currency":"CZK","order_number":"T-1",
	 "payer":{"allowed_payment_instruments":["PAYMENT_CARD"],"request_card_token":true},"callback":{"return_url":"https://shop.example/r"}}`
	st, b := e.call(http.MethodPost, "/api/payments/payment", body)
	require.Equal(t, http.StatusOK, st, string(b))
	var p restbackend.Payment
	require.NoError(t, json.Unmarshal(b, &p))
	assert.Nil(t, p.Payer.PaymentCard, "no card before paying")
	e.mustHelper(p.ID, "pay", nil)
	tok := e.status(p.ID).Payer.PaymentCard.CardToken
	require.NotEmpty(t, tok)

	st, b = e.call(http.MethodGet, "/api/payments/cards/"+tok, nil)
	require.Equal(t, http.StatusOK, st, string(b))
	var c cardView
	require.NoError(t, json.Unmarshal(b, &c))
	assert.Equal(t, tok, c.CardToken)
	assert.Equal(t, "418803******0003", c.MaskedPAN)
	assert.Equal(t, "ACTIVE", c.Status)

	other := e.getToken("other-client", "other-secret", restbackend.ScopePaymentAll)
	st, _ = e.callAs(other, http.MethodGet, "/api/payments/cards/"+tok, nil)
	assert.Equal(t, http.StatusForbidden, st)

	st, _ = e.call(http.MethodDelete, "/api/payments/cards/"+tok, nil)
	assert.Equal(t, http.StatusNoContent, st)
	st, b = e.call(http.MethodGet, "/api/payments/cards/"+tok, nil)
	e.refusal(st, b, http.StatusNotFound, codeNotFound, "")
}

func TestInstrumentsForAllCurrencies(t *testing.T) {
	e := newEnv(t)
	st, b := e.call(http.MethodGet, "/api/eshops/eshop/8123456789/payment-instruments", nil)
	require.Equal(t, http.StatusOK, st, string(b))
	var all map[string]restbackend.InstrumentList
	require.NoError(t, json.Unmarshal(b, &all))
	assert.Len(t, all, len(currencies))
	assert.NotEmpty(t, all["EUR"].EnabledPaymentInstruments)
	st, _ = e.call(http.MethodGet, "/api/eshops/eshop/8999999999/payment-instruments", nil)
	assert.Equal(t, http.StatusForbidden, st)
}

// postResult posts op and returns the result whatever it is.
func (e *env) postResult(id int64, op string, body any) string {
	e.t.Helper()
	st, b := e.call(http.MethodPost, "/api/payments/payment/"+itoa(id)+"/"+op, body)
	require.Equal(e.t, http.StatusOK, st, string(b))
	var r restbackend.Result
	require.NoError(e.t, json.Unmarshal(b, &r))
	return r.Result
}

func (e *env) history(id int64) []restbackend.Refund {
	e.t.Helper()
	st, b := e.call(http.MethodGet, "/api/payments/payment/"+itoa(id)+"/refunds", nil)
	require.Equal(e.t, http.StatusOK, st, string(b))
	var h []restbackend.Refund
	require.NoError(e.t, json.Unmarshal(b, &h))
	return h
}

func TestMagicValues(t *testing.T) {
	e := newEnv(t)
	withAmount := func(n int64) func(*restbackend.PaymentRequest) {
		return func(r *restbackend.PaymentRequest) { r.Amount = n }
	}
	t.Run("create refused", func(t *testing.T) {
		st, b := e.with(t).call(http.MethodPost, "/api/payments/payment", func() any { r := e.baseRequest(); r.Amount = magicCreateRefused; return r }())
		e.with(t).refusal(st, b, http.StatusConflict, codeCreateFailed, "")
	})
	for _, tc := range []struct {
		name string
		mod  func(*restbackend.PaymentRequest)
		a    Action
		sub  string
	}{
		{"amount declines", withAmount(magicCardDeclined), Action{}, "_5006"},
		{"amount fails 3-D Secure", withAmount(magicCard3DSFailed), Action{}, "_5009"},
		{"amount refuses the bank", withAmount(magicBankRefused), Action{Swift: "KOMBCZPP"}, "_3003"},
		{"card number: expired", nil, Action{Card: "4000000000000069"}, "_5004"},
		{"card number: 3-D Secure", nil, Action{Card: "4000000000003063"}, "_5009"},
		{"order number names the sub-state", func(r *restbackend.PaymentRequest) { r.OrderNumber = "DECLINE_5015-42" }, Action{}, "_5015"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			p := e.create(tc.mod)
			e.mustHelper(p.ID, "pay", tc.a)
			s := e.status(p.ID)
			assert.Equal(t, restbackend.StateCanceled, s.State)
			assert.Equal(t, tc.sub, s.SubState)
		})
	}
	preauth := func(r *restbackend.PaymentRequest) { r.Preauthorization = true; r.Amount = 100000 }
	t.Run("capture ACCEPTED, then PAID", func(t *testing.T) {
		e := e.with(t)
		p := e.create(preauth)
		e.mustHelper(p.ID, "pay", nil)
		assert.Equal(t, restbackend.ResultAccepted, e.postResult(p.ID, "capture", restbackend.CaptureRequest{Amount: magicCaptureAccepted}))
		assert.Equal(t, restbackend.StateAuthorized, e.status(p.ID).State)
		st, _ := e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/capture", nil)
		assert.Equal(t, http.StatusConflict, st, "no second capture while one is pending")
		e.clock.Advance(acceptedDelay - time.Second)
		assert.Equal(t, restbackend.StateAuthorized, e.status(p.ID).State, "still pending")
		e.clock.Advance(time.Second)
		s := e.status(p.ID)
		assert.Equal(t, restbackend.StatePaid, s.State)
		assert.EqualValues(t, magicCaptureAccepted, s.Amount)
	})
	t.Run("capture FAILED keeps the hold", func(t *testing.T) {
		e := e.with(t)
		p := e.create(preauth)
		e.mustHelper(p.ID, "pay", nil)
		assert.Equal(t, restbackend.ResultFailed, e.postResult(p.ID, "capture", restbackend.CaptureRequest{Amount: magicCaptureFailed}))
		e.clock.Advance(0)
		assert.Equal(t, restbackend.StateAuthorized, e.status(p.ID).State)
	})
	t.Run("refund ACCEPTED, FAILED, no funds", func(t *testing.T) {
		e := e.with(t)
		p := e.create(withAmount(100000))
		e.mustHelper(p.ID, "pay", nil)
		assert.Equal(t, restbackend.ResultFailed, e.postResult(p.ID, "refund", amount(magicRefundFailed)))
		assert.Equal(t, restbackend.StatePaid, e.status(p.ID).State)
		st, b := e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/refund", amount(magicRefundNoFunds))
		e.refusal(st, b, http.StatusConflict, codeRefundNoFunds, "")
		assert.Equal(t, restbackend.ResultAccepted, e.postResult(p.ID, "refund", amount(magicRefundAccepted)))
		h := e.history(p.ID)
		require.Len(t, h, 2)
		assert.Equal(t, "FAILED", h[0].State)
		assert.Equal(t, "REQUESTED", h[1].State)
		assert.Equal(t, restbackend.StatePaid, e.status(p.ID).State)
		e.clock.Advance(acceptedDelay)
		assert.Equal(t, "SUCCESS", e.history(p.ID)[1].State)
		assert.Equal(t, restbackend.StatePartiallyRefunded, e.status(p.ID).State)
	})
	t.Run("recurring charge declined or refused", func(t *testing.T) {
		e := e.with(t)
		p := e.create(recurring("ON_DEMAND", 0, ""))
		e.mustHelper(p.ID, "pay", nil)
		path := "/api/payments/payment/" + itoa(p.ID) + "/create-recurrence"
		st, b := e.call(http.MethodPost, path, restbackend.RecurrenceRequest{Amount: magicRecurrenceRefused, Currency: "CZK", OrderNumber: "R-1"})
		e.refusal(st, b, http.StatusConflict, codeRecurrenceFailed, "")
		assert.Contains(t, string(b), "PAYMENT_RECURRENCE_FAILED")
		st, b = e.call(http.MethodPost, path, restbackend.RecurrenceRequest{Amount: magicRecurrenceDeclined, Currency: "CZK", OrderNumber: "R-2"})
		require.Equal(t, http.StatusOK, st, string(b))
		e.clock.Advance(0)
		kids := e.children(p.ID)
		require.Len(t, kids, 1)
		assert.Equal(t, restbackend.StateCanceled, kids[0].State)
		assert.Equal(t, "_5006", kids[0].SubState)
		assert.Equal(t, "STARTED", e.status(p.ID).Recurrence.RecurrenceState, "one declined charge does not stop the recurrence")
	})
}

// Each fault kind: the client sees it, and the counters tell whether the
// gateway acted (performed the refund) before it.
func TestFaults(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		kind     FaultKind
		clientOK bool // the client gets a usable 200 reply
	}{
		{FaultSlow, true}, {FaultFail, false}, {FaultReset, false}, {FaultResetAfter, false}, {FaultTruncateAfter, false},
		{FaultMalformedAfter, false}, {Fault502After, false}, {FaultDelayAfter, true}, {FaultWrongIDAfter, false},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			e := e.with(t)
			p := e.create(nil)
			e.mustHelper(p.ID, "pay", nil)
			path := "/api/payments/payment/" + itoa(p.ID) + "/refund"
			require.NoError(t, e.g.InjectFault(Fault{Method: "POST", Path: "/api/payments/payment/*/refund", Kind: tc.kind, Delay: Duration(20 * time.Millisecond)}))
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(amount(100).Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Authorization", "Bearer "+e.token)
			resp, err := http.DefaultClient.Do(req)
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			usable := false
			if err == nil && resp.StatusCode == http.StatusOK {
				var r restbackend.Result
				usable = json.Unmarshal(body, &r) == nil && r.ID == p.ID
			}
			assert.Equal(t, tc.clientOK, usable, "err=%v body=%q", err, body)
			stats := e.g.Stats()
			assert.Equal(t, 1, stats.Posts[path], "one POST received")
			want := 0
			if tc.kind.Acts() {
				want = 1
			}
			assert.Equal(t, want, stats.Acted[path], "acted")
			assert.Equal(t, tc.kind.Acts(), e.status(p.ID).State == restbackend.StatePartiallyRefunded)
			assert.Empty(t, e.g.Faults(), "a one-call fault is used up")
		})
	}
}

func TestFaultHelperEndpoint(t *testing.T) {
	e := newEnv(t)
	post := func(body string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/sandbox/faults", strings.NewReader(body))
		return e.send(req)
	}
	st, b := post(`{"method":"GET","path":"/api/payments/payment/*","kind":"fail","status":503,"times":2}`)
	require.Equal(t, http.StatusOK, st, string(b))
	p := e.create(nil)
	for range 2 {
		st, b = e.call(http.MethodGet, "/api/payments/payment/"+itoa(p.ID), nil)
		assert.Equal(t, http.StatusServiceUnavailable, st)
		assert.Equal(t, codeSystem, errorBody(t, b).Errors[0].ErrorCode)
	}
	st, _ = e.call(http.MethodGet, "/api/payments/payment/"+itoa(p.ID), nil)
	assert.Equal(t, http.StatusOK, st, "two calls only")

	for _, bad := range []string{`{"path":"/api/x","kind":"explode"}`, `{"path":"x","kind":"fail"}`, `{"path":"/api/x","kind":"fail","status":404}`,
		`{"path":"/api/x","kind":"slow","delay":"soon"}`, `{"path":"/sandbox/stats","kind":"fail"}`, `{"path":"/api/x","kind":"fail","extra":1}`} {
		st, b = post(bad)
		assert.Equal(t, http.StatusBadRequest, st, bad)
		assert.NotEmpty(t, errorBody(t, b).Errors[0].Message)
	}
	st, _ = post(`{"path":"/api/*","kind":"reset","times":5}`)
	require.Equal(t, http.StatusOK, st)
	req, _ := http.NewRequest(http.MethodDelete, e.srv.URL+"/sandbox/faults", nil)
	st, _ = e.send(req)
	require.Equal(t, http.StatusOK, st)
	assert.Empty(t, e.g.Faults())

	st, b = e.send(func() *http.Request {
		r, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/sandbox/stats", nil)
		return r
	}())
	require.Equal(t, http.StatusOK, st)
	var s Stats
	require.NoError(t, json.Unmarshal(b, &s))
	assert.Equal(t, 1, s.Posts["/api/payments/payment"])
	assert.Equal(t, 1, s.Acted["/api/payments/payment"])
}

// A sandbox with a state file restarts with its payments, cards and ids.
func TestStateFileSurvivesRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sandbox.json")
	opt := func(o *Options) { o.StateFile = file }
	e := newEnv(t, opt)
	p := e.create(func(r *restbackend.PaymentRequest) { r.Payer.VerifyPin = "1234" })
	e.mustHelper(p.ID, "pay", nil)
	e.mustPost(p.ID, "refund", amount(300))
	tok := e.status(p.ID).Payer.PaymentCard.CardToken
	require.NotEmpty(t, tok)
	before := e.status(p.ID)
	e.srv.Close()
	e.g.Close()

	again := newEnv(t, opt)
	after := again.status(p.ID)
	assert.Equal(t, before, after)
	assert.Len(t, again.history(p.ID), 1)
	st, _ := again.call(http.MethodGet, "/api/payments/cards/"+tok, nil)
	assert.Equal(t, http.StatusOK, st, "stored cards survive")
	assert.Equal(t, p.ID+1, again.create(nil).ID, "ids continue")
	again.mustPost(p.ID, "refund", amount(700))
	assert.Equal(t, restbackend.StateRefunded, again.status(p.ID).State)

	// A file it cannot read is reported and left alone.
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, writeAtomic(bad, []byte("{not json")))
	g, err := Open(Options{StateFile: bad, Clock: NewManualClock(t0)})
	defer g.Close()
	var se *json.SyntaxError
	assert.True(t, errors.As(err, &se), "%v", err)
}
