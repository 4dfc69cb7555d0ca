package sandbox

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

func recurring(cycle string, period int64, dateTo string) func(*restbackend.PaymentRequest) {
	return func(r *restbackend.PaymentRequest) {
		r.Recurrence = &restbackend.Recurrence{RecurrenceCycle: cycle, RecurrencePeriod: period, RecurrenceDateTo: dateTo}
	}
}

// children returns the payments whose parent is id, in creation order.
func (e *env) children(parent int64) []*restbackend.Payment {
	e.t.Helper()
	var ids []int64
	e.g.mu.Lock()
	for _, p := range e.g.order {
		if p.parentID == parent {
			ids = append(ids, p.id)
		}
	}
	e.g.mu.Unlock()
	var out []*restbackend.Payment
	for _, id := range ids {
		out = append(out, e.status(id))
	}
	return out
}

func TestAutomaticRecurrence(t *testing.T) {
	cases := []struct {
		name    string
		cycle   string
		period  int64
		dateTo  string
		advance []time.Duration // successive clock advances
		counts  []int           // children after each advance
	}{
		// Paid 2026-03-02 10:00; charges 03-03 … 03-07 10:00, date_to inclusive.
		{"DAY charges daily until date_to", "DAY", 1, "2026-03-07",
			[]time.Duration{time.Hour, 24 * time.Hour, 2 * 24 * time.Hour, 30 * 24 * time.Hour}, []int{0, 1, 3, 5}},
		{"DAY period 2", "DAY", 2, "2026-03-10",
			[]time.Duration{47 * time.Hour, time.Hour, 30 * 24 * time.Hour}, []int{0, 1, 4}},
		{"WEEK", "WEEK", 1, "2026-03-23",
			[]time.Duration{6 * 24 * time.Hour, 24 * time.Hour, 30 * 24 * time.Hour}, []int{0, 1, 3}},
		// Monthly: 04-02, 05-02, 06-02 (date_to 06-02 inclusive).
		{"MONTH", "MONTH", 1, "2026-06-02",
			[]time.Duration{31 * 24 * time.Hour, 365 * 24 * time.Hour}, []int{1, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			p := e.create(recurring(tc.cycle, tc.period, tc.dateTo))
			require.NotNil(t, p.Recurrence)
			assert.Equal(t, "REQUESTED", p.Recurrence.RecurrenceState)
			e.mustHelper(p.ID, "pay", nil)
			assert.Equal(t, "STARTED", e.status(p.ID).Recurrence.RecurrenceState)
			for i, d := range tc.advance {
				e.clock.Advance(d)
				assert.Len(t, e.children(p.ID), tc.counts[i], "after advance %d", i)
			}
			for _, ch := range e.children(p.ID) {
				assert.Equal(t, restbackend.StatePaid, ch.State)
				assert.Equal(t, p.ID, ch.ParentID)
				assert.EqualValues(t, 1000, ch.Amount)
				assert.Equal(t, "PAYMENT_CARD", ch.PaymentInstrument)
				assert.Equal(t, "OBJ-1", ch.OrderNumber)
				require.NotNil(t, ch.Payer.PaymentCard)
				assert.Nil(t, ch.Recurrence)
			}
			s := e.status(p.ID)
			assert.Equal(t, "STOPPED", s.Recurrence.RecurrenceState, "after date_to")
			assert.Equal(t, restbackend.StatePaid, s.State)
		})
	}
}

