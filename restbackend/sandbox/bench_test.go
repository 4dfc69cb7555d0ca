package sandbox

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/legacybridge/soapbridge/restbackend"
)

// BenchmarkCreateAndStatus measures one create plus one status call served
// in-process (no sockets): the sandbox's own cost per payment.
func BenchmarkCreateAndStatus(b *testing.B) {
	g := New(Options{Merchants: []Merchant{{Account: restbackend.Account{GoID: testGoID, ClientID: testID, ClientSecret: testSecret}}}, Clock: NewManualClock(t0)})
	defer g.Close()
	req := httptest.NewRequest(http.MethodPost, "/api/oauth2/token", strings.NewReader("grant_type=client_credentials&scope=payment-all"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(testID, testSecret)
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	var tok restbackend.Token
	if err := json.Unmarshal(rec.Body.Bytes(), &tok); err != nil {
		b.Fatal(err)
	}
	body := `{"target":{"type":"ACCOUNT","goid":8123456789},"amount":1000,"currency":"CZK","order_number":"B-1","lang":"CS",` +
		`"callback":{"return_url":"https://shop.example/r","notification_url":""},"payer":{"contact":{"email":"a@b.cz"}}}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/api/payments/payment", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Body.String())
		}
		var p restbackend.Payment
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		req = httptest.NewRequest(http.MethodGet, "/api/payments/payment/"+strconv.FormatInt(p.ID, 10), nil)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		rec = httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Body.String())
		}
	}
}

// BenchmarkRunDue measures one scheduler pass over 10,000 idle payments
// (the real-time clock runs one per second).
func BenchmarkRunDue(b *testing.B) {
	clock := NewManualClock(t0)
	g := New(Options{Merchants: []Merchant{{Account: restbackend.Account{GoID: testGoID, ClientID: testID, ClientSecret: testSecret}}}, Clock: clock})
	defer g.Close()
	g.mu.Lock()
	for range 10000 {
		p := &payment{id: g.newID(), goid: testGoID, state: restbackend.StatePaid, created: t0}
		g.payments[p.id] = p
		g.order = append(g.order, p)
	}
	g.mu.Unlock()
	for b.Loop() {
		g.RunDue()
	}
}
