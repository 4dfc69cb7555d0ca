package sandbox

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

func TestCreateValidation(t *testing.T) {
	cases := []struct {
		name  string
		mod   func(*restbackend.PaymentRequest)
		code  int
		field string
	}{
		{"amount zero", func(r *restbackend.PaymentRequest) { r.Amount = 0 }, codeWrongFormat, "amount"},
		{"amount negative", func(r *restbackend.PaymentRequest) { r.Amount = -5 }, codeWrongFormat, "amount"},
		{"currency missing", func(r *restbackend.PaymentRequest) { r.Currency = "" }, codeMandatory, "currency"},
		{"currency unknown", func(r *restbackend.PaymentRequest) { r.Currency = "XYZ" }, codeWrongFormat, "currency"},
		{"order number missing", func(r *restbackend.PaymentRequest) { r.OrderNumber = "" }, codeMandatory, "order_number"},
		{"order number too long", func(r *restbackend.PaymentRequest) { r.OrderNumber = strings.Repeat("1", 129) }, codeWrongFormat, "order_number"},
		{"description too long", func(r *restbackend.PaymentRequest) { r.OrderDescription = strings.Repeat("ž", 257) }, codeWrongFormat, "order_description"},
		{"language unknown", func(r *restbackend.PaymentRequest) { r.Lang = "XX" }, codeWrongFormat, "lang"},
		{"five additional params", func(r *restbackend.PaymentRequest) {
			r.AdditionalParams = make([]restbackend.AdditionalParam, 5)
			for i := range r.AdditionalParams {
				r.AdditionalParams[i] = restbackend.AdditionalParam{Name: "p" + itoa(int64(i)), Value: "v"}
			}
		}, codeWrongFormat, "additional_params"},
		{"additional param without name", func(r *restbackend.PaymentRequest) {
			r.AdditionalParams = []restbackend.AdditionalParam{{Value: "v"}}
		}, codeMandatory, "additional_params[0].name"},
		{"target type", func(r *restbackend.PaymentRequest) { r.Target.Type = "EWALLET" }, codeWrongFormat, "target.type"},
		{"target goid missing", func(r *restbackend.PaymentRequest) { r.Target.GoID = 0 }, codeMandatory, "target.goid"},
		{"return url missing", func(r *restbackend.PaymentRequest) { r.Callback.ReturnURL = "" }, codeMandatory, "callback.return_url"},
		{"return url relative", func(r *restbackend.PaymentRequest) { r.Callback.ReturnURL = "/return" }, codeWrongFormat, "callback.return_url"},
		{"notification url scheme", func(r *restbackend.PaymentRequest) { r.Callback.NotificationURL = "ftp://x/y" }, codeWrongFormat, "callback.notification_url"},
		{"unknown instrument", func(r *restbackend.PaymentRequest) { r.Payer.AllowedPaymentInstruments = []string{"CASH"} }, codeWrongFormat, "payer.allowed_payment_instruments"},
		{"unknown default instrument", func(r *restbackend.PaymentRequest) { r.Payer.DefaultPaymentInstrument = "CASH" }, codeWrongFormat, "payer.default_payment_instrument"},
		{"unknown swift", func(r *restbackend.PaymentRequest) { r.Payer.AllowedSwifts = []string{"NOPEXXPP"} }, codeWrongFormat, "payer.allowed_swifts"},
		{"unknown default swift", func(r *restbackend.PaymentRequest) { r.Payer.DefaultSwift = "NOPEXXPP" }, codeWrongFormat, "payer.default_swift"},
		{"email", func(r *restbackend.PaymentRequest) { r.Payer.Contact.Email = "not-an-address" }, codeWrongFormat, "payer.contact.email"},
		{"country code", func(r *restbackend.PaymentRequest) { r.Payer.Contact.CountryCode = "CZ" }, codeWrongFormat, "payer.contact.country_code"},
		{"unknown card token", func(r *restbackend.PaymentRequest) { r.Payer.AllowedCardToken = "nope" }, codeWrongFormat, "payer.allowed_card_token"},
		{"item without name", func(r *restbackend.PaymentRequest) { r.Items = []restbackend.Item{{Amount: 1000}} }, codeMandatory, "items[0].name"},
		{"item type", func(r *restbackend.PaymentRequest) { r.Items = []restbackend.Item{{Name: "x", Type: "GIFT"}} }, codeWrongFormat, "items[0].type"},
		{"recurrence cycle missing", func(r *restbackend.PaymentRequest) { r.Recurrence = &restbackend.Recurrence{} }, codeMandatory, "recurrence.recurrence_cycle"},
		{"recurrence cycle unknown", func(r *restbackend.PaymentRequest) {
			r.Recurrence = &restbackend.Recurrence{RecurrenceCycle: "YEAR", RecurrencePeriod: 1, RecurrenceDateTo: "2027-01-01"}
		}, codeWrongFormat, "recurrence.recurrence_cycle"},
		{"recurrence period missing", func(r *restbackend.PaymentRequest) {
			r.Recurrence = &restbackend.Recurrence{RecurrenceCycle: "DAY", RecurrenceDateTo: "2027-01-01"}
		}, codeMandatory, "recurrence.recurrence_period"},
		{"recurrence date missing", func(r *restbackend.PaymentRequest) {
			r.Recurrence = &restbackend.Recurrence{RecurrenceCycle: "MONTH", RecurrencePeriod: 1}
		}, codeMandatory, "recurrence.recurrence_date_to"},
		{"recurrence date format", func(r *restbackend.PaymentRequest) {
			r.Recurrence = &restbackend.Recurrence{RecurrenceCycle: "ON_DEMAND", RecurrenceDateTo: "1.1.2027"}
		}, codeWrongFormat, "recurrence.recurrence_date_to"},
		{"recurrence date in the past", func(r *restbackend.PaymentRequest) {
			r.Recurrence = &restbackend.Recurrence{RecurrenceCycle: "WEEK", RecurrencePeriod: 1, RecurrenceDateTo: "2026-03-01"}
		}, codeWrongFormat, "recurrence.recurrence_date_to"},
	}
	e := newEnv(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			r := e.baseRequest()
			tc.mod(r)
			st, b := e.call(http.MethodPost, "/api/payments/payment", r)
			e.refusal(st, b, http.StatusConflict, tc.code, tc.field)
		})
	}
	// Nothing was created by the refusals.
	assert.EqualValues(t, firstTestID, e.create(nil).ID)
}