func TestVoidRecurrenceStopsCharges(t *testing.T) {
	e := newEnv(t)
	p := e.create(recurring("DAY", 1, "2026-12-31"))
	e.mustHelper(p.ID, "pay", nil)
	e.clock.Advance(2 * 24 * time.Hour)
	require.Len(t, e.children(p.ID), 2)
	e.mustPost(p.ID, "void-recurrence", url.Values{})
	assert.Equal(t, "STOPPED", e.status(p.ID).Recurrence.RecurrenceState)
	e.clock.Advance(5 * 24 * time.Hour)
	assert.Len(t, e.children(p.ID), 2, "no charge after void-recurrence")
	st, _, b := e.post(p.ID, "void-recurrence", nil)
	e.refusal(st, b, http.StatusConflict, codeRecurrenceStopped, "")
	assert.Contains(t, string(b), "PAYMENT_RECURRENCE_STOPPED")

	plain := e.create(nil)
	st, _, b = e.post(plain.ID, "void-recurrence", nil)
	e.refusal(st, b, http.StatusConflict, codeRecurrenceNotAllowed, "")
}

func TestRecurrenceOfFailedPaymentNeverCharges(t *testing.T) {
	e := newEnv(t)
	p := e.create(recurring("DAY", 1, "2026-12-31"))
	e.mustHelper(p.ID, "pay", Action{Outcome: OutcomeDeclined})
	e.clock.Advance(3 * 24 * time.Hour)
	assert.Empty(t, e.children(p.ID))
	assert.Equal(t, "STOPPED", e.status(p.ID).Recurrence.RecurrenceState)
}

func TestOnDemandRecurrence(t *testing.T) {
	e := newEnv(t)
	p := e.create(recurring("ON_DEMAND", 0, "2026-04-30"))
	follow := restbackend.RecurrenceRequest{Amount: 500, Currency: "CZK", OrderNumber: "OBJ-1-2", OrderDescription: "second",
		Items: []restbackend.Item{{Name: "refill", Amount: 500, Count: 1}}}

	st, b := e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/create-recurrence", follow)
	e.refusal(st, b, http.StatusConflict, codeRecurrenceFailed, "") // not paid yet

	e.mustHelper(p.ID, "pay", nil)
	e.clock.Advance(40 * 24 * time.Hour)
	assert.Empty(t, e.children(p.ID), "ON_DEMAND is never charged automatically")

	// The reply shows the follow-up CREATED; the stored card is charged by
	// the next scheduler pass (here: Advance(0) of the manual clock).
	var ch restbackend.Payment
	st, b = e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/create-recurrence", follow)
	require.Equal(t, http.StatusOK, st, string(b))
	require.NoError(t, jsonUnmarshal(b, &ch))
	assert.Equal(t, p.ID, ch.ParentID)
	assert.Equal(t, restbackend.StateCreated, ch.State)
	assert.Empty(t, ch.SubState)
	assert.EqualValues(t, 500, ch.Amount)
	assert.Equal(t, "OBJ-1-2", ch.OrderNumber)
	assert.Equal(t, "PAYMENT_CARD", ch.PaymentInstrument)
	assert.Nil(t, ch.Payer.PaymentCard, "no card data before the charge")
	assert.Equal(t, ch, *e.status(ch.ID), "nothing happens until the scheduler runs")

	e.clock.Advance(0)
	paid := e.status(ch.ID)
	assert.Equal(t, restbackend.StatePaid, paid.State)
	assert.Equal(t, p.ID, paid.ParentID)
	assert.EqualValues(t, 500, paid.Amount)
	require.NotNil(t, paid.Payer.PaymentCard)
	assert.Equal(t, e.status(p.ID).Payer.PaymentCard.CardNumber, paid.Payer.PaymentCard.CardNumber)
	assert.Empty(t, paid.Payer.PaymentCard.CardToken)
	e.clock.Advance(8 * 24 * time.Hour)
	assert.Equal(t, restbackend.StatePaid, e.status(ch.ID).State, "charged once, never timed out")
	assert.Len(t, e.children(p.ID), 1)

	bad := []struct {
		mod   func(*restbackend.RecurrenceRequest)
		code  int
		field string
	}{
		{func(r *restbackend.RecurrenceRequest) { r.Currency = "EUR" }, codeWrongFormat, "currency"},
		{func(r *restbackend.RecurrenceRequest) { r.Amount = 0 }, codeWrongFormat, "amount"},
		{func(r *restbackend.RecurrenceRequest) { r.OrderNumber = "" }, codeMandatory, "order_number"},
	}
	for _, tc := range bad {
		r := follow
		tc.mod(&r)
		st, b := e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/create-recurrence", r)
		e.refusal(st, b, http.StatusConflict, tc.code, tc.field)
	}

	// After recurrence_date_to the recurrence is over.
	e.clock.Advance(22 * 24 * time.Hour) // 2026-05-11
	st, b = e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/create-recurrence", follow)
	e.refusal(st, b, http.StatusConflict, codeRecurrenceStopped, "")
	assert.Equal(t, "STOPPED", e.status(p.ID).Recurrence.RecurrenceState)

	// Not a recurring payment, or an automatic one.
	for _, mod := range []func(*restbackend.PaymentRequest){nil, recurring("DAY", 1, "2026-12-31")} {
		q := e.create(mod)
		e.mustHelper(q.ID, "pay", nil)
		st, b = e.call(http.MethodPost, "/api/payments/payment/"+itoa(q.ID)+"/create-recurrence", follow)
		e.refusal(st, b, http.StatusConflict, codeRecurrenceNotAllowed, "")
	}
}

