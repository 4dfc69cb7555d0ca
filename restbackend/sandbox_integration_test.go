package restbackend_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
)

// sandboxEnv is the client talking to an in-process sandbox gateway.
type sandboxEnv struct {
	t      *testing.T
	url    string // sandbox root, without /api
	c      *restbackend.Client
	cr     restbackend.Credentials
	goid   int64
	notify string
}

func newSandboxEnv(t *testing.T) *sandboxEnv {
	t.Helper()
	const goid = 8123456789
	cr := restbackend.Credentials{ClientID: "sandbox-client", ClientSecret: "sandbox-secret"}
	gw := sandbox.New(sandbox.Options{Merchants: []sandbox.Merchant{{Account: restbackend.Account{GoID: goid, ClientID: cr.ClientID, ClientSecret: cr.ClientSecret}}}})
	srv := httptest.NewServer(gw)
	t.Cleanup(func() { srv.Close(); gw.Close() })
	// The merchant's notification endpoint: answers 200, the status is read by the client.
	notify := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(notify.Close)
	return &sandboxEnv{t: t, url: srv.URL, c: restbackend.New(restbackend.Config{BaseURL: srv.URL, Timeout: 5 * time.Second}), cr: cr, goid: goid, notify: notify.URL}
}

func (e *sandboxEnv) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *sandboxEnv) create(mod func(*restbackend.PaymentRequest)) *restbackend.Payment {
	e.t.Helper()
	req := &restbackend.PaymentRequest{
		Payer:       &restbackend.Payer{AllowedPaymentInstruments: []string{"PAYMENT_CARD", "BANK_ACCOUNT"}, Contact: &restbackend.Contact{Email: "jan@example.com"}},
		Target:      restbackend.Target{Type: "ACCOUNT", GoID: e.goid},
		Amount:      1000,
		Currency:    "CZK",
		OrderNumber: "ORD-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		Items:       []restbackend.Item{{Type: "ITEM", Name: "Obuv", Amount: 1000, Count: 1}},
		Lang:        "CS",
		Callback:    &restbackend.Callback{ReturnURL: "https://eshop.example/return", NotificationURL: e.notify + "/notify"},
	}
	if mod != nil {
		mod(req)
	}
	p, err := e.c.CreatePayment(e.ctx(), e.cr, req)
	require.NoError(e.t, err)
	assert.Equal(e.t, restbackend.StateCreated, p.State)
	assert.True(e.t, strings.HasPrefix(p.GwURL, e.url+"/gw/"), "gw_url %q", p.GwURL)
	return p
}

// pay makes the customer pay on the sandbox's payment page via its helper.
func (e *sandboxEnv) pay(id int64, instrument string) {
	e.t.Helper()
	body := `{"outcome":"success","instrument":"` + instrument + `"}`
	resp, err := http.Post(e.url+"/sandbox/payments/"+strconv.FormatInt(id, 10)+"/pay", "application/json", strings.NewReader(body))
	require.NoError(e.t, err)
	resp.Body.Close()
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
}

func (e *sandboxEnv) state(id int64) *restbackend.Payment {
	e.t.Helper()
	p, err := e.c.PaymentStatus(e.ctx(), e.cr, id)
	require.NoError(e.t, err)
	return p
}

