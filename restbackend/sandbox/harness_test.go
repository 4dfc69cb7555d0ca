package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

const (
	testGoID   = 8123456789
	otherGoID  = 8999999999
	testID     = "sandbox-client"
	testSecret = "sandbox-secret"
)

// t0 is the sandbox time tests start at: 2026-03-02 10:00 Prague.
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, prague)

type env struct {
	t      *testing.T
	notify *notifySink
	g      *Gateway
	srv    *httptest.Server
	clock  *ManualClock
	token  string
}

func newEnv(t *testing.T, mod ...func(*Options)) *env {
	t.Helper()
	clock := NewManualClock(t0)
	opts := Options{
		Merchants: []Merchant{
			{Account: restbackend.Account{GoID: testGoID, ClientID: testID, ClientSecret: testSecret}},
			{Account: restbackend.Account{GoID: otherGoID, ClientID: "other-client", ClientSecret: "other-secret"}},
			{Account: restbackend.Account{GoID: 8000000001, ClientID: "create-only", ClientSecret: "create-secret"}, Scopes: []string{restbackend.ScopePaymentCreate}},
		},
		Clock:            clock,
		NotifyBackoff:    func(int) time.Duration { return 5 * time.Millisecond },
		StatementFormats: AllStatementFormats,
	}
	for _, m := range mod {
		m(&opts)
	}
	g := New(opts)
	srv := httptest.NewServer(g)
	t.Cleanup(func() { srv.Close(); g.Close() })
	e := &env{t: t, g: g, srv: srv, clock: clock, notify: newNotifySink(t)}
	e.token = e.getToken(testID, testSecret, restbackend.ScopePaymentAll)
	return e
}

// with returns e reporting to t (for subtests).
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

func (e *env) getToken(id, secret, scope string) string {
	e.t.Helper()
	st, body := e.tokenCall(id, secret, scope)
	require.Equal(e.t, http.StatusOK, st, string(body))
	var tok restbackend.Token
	require.NoError(e.t, json.Unmarshal(body, &tok))
	return tok.AccessToken
}

func (e *env) tokenCall(id, secret, scope string) (int, []byte) {
	e.t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(id, secret)
	}
	return e.send(req)
}

func (e *env) send(req *http.Request) (int, []byte) {
	e.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, b
}

// call makes a REST call with e.token; body is JSON (any) or url.Values (form).
func (e *env) call(method, path string, body any) (int, []byte) {
	return e.callAs(e.token, method, path, body)
}

func (e *env) callAs(token, method, path string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case url.Values:
		rd, ct = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	case string:
		rd, ct = strings.NewReader(b), "application/json"
	default:
		js, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd, ct = bytes.NewReader(js), "application/json"
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(req)
}

func (e *env) baseRequest() *restbackend.PaymentRequest {
	return &restbackend.PaymentRequest{
		Payer: &restbackend.Payer{
			Contact: &restbackend.Contact{FirstName: "Jan", LastName: "Novák", Email: "jan@example.com", CountryCode: "CZE"},
		},
		Target:           restbackend.Target{Type: "ACCOUNT", GoID: testGoID},
		Amount:           1000,
		Currency:         "CZK",
		OrderNumber:      "OBJ-1",
		OrderDescription: "Test order",
		Lang:             "CS",
		Callback:         &restbackend.Callback{ReturnURL: "https://shop.example/return?x=1", NotificationURL: e.notify.srv.URL + "/notify?goid=8123456789"},
		AdditionalParams: []restbackend.AdditionalParam{{Name: "invoice", Value: "2026-001"}},
	}
}

// create makes a payment (after mod) and returns the reply.
func (e *env) create(mod func(*restbackend.PaymentRequest)) *restbackend.Payment {
	e.t.Helper()
	r := e.baseRequest()
	if mod != nil {
		mod(r)
	}
	st, body := e.call(http.MethodPost, "/api/payments/payment", r)
	require.Equal(e.t, http.StatusOK, st, string(body))
	var p restbackend.Payment
	require.NoError(e.t, json.Unmarshal(body, &p))
	return &p
}

func (e *env) status(id int64) *restbackend.Payment {
	e.t.Helper()
	st, body := e.call(http.MethodGet, "/api/payments/payment/"+itoa(id), nil)
	require.Equal(e.t, http.StatusOK, st, string(body))
	var p restbackend.Payment
	require.NoError(e.t, json.Unmarshal(body, &p))
	return &p
}

// helper posts to the JSON test helper endpoint.
func (e *env) helper(id int64, action string, a any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader = http.NoBody
	if a != nil {
		js, _ := json.Marshal(a)
		rd = bytes.NewReader(js)
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/sandbox/payments/"+itoa(id)+"/"+action, rd)
	return e.send(req)
}

func (e *env) mustHelper(id int64, action string, a any) {
	e.t.Helper()
	st, body := e.helper(id, action, a)
	require.Equal(e.t, http.StatusOK, st, string(body))
}

func errorBody(t *testing.T, body []byte) restbackend.ErrorBody {
	t.Helper()
	var eb restbackend.ErrorBody
	require.NoError(t, json.Unmarshal(body, &eb), string(body))
	require.NotEmpty(t, eb.Errors, string(body))
	require.NotEmpty(t, eb.DateIssued)
	return eb
}

func itoa(n int64) string { return strconvI(n) }

func strconvI(n int64) string { return strconv.FormatInt(n, 10) }

// notifySink is the merchant's notification endpoint: it records the ids
// it is called with and answers with the status codes of fail (then 200).
type notifySink struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []string // raw queries
	fail  []int
}

func newNotifySink(t *testing.T) *notifySink {
	n := &notifySink{}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		n.calls = append(n.calls, r.URL.RawQuery)
		code := http.StatusOK
		if len(n.fail) > 0 {
			code, n.fail = n.fail[0], n.fail[1:]
		}
		n.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(n.srv.Close)
	return n
}

func (n *notifySink) queries() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.calls...)
}
