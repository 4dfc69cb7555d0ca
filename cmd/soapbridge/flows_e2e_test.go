package main

// The legacy customer journey against the real binary: a test e-shop
// creates payments through SOAP (or the base-integration form), a headless
// Chromium is sent through /gw/pay-full-v2 or /gw/pay-base-v2 to the
// sandbox payment page and back through the bridge's return URL to the
// e-shop; the e-shop checks the signatures of the return and of the
// notification, then asks paymentStatus.

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/web"
)

// flowShop is a legacy e-shop: it knows the bridge's SOAP endpoint and
// the merchant's secure key, nothing else.
type flowShop struct {
	t   *testing.T
	srv *httptest.Server
	// bridge is the bridge's public URL, set once it runs; a test may
	// point the shop at a new bridge while its handlers still serve a
	// browser of the last one.
	bridge atomic.Pointer[string]

	mu       sync.Mutex
	returns  []flowReturn
	notified chan url.Values
	down     atomic.Bool // notification endpoint answers 503
	attempts atomic.Int32
}

type flowReturn struct {
	Path     string
	Query    url.Values
	Verified bool
}

func newFlowShop(t *testing.T) *flowShop {
	s := &flowShop{t: t, notified: make(chan url.Values, 100)}
	mux := http.NewServeMux()
	mux.HandleFunc("/buy/full", s.buyFull)
	mux.HandleFunc("/buy/base", s.buyBase)
	mux.HandleFunc("/ok", s.back)
	mux.HandleFunc("/ko", s.back)
	mux.HandleFunc("/notify", s.notify)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// verified checks the paymentIdentity signature as the legacy library does.
func flowVerified(q url.Values) bool {
	return operations.Verify(demoSecureKey, q.Get("encryptedSignature"), operations.PaymentIdentityFields(
		q.Get("targetGoId"), q.Get("paymentSessionId"), q.Get("parentPaymentSessionId"), q.Get("orderNumber"))...)
}

func (s *flowShop) command(order string) url.Values {
	v := url.Values{
		"targetGoId": {demoGoID}, "productName": {"Čajová konvice " + order}, "totalPrice": {"45900"},
		"currency": {"CZK"}, "orderNumber": {order},
		"successURL": {s.srv.URL + "/ok?cart=" + order}, "failedURL": {s.srv.URL + "/ko?cart=" + order},
		"paymentChannels": {"eu_gp_u,cz_kb,eu_bank"}, "defaultPaymentChannel": {"eu_gp_u"},
		"preAuthorization": {"false"}, "recurrentPayment": {"false"}, "lang": {"CS"},
	}
	f := false
	sig, err := operations.Sign(demoSecureKey, operations.PaymentCommandFields{
		TargetGoID: demoGoID, ProductName: v.Get("productName"), TotalPrice: v.Get("totalPrice"),
		Currency: "CZK", OrderNumber: order, FailedURL: v.Get("failedURL"), SuccessURL: v.Get("successURL"),
		PreAuthorization: operations.FormatBool(&f), RecurrentPayment: operations.FormatBool(&f),
		PaymentChannels: v.Get("paymentChannels"),
	}.Fields()...)
	if err != nil {
		panic(err)
	}
	v.Set("encryptedSignature", sig)
	return v
}

// buyFull: createPayment over SOAP, then the customer goes to pay-full-v2.
func (s *flowShop) buyFull(w http.ResponseWriter, r *http.Request) {
	order := r.URL.Query().Get("order")
	c := s.command(order)
	var members strings.Builder
	for _, k := range []string{"currency", "defaultPaymentChannel", "encryptedSignature", "failedURL", "lang",
		"orderNumber", "paymentChannels", "productName", "successURL"} {
		fmt.Fprintf(&members, `<%s xsi:type="SOAP-ENC:string">%s</%s>`, k, html.EscapeString(c.Get(k)), k)
	}
	fmt.Fprintf(&members, `<preAuthorization xsi:type="SOAP-ENC:boolean">false</preAuthorization><recurrentPayment xsi:type="SOAP-ENC:boolean">false</recurrentPayment>`+
		`<targetGoId xsi:type="SOAP-ENC:long">%s</targetGoId><totalPrice xsi:type="SOAP-ENC:long">%s</totalPrice>`, demoGoID, c.Get("totalPrice"))
	doc, err := flowSOAP(s.bridgeURL(), "createPayment", `<paymentCommand xsi:type="ns2:EPaymentCommand">`+members.String()+`</paymentCommand>`)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if res := flowText(doc, "result"); res != "CALL_COMPLETED" {
		http.Error(w, "createPayment: "+res+" "+flowText(doc, "resultDescription"), http.StatusBadGateway)
		return
	}
	id, _ := strconv.ParseInt(flowText(doc, "paymentSessionId"), 10, 64)
	goid, _ := strconv.ParseInt(demoGoID, 10, 64)
	u, err := web.PayFullURL(s.bridgeURL(), demoSecureKey, goid, id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, u, http.StatusFound)
}

// buyBase: the base integration's HTML form, posted by the customer.
func (s *flowShop) buyBase(w http.ResponseWriter, r *http.Request) {
	c := s.command(r.URL.Query().Get("order"))
	var b strings.Builder
	fmt.Fprintf(&b, `<!DOCTYPE html><html lang="cs"><head><meta charset="utf-8"><title>Pokladna</title></head><body>`+
		`<h1>Pokladna testovacího obchodu</h1><p>Objednávka %s, 459,00 Kč</p><form method="post" action="%s">`,
		html.EscapeString(c.Get("orderNumber")), html.EscapeString(s.bridgeURL()+web.PathPayBase))
	for k, vs := range c {
		fmt.Fprintf(&b, `<input type="hidden" name="paymentCommand.%s" value="%s">`, html.EscapeString(k), html.EscapeString(vs[0]))
	}
	b.WriteString(`<input type="hidden" name="paymentCommand.customerData.email" value="zakaznik@example.cz">`)
	b.WriteString(`<button type="submit" id="pay">Zaplatit</button></form></body></html>`)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, b.String())
}