// TestSandboxWalk drives every operation of the client against the sandbox
// gateway, as the bridge does.
func TestSandboxWalk(t *testing.T) {
	e := newSandboxEnv(t)
	var paid []int64 // payments whose money moved, for the statement

	t.Run("token", func(t *testing.T) {
		tok, err := e.c.Token(e.ctx(), e.cr)
		require.NoError(t, err)
		assert.NotEmpty(t, tok)
	})

	t.Run("pay and refund partially then fully", func(t *testing.T) {
		p := e.create(nil)
		assert.Equal(t, restbackend.StateCreated, e.state(p.ID).State)
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		st := e.state(p.ID)
		assert.Equal(t, restbackend.StatePaid, st.State)
		assert.Equal(t, restbackend.InstrumentPaymentCard, st.PaymentInstrument)
		paid = append(paid, p.ID)

		hist, err := e.c.RefundHistory(e.ctx(), e.cr, p.ID)
		require.NoError(t, err)
		assert.Empty(t, hist, "nothing refunded yet")

		r, err := e.c.Refund(e.ctx(), e.cr, p.ID, 400)
		require.NoError(t, err)
		assert.Equal(t, restbackend.Result{ID: p.ID, Result: restbackend.ResultFinished}, *r)
		assert.Equal(t, restbackend.StatePartiallyRefunded, e.state(p.ID).State)

		hist, err = e.c.RefundHistory(e.ctx(), e.cr, p.ID)
		require.NoError(t, err)
		require.Len(t, hist, 1)
		assert.Equal(t, int64(400), hist[0].Amount)
		assert.Equal(t, "SUCCESS", hist[0].State, "the official libraries' refund state enum")
		assert.NotZero(t, hist[0].ID)

		_, err = e.c.Refund(e.ctx(), e.cr, p.ID, 600)
		require.NoError(t, err)
		assert.Equal(t, restbackend.StateRefunded, e.state(p.ID).State)
		hist, err = e.c.RefundHistory(e.ctx(), e.cr, p.ID)
		require.NoError(t, err)
		require.Len(t, hist, 2)
		assert.Equal(t, int64(600), hist[1].Amount)

		_, err = e.c.Refund(e.ctx(), e.cr, p.ID, 1)
		assert.Equal(t, http.StatusConflict, asAPIError(t, err).Status, "nothing left to refund")
	})

	t.Run("preauthorization captured partially", func(t *testing.T) {
		p := e.create(func(r *restbackend.PaymentRequest) { r.Preauthorization = true })
		require.NotNil(t, p.Preauthorization)
		assert.True(t, p.Preauthorization.Requested)
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		assert.Equal(t, restbackend.StateAuthorized, e.state(p.ID).State)

		r, err := e.c.Capture(e.ctx(), e.cr, p.ID, &restbackend.CaptureRequest{
			Amount: 700, Items: []restbackend.Item{{Type: "ITEM", Name: "Obuv", Amount: 700, Count: 1}},
		})
		require.NoError(t, err)
		assert.Equal(t, p.ID, r.ID)
		st := e.state(p.ID)
		assert.Equal(t, restbackend.StatePaid, st.State)
		assert.Equal(t, int64(700), st.Amount)
		paid = append(paid, p.ID)
	})

	t.Run("preauthorization captured fully", func(t *testing.T) {
		p := e.create(func(r *restbackend.PaymentRequest) { r.Preauthorization = true })
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		_, err := e.c.Capture(e.ctx(), e.cr, p.ID, nil)
		require.NoError(t, err)
		st := e.state(p.ID)
		assert.Equal(t, restbackend.StatePaid, st.State)
		assert.Equal(t, int64(1000), st.Amount)
	})

	t.Run("preauthorization voided", func(t *testing.T) {
		p := e.create(func(r *restbackend.PaymentRequest) { r.Preauthorization = true })
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		_, err := e.c.VoidAuthorization(e.ctx(), e.cr, p.ID)
		require.NoError(t, err)
		assert.Equal(t, restbackend.StateCanceled, e.state(p.ID).State)

		_, err = e.c.Capture(e.ctx(), e.cr, p.ID, nil)
		assert.Equal(t, http.StatusConflict, asAPIError(t, err).Status, "nothing left to capture")
	})

	t.Run("on-demand recurrence", func(t *testing.T) {
		p := e.create(func(r *restbackend.PaymentRequest) {
			r.Recurrence = &restbackend.Recurrence{RecurrenceCycle: restbackend.CycleOnDemand, RecurrenceDateTo: "2099-12-31"}
		})
		require.NotNil(t, p.Recurrence)
		e.pay(p.ID, restbackend.InstrumentPaymentCard)

		rec := &restbackend.RecurrenceRequest{Amount: 500, Currency: "CZK", OrderNumber: "REC-1",
			Items: []restbackend.Item{{Type: "ITEM", Name: "Předplatné", Amount: 500, Count: 1}}}
		child, err := e.c.CreateRecurrence(e.ctx(), e.cr, p.ID, rec)
		require.NoError(t, err)
		assert.Equal(t, p.ID, child.ParentID)
		assert.NotEqual(t, p.ID, child.ID)
		assert.Equal(t, int64(500), child.Amount)
		assert.Equal(t, restbackend.StateCreated, child.State, "the card is charged after the reply")
		assert.Eventually(t, func() bool {
			s, err := e.c.PaymentStatus(e.ctx(), e.cr, child.ID)
			return err == nil && s.State == restbackend.StatePaid
		}, 10*time.Second, 2*time.Millisecond, "the stored card is charged right after")

		r, err := e.c.VoidRecurrence(e.ctx(), e.cr, p.ID)
		require.NoError(t, err)
		assert.Equal(t, p.ID, r.ID)

		_, err = e.c.CreateRecurrence(e.ctx(), e.cr, p.ID, rec)
		assert.Equal(t, http.StatusConflict, asAPIError(t, err).Status, "the recurrence is stopped")
	})

	t.Run("instruments", func(t *testing.T) {
		l, err := e.c.PaymentInstruments(e.ctx(), e.cr, e.goid, "CZK")
		require.NoError(t, err)
		var codes []string
		for _, in := range l.EnabledPaymentInstruments {
			codes = append(codes, in.PaymentInstrument)
		}
		assert.Contains(t, codes, restbackend.InstrumentPaymentCard)
		assert.Contains(t, codes, restbackend.InstrumentBankAccount)
	})

	t.Run("statement", func(t *testing.T) {
		tomorrow := time.Now().AddDate(0, 0, 1).Format("2006-01-02") // whatever the time zone
		b, err := e.c.AccountStatement(e.ctx(), e.cr, &restbackend.StatementRequest{
			DateFrom: "2000-01-01", DateTo: tomorrow, GoID: e.goid, Currency: "CZK", Format: "CSV_A",
		})
		require.NoError(t, err)
		require.NotEmpty(t, paid)
		for _, id := range paid {
			assert.Contains(t, string(b), strconv.FormatInt(id, 10))
		}

		_, err = e.c.AccountStatement(e.ctx(), e.cr, &restbackend.StatementRequest{GoID: e.goid, Currency: "CZK", Format: "CSV_A"})
		assert.Equal(t, http.StatusConflict, asAPIError(t, err).Status, "dates are required")
	})

	t.Run("validation failure is 409 with the field", func(t *testing.T) {
		_, err := e.c.CreatePayment(e.ctx(), e.cr, &restbackend.PaymentRequest{
			Target: restbackend.Target{Type: "ACCOUNT", GoID: e.goid}, Amount: -5, Currency: "CZK", OrderNumber: "BAD-1",
		})
		ae := asAPIError(t, err)
		assert.Equal(t, http.StatusConflict, ae.Status)
		var fields []string
		for _, it := range ae.Body.Errors {
			fields = append(fields, it.Field)
		}
		assert.Contains(t, fields, "amount")
	})

	t.Run("unknown payment is 404", func(t *testing.T) {
		_, err := e.c.PaymentStatus(e.ctx(), e.cr, 1)
		ae := asAPIError(t, err)
		assert.Equal(t, http.StatusNotFound, ae.Status)
		assert.True(t, ae.Has(304), "%v", ae.Body.Errors)
	})

	t.Run("wrong credentials", func(t *testing.T) {
		_, err := e.c.PaymentStatus(e.ctx(), restbackend.Credentials{ClientID: "sandbox-client", ClientSecret: "nope"}, 1)
		ae := asAPIError(t, err)
		assert.Equal(t, http.StatusUnauthorized, ae.Status)
		assert.Equal(t, "token", ae.Op)
	})
}

// A client secret being rotated: while the gateway still takes only the
// old secret, the new one is refused and the previous one gets the token;
// once the gateway takes the new one, the previous one is not needed.
func TestPreviousClientSecret(t *testing.T) {
	e := newSandboxEnv(t)
	rotating := restbackend.Credentials{ClientID: e.cr.ClientID, ClientSecret: "the-new-secret", PreviousSecret: e.cr.ClientSecret}
	_, err := e.c.Token(e.ctx(), rotating)
	require.NoError(t, err, "the gateway still has the previous secret")

	_, err = e.c.Token(e.ctx(), restbackend.Credentials{ClientID: e.cr.ClientID, ClientSecret: "the-new-secret"})
	var ae *restbackend.APIError
	require.ErrorAs(t, err, &ae, "without the previous secret the new one alone is refused")
	assert.Equal(t, http.StatusUnauthorized, ae.Status)

	wrong := restbackend.Credentials{ClientID: e.cr.ClientID, ClientSecret: "the-new-secret", PreviousSecret: "not-it-either"}
	_, err = e.c.Token(e.ctx(), wrong)
	require.ErrorAs(t, err, &ae, "both refused: refused")
}
