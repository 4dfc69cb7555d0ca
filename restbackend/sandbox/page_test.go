package sandbox

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (e *env) page(method, gwURL string, form url.Values) (*http.Response, string) {
	e.t.Helper()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, gwURL, rd)
	require.NoError(e.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := noRedirect.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestPageOffersAllowedMethods(t *testing.T) {
	e := newEnv(t)
	t.Run("everything, in Czech", func(t *testing.T) {
		e := e.with(t)
		p := e.create(nil)
		resp, body := e.page(http.MethodGet, p.GwURL, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "text/html; charset=UTF-8", resp.Header.Get("Content-Type"))
		for _, s := range []string{`lang="cs"`, "Platba kartou", `id="card-form"`, `id="bank-KOMBCZPP"`, `id="transfer"`, `id="pay-PAYPAL"`, `id="cancel"`, "10,00\u00a0Kč"} {
			assert.Contains(t, body, s)
		}
		assert.NotContains(t, body, "TATRSKBX", "SK banks are for EUR")
	})
	t.Run("English, EUR banks", func(t *testing.T) {
		e := e.with(t)
		p := e.create(func(r *restbackend.PaymentRequest) { r.Lang = "en"; r.Currency = "EUR"; r.Amount = 1234 })
		_, body := e.page(http.MethodGet, p.GwURL, nil)
		for _, s := range []string{`lang="en"`, "Pay by card", `id="bank-TATRSKBX"`, "EUR\u00a012.34"} {
			assert.Contains(t, body, s)
		}
		assert.NotContains(t, body, "KOMBCZPP")
	})
	t.Run("restricted to one bank", func(t *testing.T) {
		e := e.with(t)
		p := e.create(func(r *restbackend.PaymentRequest) {
			r.Payer.AllowedPaymentInstruments = []string{"BANK_ACCOUNT"}
			r.Payer.AllowedSwifts = []string{"FIOBCZPP"}
		})
		_, body := e.page(http.MethodGet, p.GwURL, nil)
		assert.Contains(t, body, `id="bank-FIOBCZPP"`)
		assert.NotContains(t, body, `id="bank-KOMBCZPP"`)
		assert.NotContains(t, body, `id="card-form"`)
		assert.NotContains(t, body, `id="other-form"`)
	})
	t.Run("preauthorization: card only", func(t *testing.T) {
		e := e.with(t)
		p := e.create(func(r *restbackend.PaymentRequest) { r.Preauthorization = true })
		_, body := e.page(http.MethodGet, p.GwURL, nil)
		assert.Contains(t, body, `id="card-form"`)
		assert.NotContains(t, body, `id="bank-form"`)
		assert.NotContains(t, body, `id="transfer"`)
	})
	t.Run("merchant's form post shows the page", func(t *testing.T) {
		e := e.with(t)
		p := e.create(nil)
		resp, body := e.page(http.MethodPost, p.GwURL, url.Values{"pay": {""}})
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, body, `id="card-form"`)
		assert.Equal(t, restbackend.StateCreated, e.status(p.ID).State)
	})
	t.Run("unknown page 404", func(t *testing.T) {
		e := e.with(t)
		resp, _ := e.page(http.MethodGet, e.srv.URL+"/gw/v3/nope", nil)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func TestPageEscapes(t *testing.T) {
	e := newEnv(t)
	p := e.create(func(r *restbackend.PaymentRequest) {
		r.OrderNumber = `<script>alert(1)</script>`
		r.OrderDescription = `"><img src=x onerror=alert(2)>`
		r.Callback.ReturnURL = `https://shop.example/ret?a="<b>`
	})
	_, body := e.page(http.MethodGet, p.GwURL, nil)
	assert.NotContains(t, body, "<script>alert")
	assert.NotContains(t, body, "<img src=x")
	assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	e.mustHelper(p.ID, "cancel", nil)
	_, body = e.page(http.MethodGet, p.GwURL, nil)
	assert.NotContains(t, body, `"<b>`)
}

func TestPageActions(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		form             url.Values
		state, sub, inst string
	}{
		{url.Values{"sandbox_action": {"pay"}, "instrument": {"PAYMENT_CARD"}, "outcome": {"success"}}, restbackend.StatePaid, "", "PAYMENT_CARD"},
		{url.Values{"sandbox_action": {"pay"}, "instrument": {"PAYMENT_CARD"}, "outcome": {"3ds_failed"}}, restbackend.StateCanceled, "_5009", "PAYMENT_CARD"},
		{url.Values{"sandbox_action": {"pay"}, "instrument": {"BANK_ACCOUNT"}, "swift": {"AIRACZPP"}}, restbackend.StatePaid, "_3001", "BANK_ACCOUNT"},
		{url.Values{"sandbox_action": {"wait"}, "instrument": {"BANK_ACCOUNT"}}, restbackend.StatePaymentMethodChosen, "_102", "BANK_ACCOUNT"},
		{url.Values{"sandbox_action": {"pay"}, "instrument": {"GOPAY"}}, restbackend.StatePaid, "", "GOPAY"},
		{url.Values{"sandbox_action": {"cancel"}}, restbackend.StateCanceled, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.form.Encode(), func(t *testing.T) {
			e := e.with(t)
			p := e.create(nil)
			resp, _ := e.page(http.MethodPost, p.GwURL, tc.form)
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
			assert.Equal(t, "https://shop.example/return?x=1&id="+itoa(p.ID), resp.Header.Get("Location"))
			s := e.status(p.ID)
			assert.Equal(t, tc.state, s.State)
			assert.Equal(t, tc.sub, s.SubState)
			assert.Equal(t, tc.inst, s.PaymentInstrument)
		})
	}
	t.Run("finished payment shows its state", func(t *testing.T) {
		e := e.with(t)
		p := e.create(nil)
		e.mustHelper(p.ID, "pay", nil)
		resp, body := e.page(http.MethodPost, p.GwURL, url.Values{"sandbox_action": {"cancel"}})
		assert.Equal(t, http.StatusConflict, resp.StatusCode)
		assert.Contains(t, body, `id="error"`)
		assert.Contains(t, body, `id="final-state"`)
		assert.Contains(t, body, "Platba už nečeká na zaplacení.", "the error in the page's language")
		assert.Contains(t, body, `<span id="state-label">Zaplaceno</span>`, "a human state label")
		assert.NotContains(t, body, "PAYMENT_WRONG_STATE")
		assert.NotContains(t, body, ">PAID<")
		assert.Contains(t, body, `href="https://shop.example/return?x=1&amp;id=`+itoa(p.ID))
	})
	t.Run("offline waiting page", func(t *testing.T) {
		e := e.with(t)
		p := e.create(nil)
		e.mustHelper(p.ID, "wait", nil)
		_, body := e.page(http.MethodGet, p.GwURL, nil)
		assert.Contains(t, body, "Platba čeká na příchozí převod.")
	})
}

// Every state has its label in both languages; declines say why; the
// merchant's name shows; the unknown-token page is a full page with lang.
func TestPageLabelsAndLanguages(t *testing.T) {
	for _, lang := range []string{"cs", "en"} {
		for _, st := range []string{restbackend.StateCreated, restbackend.StatePaymentMethodChosen, restbackend.StatePaid, restbackend.StateAuthorized,
			restbackend.StateCanceled, restbackend.StateTimeouted, restbackend.StateRefunded, restbackend.StatePartiallyRefunded} {
			assert.NotEmpty(t, pageTexts[lang].States[st], "%s %s", lang, st)
		}
	}
	e := newEnv(t, func(o *Options) { o.Merchants[0].Name = "Obchod U Kocoura" })
	t.Run("timeouted, English", func(t *testing.T) {
		e := e.with(t)
		p := e.create(func(r *restbackend.PaymentRequest) { r.Lang = "EN" })
		e.clock.Advance(unpaidTimeout)
		_, body := e.page(http.MethodGet, p.GwURL, nil)
		assert.Contains(t, body, "The time to pay has run out")
		assert.NotContains(t, body, "TIMEOUTED<")
		assert.Contains(t, body, `Merchant: <span id="merchant">Obchod U Kocoura</span>`)
	})
	t.Run("declined, Czech, with the reason", func(t *testing.T) {
		e := e.with(t)
		p := e.create(nil)
		e.mustHelper(p.ID, "pay", Action{Outcome: OutcomeDeclined})
		_, body := e.page(http.MethodGet, p.GwURL, nil)
		assert.Contains(t, body, "Platba byla zrušena")
		assert.Contains(t, body, "Banka platbu kartou zamítla.")
		assert.Contains(t, body, "Obchodník: ")
	})
	t.Run("large amount grouped", func(t *testing.T) {
		e := e.with(t)
		p := e.create(func(r *restbackend.PaymentRequest) { r.Amount = 123456789 })
		_, body := e.page(http.MethodGet, p.GwURL, nil)
		assert.Contains(t, body, "1\u00a0234\u00a0567,89\u00a0Kč")
	})
	t.Run("unknown token: a whole page in the reader's language", func(t *testing.T) {
		for lang, want := range map[string]string{"cs-CZ,cs;q=0.9": "Platba nenalezena", "en-US": "Payment not found"} {
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/gw/v3/nope", nil)
			req.Header.Set("Accept-Language", lang)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusNotFound, resp.StatusCode)
			assert.Contains(t, string(b), `<html lang="`+lang[:2]+`">`)
			assert.Contains(t, string(b), "<h1>"+want+"</h1>")
			assert.Contains(t, string(b), "<main")
		}
	})
}

func TestEmbedScriptAndImages(t *testing.T) {
	e := newEnv(t)
	resp, err := http.Get(e.srv.URL + "/gp-gw/js/embed.js")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/javascript; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Contains(t, string(b), "gopay-gateway-iframe")
	for file, want := range map[string]int{"KOMBCZPP.svg": 200, "GPAY@2x.svg": 200, "NOPE.svg": 404, "PAYMENT_CARD.png": 404} {
		resp, err := http.Get(e.srv.URL + "/gp-gw/images/" + file)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, file)
	}
}