// back is the success or failed page the customer returns to.
func (s *flowShop) back(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ok := flowVerified(q)
	s.mu.Lock()
	s.returns = append(s.returns, flowReturn{Path: r.URL.Path, Query: q, Verified: ok})
	s.mu.Unlock()
	title := map[string]string{"/ok": "Děkujeme za platbu", "/ko": "Platba se nezdařila"}[r.URL.Path]
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!DOCTYPE html><html lang="cs"><head><meta charset="utf-8"><title>%s</title></head><body>`+
		`<h1>%s</h1><p id="order">Objednávka %s, platba %s</p><p id="signature">signature verified: %v</p></body></html>`,
		title, title, html.EscapeString(q.Get("orderNumber")), html.EscapeString(q.Get("paymentSessionId")), ok)
}

func (s *flowShop) notify(w http.ResponseWriter, r *http.Request) {
	s.attempts.Add(1)
	if s.down.Load() {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
		return
	}
	q := r.URL.Query()
	if !flowVerified(q) {
		http.Error(w, "bad signature", http.StatusForbidden)
		s.t.Errorf("notification with a bad signature: %s", r.URL.RawQuery)
		return
	}
	s.notified <- q
	_, _ = io.WriteString(w, "OK")
}

// waitNotification waits for the notification of payment id.
func (s *flowShop) waitNotification(t *testing.T, id string) url.Values {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case q := <-s.notified:
			if q.Get("paymentSessionId") == id {
				return q
			}
		case <-deadline:
			t.Fatalf("no notification of payment %s reached the e-shop", id)
		}
	}
}

func (s *flowShop) lastReturn(t *testing.T) flowReturn {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.returns, "the customer never came back")
	return s.returns[len(s.returns)-1]
}

// flowSOAP posts one operation in PHP SoapClient's style and returns the
// reply document.
func flowSOAP(bridge, op, body string) (*etree.Document, error) {
	env := `<?xml version="1.0" encoding="UTF-8"?>` +
		`<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" ` +
		`xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` +
		`xmlns:ns2="urn:AxisEPaymentProvider" SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">` +
		`<SOAP-ENV:Body><ns1:` + op + `>` + body + `</ns1:` + op + `></SOAP-ENV:Body></SOAP-ENV:Envelope>`
	req, err := http.NewRequest(http.MethodPost, bridge+soapPath, strings.NewReader(env))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %s", op, resp.StatusCode, raw)
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return doc, nil
}