func TestCreateValidationReportsEveryField(t *testing.T) {
	e := newEnv(t)
	r := e.baseRequest()
	r.Amount, r.Currency, r.OrderNumber = 0, "", ""
	st, b := e.call(http.MethodPost, "/api/payments/payment", r)
	require.Equal(t, http.StatusConflict, st)
	eb := errorBody(t, b)
	var fields []string
	for _, it := range eb.Errors {
		fields = append(fields, it.Field)
		assert.Equal(t, codeNames[it.ErrorCode], it.ErrorName)
	}
	assert.ElementsMatch(t, []string{"amount", "currency", "order_number"}, fields)
	_, err := time.Parse("2006-01-02T15:04:05.000-0700", eb.DateIssued)
	assert.NoError(t, err, eb.DateIssued)
}

func TestMalformedBodies(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, body string
		code       int
		field      string
	}{
		{"syntax", `{"amount": 10,`, codeInvalidRequest, ""},
		{"empty", ``, codeInvalidRequest, ""},
		{"array", `[1,2]`, codeInvalidRequest, ""},
		{"amount as text", `{"amount":"ten"}`, codeWrongFormat, "amount"},
		{"amount fraction", `{"amount":10.5}`, codeWrongFormat, "amount"},
		{"nested type", `{"target":{"goid":"x"}}`, codeWrongFormat, "target.goid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			st, b := e.call(http.MethodPost, "/api/payments/payment", tc.body)
			e.refusal(st, b, http.StatusConflict, tc.code, tc.field)
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	e := newEnv(t)
	big := `{"order_description":"` + strings.Repeat("x", 2<<20) + `"}`
	st, b := e.call(http.MethodPost, "/api/payments/payment", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, st)
	errorBody(t, b)

	// The same body without a declared length (chunked).
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/api/payments/payment", io.MultiReader(strings.NewReader(big)))
	require.NoError(t, err)
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	errorBody(t, raw)
}

func TestAuthorization(t *testing.T) {
	e := newEnv(t)
	p := e.create(nil)
	path := "/api/payments/payment/" + itoa(p.ID)

	t.Run("wrong credentials 401", func(t *testing.T) {
		e := e.with(t)
		st, b := e.tokenCall(testID, "wrong", restbackend.ScopePaymentAll)
		e.refusal(st, b, http.StatusUnauthorized, codeWrongCredentials, "")
		st, b = e.tokenCall("nobody", testSecret, restbackend.ScopePaymentAll)
		e.refusal(st, b, http.StatusUnauthorized, codeWrongCredentials, "")
		st, b = e.tokenCall("", "", restbackend.ScopePaymentAll)
		e.refusal(st, b, http.StatusUnauthorized, codeWrongCredentials, "")
		assert.NotContains(t, string(b), testSecret)
	})
	t.Run("token reply", func(t *testing.T) {
		e := e.with(t)
		st, b := e.tokenCall(testID, testSecret, "payment-create payment-all")
		require.Equal(t, http.StatusOK, st)
		assert.Contains(t, string(b), `"token_type":"bearer"`)
		assert.Contains(t, string(b), `"expires_in":1800`)
	})
	t.Run("scope not allowed for the client 403", func(t *testing.T) {
		e := e.with(t)
		st, b := e.tokenCall("create-only", "create-secret", restbackend.ScopePaymentAll)
		e.refusal(st, b, http.StatusForbidden, codeUnauthorized, "scope")
		st, b = e.tokenCall(testID, testSecret, "payment-everything")
		e.refusal(st, b, http.StatusConflict, codeWrongFormat, "scope")
		st, b = e.tokenCall(testID, testSecret, "")
		e.refusal(st, b, http.StatusConflict, codeMandatory, "scope")
	})
	t.Run("missing or invalid token 401", func(t *testing.T) {
		e := e.with(t)
		st, b := e.callAs("", http.MethodGet, path, nil)
		e.refusal(st, b, http.StatusUnauthorized, codeUnauthorized, "")
		st, b = e.callAs("forged", http.MethodGet, path, nil)
		e.refusal(st, b, http.StatusUnauthorized, codeUnauthorized, "")
	})
	t.Run("expired token 401", func(t *testing.T) {
		e := e.with(t)
		tok := e.getToken(testID, testSecret, restbackend.ScopePaymentAll)
		e.g.mu.Lock()
		e.g.realNow = func() time.Time { return time.Now().Add(tokenLifetime + time.Second) }
		e.g.mu.Unlock()
		defer func() { e.g.mu.Lock(); e.g.realNow = time.Now; e.g.mu.Unlock() }()
		st, b := e.callAs(tok, http.MethodGet, path, nil)
		e.refusal(st, b, http.StatusUnauthorized, codeUnauthorized, "")
	})
	t.Run("payment-create scope may create but not read 403", func(t *testing.T) {
		e := e.with(t)
		tok := e.getToken(testID, testSecret, restbackend.ScopePaymentCreate)
		st, b := e.callAs(tok, http.MethodPost, "/api/payments/payment", e.baseRequest())
		require.Equal(t, http.StatusOK, st, string(b))
		st, b = e.callAs(tok, http.MethodGet, path, nil)
		e.refusal(st, b, http.StatusForbidden, codeUnauthorized, "")
	})
	t.Run("other merchant's goid and payment 403", func(t *testing.T) {
		e := e.with(t)
		other := e.getToken("other-client", "other-secret", restbackend.ScopePaymentAll)
		st, b := e.callAs(other, http.MethodPost, "/api/payments/payment", e.baseRequest())
		e.refusal(st, b, http.StatusForbidden, codeUnauthorized, "")
		for _, op := range []struct{ method, path string }{
			{http.MethodGet, path},
			{http.MethodPost, path + "/refund"},
			{http.MethodPost, path + "/capture"},
			{http.MethodPost, path + "/void-authorization"},
			{http.MethodPost, path + "/void-recurrence"},
			{http.MethodGet, "/api/eshops/eshop/" + itoa(testGoID) + "/payment-instruments/CZK"},
		} {
			st, b := e.callAs(other, op.method, op.path, nil)
			e.refusal(st, b, http.StatusForbidden, codeUnauthorized, "")
		}
	})
	t.Run("unknown payment 404", func(t *testing.T) {
		e := e.with(t)
		for _, id := range []string{"3999999999", "abc", "-1"} {
			st, b := e.call(http.MethodGet, "/api/payments/payment/"+id, nil)
			e.refusal(st, b, http.StatusNotFound, codeNotFound, "")
		}
		st, b := e.call(http.MethodPost, "/api/payments/payment/3999999999/refund", amount(1))
		e.refusal(st, b, http.StatusNotFound, codeNotFound, "")
		st, b = e.helper(3999999999, "pay", nil)
		e.refusal(st, b, http.StatusNotFound, codeNotFound, "")
	})
	t.Run("unknown endpoint 404 with error body", func(t *testing.T) {
		e := e.with(t)
		st, b := e.call(http.MethodGet, "/api/nothing", nil)
		require.Equal(t, http.StatusNotFound, st)
		errorBody(t, b)
	})
}

func TestRefundValidation(t *testing.T) {
	e := newEnv(t)
	p := e.create(nil)
	e.mustHelper(p.ID, "pay", nil)
	st, _, b := e.post(p.ID, "refund", nil)
	e.refusal(st, b, http.StatusConflict, codeMandatory, "amount")
	for _, v := range []string{"0", "-3", "1.5", "x"} {
		st, _, b := e.post(p.ID, "refund", url.Values{"amount": {v}})
		e.refusal(st, b, http.StatusConflict, codeWrongFormat, "amount")
	}
}

// TestBodyLimitIsOneMebibyte: the limit is maxBody bytes, one figure for the
// router and the reader (echo's "1M" was 10^6): a body just under 1 MiB is
// read and judged on its content.
func TestBodyLimitIsOneMebibyte(t *testing.T) {
	e := newEnv(t)
	body := `{"order_description":"` + strings.Repeat("x", maxBody-100) + `"}`
	require.Greater(t, len(body), 1000*1000)
	st, _ := e.call(http.MethodPost, "/api/payments/payment", body)
	assert.NotEqual(t, http.StatusRequestEntityTooLarge, st)
}