func TestOnDemandAfterVoid(t *testing.T) {
	e := newEnv(t)
	p := e.create(recurring("ON_DEMAND", 0, ""))
	e.mustHelper(p.ID, "pay", nil)
	e.mustPost(p.ID, "void-recurrence", nil)
	st, b := e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/create-recurrence",
		restbackend.RecurrenceRequest{Amount: 1, Currency: "CZK", OrderNumber: "x"})
	e.refusal(st, b, http.StatusConflict, codeRecurrenceStopped, "")
}

// A follow-up whose charge is pending is charged by RunDue too, and the
// merchant hears of the child once it is PAID.
func TestOnDemandChargeNotified(t *testing.T) {
	e := newEnv(t)
	p := e.create(recurring("ON_DEMAND", 0, ""))
	e.mustHelper(p.ID, "pay", nil)
	var ch restbackend.Payment
	st, b := e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/create-recurrence",
		restbackend.RecurrenceRequest{Amount: 300, Currency: "CZK", OrderNumber: "OBJ-1-2"})
	require.Equal(t, http.StatusOK, st, string(b))
	require.NoError(t, jsonUnmarshal(b, &ch))
	require.Equal(t, restbackend.StateCreated, ch.State)
	e.g.RunDue()
	assert.Equal(t, restbackend.StatePaid, e.status(ch.ID).State)
	calls := e.waitCalls(2)
	assert.ElementsMatch(t, []string{"goid=8123456789&id=" + itoa(p.ID), "goid=8123456789&id=" + itoa(ch.ID)}, calls,
		"the parent's payment and the child's charge, nothing for the CREATED reply")
}

// With real time the charge follows the reply without waiting for the
// once-a-second scheduler pass.
func TestOnDemandChargeRealClock(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Clock = nil })
	p := e.create(recurring("ON_DEMAND", 0, ""))
	e.mustHelper(p.ID, "pay", nil)
	var ch restbackend.Payment
	st, b := e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/create-recurrence",
		restbackend.RecurrenceRequest{Amount: 300, Currency: "CZK", OrderNumber: "OBJ-1-2"})
	require.Equal(t, http.StatusOK, st, string(b))
	require.NoError(t, jsonUnmarshal(b, &ch))
	assert.Equal(t, restbackend.StateCreated, ch.State)
	assert.Eventually(t, func() bool {
		st, b := e.call(http.MethodGet, "/api/payments/payment/"+itoa(ch.ID), nil)
		var s restbackend.Payment
		return st == http.StatusOK && jsonUnmarshal(b, &s) == nil && s.State == restbackend.StatePaid
	}, 10*time.Second, time.Millisecond)
}