func flowText(doc *etree.Document, name string) string {
	if el := doc.FindElement("//" + name); el != nil {
		return el.Text()
	}
	return ""
}

// flowStatus asks paymentStatus as the e-shop does after a return or a
// notification, and checks the reply's signature.
func flowStatus(t *testing.T, bridge, id string) *etree.Document {
	t.Helper()
	sig, err := operations.Sign(demoSecureKey, operations.PaymentSessionFields(demoGoID, id)...)
	require.NoError(t, err)
	doc, err := flowSOAP(bridge, "paymentStatus", `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">`+
		`<encryptedSignature xsi:type="SOAP-ENC:string">`+sig+`</encryptedSignature>`+
		`<paymentSessionId xsi:type="SOAP-ENC:long">`+id+`</paymentSessionId>`+
		`<targetGoId xsi:type="SOAP-ENC:long">`+demoGoID+`</targetGoId></paymentSessionInfo>`)
	require.NoError(t, err)
	require.Equal(t, "CALL_COMPLETED", flowText(doc, "result"), flowText(doc, "resultDescription"))
	f := func(n string) string { return flowText(doc, n) }
	assert.True(t, operations.Verify(demoSecureKey, f("encryptedSignature"), operations.PaymentStatusReplyFields(f)...),
		"paymentStatus signature")
	return doc
}

// flowArtifacts is where the screenshots of test go.
func flowArtifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SOAPBRIDGE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "soapbridge-artifacts")
	}
	dir = filepath.Join(dir, "flows", regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(t.Name(), "_"))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Logf("screenshots: %s", dir)
	return dir
}

type flowStep struct {
	Wait  string `json:"wait,omitempty"`
	Text  string `json:"text,omitempty"` // the page must show it
	Shot  string `json:"shot,omitempty"`
	Fetch string `json:"fetch,omitempty"` // a test hook GET before the click
	Click string `json:"click,omitempty"`
}

type flowBrowserResult struct {
	URL   string   `json:"url"`
	Text  string   `json:"text"`
	Shots []string `json:"shots"`
}

// flowBrowser finds node, Chromium and playwright-core, or skips.
func flowBrowser(t *testing.T) (node, chromium string) {
	t.Helper()
	node = testenv.LookPath(t, "node", "apt-get install nodejs")
	chromium = os.Getenv("SOAPBRIDGE_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		testenv.Missing(t, "chromium ("+chromium+")", "apt-get install chromium")
	}
	if _, err := os.Stat("../../testdata/browser/node_modules/playwright-core/package.json"); err != nil {
		testenv.Missing(t, "playwright-core", "cd testdata/browser && npm ci")
	}
	return node, chromium
}

func flowDrive(t *testing.T, node, chromium, start, expect string, steps []flowStep) flowBrowserResult {
	t.Helper()
	job, err := json.Marshal(map[string]any{"start": start, "expect": expect, "steps": steps,
		"shots": flowArtifacts(t), "chromium": chromium})
	require.NoError(t, err)
	out, err := runTool(t, 120*time.Second, nil, node, "../../testdata/browser/bridge_flows.mjs", string(job))
	require.NoError(t, err, "browser journey failed")
	var res flowBrowserResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	for _, s := range res.Shots {
		t.Logf("screenshot %s", s)
	}
	return res
}