func TestBaseURL(t *testing.T) {
	e := newEnv(t)
	js, _ := jsonMarshal(e.baseRequest())
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/payments/payment", strings.NewReader(string(js)))
	req.Host = "sandbox.example:8443"
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("Authorization", "Bearer "+e.token)
	st, b := e.send(req)
	require.Equal(t, http.StatusOK, st, string(b))
	assert.Contains(t, string(b), `"gw_url":"https://sandbox.example:8443/gw/v3/`)

	fixed := newEnv(t, func(o *Options) { o.BaseURL = "https://pay.example/" })
	assert.True(t, strings.HasPrefix(fixed.create(nil).GwURL, "https://pay.example/gw/v3/"))
}

func TestHelperEndpoints(t *testing.T) {
	e := newEnv(t)
	p := e.create(nil)
	resp, err := http.Get(e.srv.URL + "/sandbox/payments/" + itoa(p.ID))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	st, b := e.helper(p.ID, "explode", nil)
	e.refusal(st, b, http.StatusConflict, codeInvalidRequest, "")
	st, b = e.helper(p.ID, "pay", Action{Outcome: "maybe"})
	e.refusal(st, b, http.StatusConflict, codeWrongFormat, "outcome")
	st, b = e.helper(p.ID, "pay", Action{Instrument: "BANK_ACCOUNT", Outcome: Outcome3DSFailed})
	e.refusal(st, b, http.StatusConflict, codeWrongFormat, "outcome")
	st, b = e.helper(p.ID, "pay", Action{Instrument: "BITCOIN"})
	e.refusal(st, b, http.StatusConflict, codeWrongFormat, "instrument")

	// The Go API does the same.
	require.NoError(t, e.g.Act(context.Background(), p.ID, Action{Do: ActPay, Instrument: "PAYMENT_CARD"}))
	assert.Equal(t, restbackend.StatePaid, e.status(p.ID).State)
	assert.Error(t, e.g.Act(context.Background(), 42, Action{Do: ActCancel}))

	// Clock: advance by JSON.
	q := e.create(nil)
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/sandbox/clock/advance", strings.NewReader(`{"seconds":604800}`))
	st, b = e.send(req)
	require.Equal(t, http.StatusOK, st, string(b))
	assert.Contains(t, string(b), `"now":"2026-03-09T10:00:00+01:00"`)
	assert.Equal(t, restbackend.StateTimeouted, e.status(q.ID).State)
	req, _ = http.NewRequest(http.MethodPost, e.srv.URL+"/sandbox/clock/advance", strings.NewReader(`{"seconds":-1}`))
	st, b = e.send(req)
	e.refusal(st, b, http.StatusConflict, codeWrongFormat, "seconds")
}