func TestFlowsInBrowser(t *testing.T) {
	node, chromium := flowBrowser(t)
	shop := newFlowShop(t)
	b := startBridge(t, withEnv("SOAPBRIDGE_NOTIFICATION_URL="+shop.srv.URL+"/notify"))
	shop.setBridge(b.URL)

	journey := func(t *testing.T, start, expect string, steps []flowStep) (flowReturn, flowBrowserResult) {
		res := flowDrive(t, node, chromium, start, expect, steps)
		ret := shop.lastReturn(t)
		assert.True(t, ret.Verified, "the return's signature verifies: %v", ret.Query)
		assert.Contains(t, res.Text, "signature verified: true")
		return ret, res
	}

	t.Run("pay-full-v2 card paid", func(t *testing.T) {
		ret, _ := journey(t, shop.srv.URL+"/buy/full?order=WEB-1", shop.srv.URL+"/ok",
			[]flowStep{{Wait: "#pay-card", Shot: "gateway", Click: "#pay-card"}})
		assert.Equal(t, "/ok", ret.Path)
		assert.Equal(t, "WEB-1", ret.Query.Get("cart"), "the e-shop's own query is kept")
		assert.Equal(t, "WEB-1", ret.Query.Get("orderNumber"))
		assert.Equal(t, "", ret.Query.Get("parentPaymentSessionId"))
		id := ret.Query.Get("paymentSessionId")
		n := shop.waitNotification(t, id)
		assert.Equal(t, "WEB-1", n.Get("orderNumber"))
		st := flowStatus(t, b.URL, id)
		assert.Equal(t, "PAID", flowText(st, "sessionState"))
		assert.Equal(t, "Čajová konvice WEB-1", flowText(st, "productName"))
	})

	t.Run("pay-full-v2 canceled", func(t *testing.T) {
		ret, _ := journey(t, shop.srv.URL+"/buy/full?order=WEB-2", shop.srv.URL+"/ko",
			[]flowStep{{Wait: "#cancel", Shot: "gateway", Click: "#cancel"}})
		assert.Equal(t, "/ko", ret.Path)
		assert.Equal(t, "WEB-2", ret.Query.Get("orderNumber"))
		id := ret.Query.Get("paymentSessionId")
		shop.waitNotification(t, id)
		assert.Equal(t, "CANCELED", flowText(flowStatus(t, b.URL, id), "sessionState"))
	})

	t.Run("pay-full-v2 card declined", func(t *testing.T) {
		ret, _ := journey(t, shop.srv.URL+"/buy/full?order=WEB-4", shop.srv.URL+"/ko", []flowStep{
			{Wait: "#pay-card", Click: "input[name=outcome][value=declined]"},
			{Shot: "gateway-declined-chosen", Click: "#pay-card"},
		})
		assert.Equal(t, "/ko", ret.Path)
		id := ret.Query.Get("paymentSessionId")
		shop.waitNotification(t, id)
		assert.NotEqual(t, "PAID", flowText(flowStatus(t, b.URL, id), "sessionState"))
	})

	t.Run("pay-full-v2 offline transfer waiting", func(t *testing.T) {
		ret, _ := journey(t, shop.srv.URL+"/buy/full?order=WEB-5", shop.srv.URL+"/ok",
			[]flowStep{{Wait: "#transfer", Shot: "gateway", Click: "#transfer"}})
		assert.Equal(t, "/ok", ret.Path, "waiting for a bank transfer returns to the success URL")
		id := ret.Query.Get("paymentSessionId")
		shop.waitNotification(t, id)
		st := flowStatus(t, b.URL, id)
		assert.Equal(t, "PAYMENT_METHOD_CHOSEN", flowText(st, "sessionState"))
		assert.Equal(t, "102", flowText(st, "sessionSubState"))
	})

	t.Run("pay-base-v2 form paid", func(t *testing.T) {
		ret, _ := journey(t, shop.srv.URL+"/buy/base?order=WEB-3", shop.srv.URL+"/ok", []flowStep{
			{Wait: "#pay", Shot: "eshop-form", Click: "#pay"},
			{Wait: "#pay-card", Shot: "gateway", Click: "#pay-card"},
		})
		assert.Equal(t, "/ok", ret.Path)
		assert.Equal(t, "WEB-3", ret.Query.Get("orderNumber"))
		id := ret.Query.Get("paymentSessionId")
		shop.waitNotification(t, id)
		st := flowStatus(t, b.URL, id)
		assert.Equal(t, "PAID", flowText(st, "sessionState"))
		assert.Equal(t, "Čajová konvice WEB-3", flowText(st, "productName"))
	})

	t.Run("error page", func(t *testing.T) {
		res := flowDrive(t, node, chromium, b.URL+web.PathPayFull+"?sessionInfo.targetGoId="+demoGoID+
			"&sessionInfo.paymentSessionId=3000000001&sessionInfo.encryptedSignature=00", b.URL+web.PathPayFull, nil)
		assert.Contains(t, res.Text, "Podpis požadavku (encryptedSignature) nesouhlasí.")
		assert.Contains(t, res.Text, "does not verify")
	})
}

// The bridge accepts a notification, the e-shop is down, the bridge is
// killed (SIGKILL) before it could deliver; a new bridge process on the same
// database delivers it once the e-shop is back.
func TestFlowsNotificationSurvivesKill(t *testing.T) {
	shop := newFlowShop(t)
	shop.down.Store(true)
	db := filepath.Join(t.TempDir(), "bridge.db")
	notify := withEnv("SOAPBRIDGE_NOTIFICATION_URL=" + shop.srv.URL + "/notify")
	b := startBridge(t, withDB(db), notify)
	shop.setBridge(b.URL)

	// A payment created and paid: the sandbox notifies the bridge.
	req, err := http.NewRequest(http.MethodGet, shop.srv.URL+"/buy/full?order=KILL-1", nil)
	require.NoError(t, err)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	id := loc.Query().Get("sessionInfo.paymentSessionId")
	pay, err := http.Post(b.SandboxURL+"/sandbox/payments/"+id+"/pay", "application/json",
		strings.NewReader(`{"outcome":"success","instrument":"PAYMENT_CARD"}`))
	require.NoError(t, err)
	pay.Body.Close()
	require.Equal(t, http.StatusOK, pay.StatusCode)

	// Accepted, tried, failed, retry scheduled: then the process dies.
	require.Eventually(t, func() bool { return strings.Contains(b.log.String(), "will retry") },
		30*time.Second, 20*time.Millisecond, "the bridge never tried the e-shop")
	require.NoError(t, b.cmd.Process.Kill())
	<-b.done
	b.stopped = true

	shop.down.Store(false)
	b2 := startBridge(t, withDB(db), notify)
	n := shop.waitNotification(t, id)
	assert.Equal(t, "KILL-1", n.Get("orderNumber"))
	require.Eventually(t, func() bool {
		r, err := http.Get(b2.AdminURL + "/outbox")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		var c map[string]int
		return json.NewDecoder(r.Body).Decode(&c) == nil && c["delivered"] == 1 && c["pending"] == 0
	}, 10*time.Second, 50*time.Millisecond)
	select {
	case q := <-shop.notified:
		t.Errorf("delivered twice: %v", q)
	default:
	}
}

// The statement download as a legacy e-shop's script makes it.
func TestFlowsStatementDownload(t *testing.T) {
	b := startBridge(t)
	sig, err := operations.Sign(demoSecureKey, operations.StatementRequestFields("2026-01-01", "2026-01-31", demoGoID, "CZK")...)
	require.NoError(t, err)
	q := url.Values{"statementRequest.dateFrom": {"2026-01-01"}, "statementRequest.dateTo": {"2026-01-31"},
		"statementRequest.targetGoId": {demoGoID}, "statementRequest.currency": {"CZK"},
		"statementRequest.contentType": {"CSV"}, "statementRequest.encryptedSignature": {sig}}
	resp, err := http.Get(b.URL + web.PathStatement + "?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	assert.Equal(t, "text/csv", resp.Header.Get("Content-Type"))
	assert.Contains(t, resp.Header.Get("Content-Disposition"), `filename="statement-8123456789-2026-01-01-2026-01-31.csv"`)
	assert.NotEmpty(t, raw)

	q.Set("statementRequest.currency", "EUR") // not what was signed
	resp2, err := http.Get(b.URL + web.PathStatement + "?" + q.Encode())
	require.NoError(t, err)
	resp2.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp2.StatusCode)
}

// setBridge points the shop at the bridge at url.
func (s *flowShop) setBridge(url string) { s.bridge.Store(&url) }

// bridgeURL is the bridge the shop calls.
func (s *flowShop) bridgeURL() string {
	if u := s.bridge.Load(); u != nil {
		return *u
	}
	return ""
}