func TestRealClockCanBeAdvanced(t *testing.T) {
	g := New(Options{Merchants: []Merchant{{Account: restbackend.Account{GoID: testGoID, ClientID: testID, ClientSecret: testSecret}}}})
	defer g.Close()
	before := g.clock.Now()
	g.clock.(advancer).Advance(48 * time.Hour)
	assert.True(t, g.clock.Now().Sub(before) >= 48*time.Hour)
}

// TestConcurrentUse runs customers and merchants at once (go test -race).
func TestConcurrentUse(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	ids := make(chan int64, 40)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := e.create(func(r *restbackend.PaymentRequest) { r.Recurrence = recurringReq(i) })
			if _, b := e.helper(p.ID, "pay", nil); len(b) == 0 {
				t.Error("empty reply")
			}
			e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/refund", amount(100))
			e.status(p.ID)
			ids <- p.ID
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 10 {
			e.clock.Advance(24 * time.Hour)
		}
	}()
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		assert.False(t, seen[id], "duplicate id %d", id)
		seen[id] = true
	}
	assert.Len(t, seen, 20)
}

func recurringReq(i int) *restbackend.Recurrence {
	if i%2 == 0 {
		return nil
	}
	return &restbackend.Recurrence{RecurrenceCycle: "DAY", RecurrencePeriod: 1, RecurrenceDateTo: "2026-12-31"}
}
