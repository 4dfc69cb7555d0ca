package restbackend_test

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/restbackend")

const wireDir = "../testdata/restbackend/wire"

// wireHeaders are the request headers the goldens show.
// The Go server moves Content-Length out of the header map; render shows
// it from the recorded length.
var wireHeaders = []string{"Accept", "Accept-Language", "Authorization", "Content-Length", "Content-Type", "User-Agent"}

// render prints a request for a golden file: method, path, the relevant
// headers in sorted order with credentials masked, the length the client
// declared and the body as sent.
func render(t *testing.T, rec *recorded, wantToken string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(rec.Method + " " + rec.Path + "\n")
	for _, h := range wireHeaders {
		if h == "Content-Length" {
			if rec.Method != http.MethodGet || rec.ContentLength != 0 {
				fmt.Fprintf(&b, "Content-Length: %d\n", rec.ContentLength)
			}
			continue
		}
		vs := rec.Header.Values(h)
		if len(vs) == 0 {
			continue
		}
		require.Len(t, vs, 1, "header %s sent more than once", h)
		v := vs[0]
		if h == "Authorization" {
			v = maskAuthorization(t, v, wantToken)
		}
		b.WriteString(h + ": " + v + "\n")
	}
	b.WriteString("\n")
	if len(rec.Body) == 0 {
		b.WriteString("(no body)\n")
		return b.String()
	}
	b.Write(rec.Body)
	b.WriteString("\n")
	return b.String()
}

// maskAuthorization checks the credentials of an Authorization header and
// replaces the secret part by ***.
func maskAuthorization(t *testing.T, v, wantToken string) string {
	t.Helper()
	scheme, cred, _ := strings.Cut(v, " ")
	switch scheme {
	case "Bearer":
		require.Equal(t, wantToken, cred, "bearer token")
		return "Bearer ***"
	case "Basic":
		raw, err := base64.StdEncoding.DecodeString(cred)
		require.NoError(t, err)
		id, secret, _ := strings.Cut(string(raw), ":")
		require.Equal(t, testCreds.ClientSecret, secret, "basic secret")
		return "Basic base64(" + id + ":***)"
	}
	t.Fatalf("unexpected Authorization scheme in %q", scheme)
	return ""
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(wireDir, name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll(wireDir, 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./restbackend -run Wire -update")
	assert.Equal(t, string(want), got)
}

var fullPayment = &restbackend.PaymentRequest{
	Payer: &restbackend.Payer{
		AllowedPaymentInstruments: []string{"PAYMENT_CARD", "BANK_ACCOUNT"},
		DefaultPaymentInstrument:  "PAYMENT_CARD",
		AllowedSwifts:             []string{"GIBACZPX", "KOMBCZPP"},
		DefaultSwift:              "KOMBCZPP",
		Contact: &restbackend.Contact{
			FirstName: "Jan", LastName: "Novák", Email: "jan@example.com", PhoneNumber: "+420777456123",
			City: "Praha", Street: "Dlouhá 1", PostalCode: "11000", CountryCode: "CZE",
		},
	},
	Target: restbackend.Target{Type: "ACCOUNT", GoID: 8123456789},
	Items: []restbackend.Item{
		{Type: "ITEM", Name: "Obuv", Amount: 1100, Count: 1, VatRate: "21", EAN: 1234567890123, ProductURL: "https://shop.example/obuv"},
		{Type: "DISCOUNT", Name: "Sleva", Amount: -100, Count: 1},
	},
	Amount:           1000,
	Currency:         "CZK",
	OrderNumber:      "ORD-1",
	OrderDescription: "Obuv & sleva",
	Lang:             "CS",
	Callback: &restbackend.Callback{
		ReturnURL:       "https://bridge.example/callback/return?goid=8123456789",
		NotificationURL: "https://bridge.example/callback/notify?goid=8123456789",
	},
	AdditionalParams: []restbackend.AdditionalParam{{Name: "invoice", Value: "2026-001"}},
	Preauthorization: true,
	Recurrence:       &restbackend.Recurrence{RecurrenceCycle: "MONTH", RecurrencePeriod: 1, RecurrenceDateTo: "2027-12-31"},
}

const (
	paymentReply = `{"id":3000000001,"order_number":"ORD-1","state":"CREATED","amount":1000,"currency":"CZK",` +
		`"payer":{"default_payment_instrument":"PAYMENT_CARD","contact":{"email":"jan@example.com"}},` +
		`"target":{"type":"ACCOUNT","goid":8123456789},"lang":"cs",` +
		`"preauthorization":{"requested":true,"state":"REQUESTED"},` +
		`"gw_url":"https://gw.sandbox.gopay.com/gw/v3/abc"}`
	resultReply      = `{"id":3000000001,"result":"FINISHED"}`
	instrumentsReply = `{"groups":{"card-payment":{"label":{"cs":"Platební karta"}}},"enabledPaymentInstruments":[` +
		`{"paymentInstrument":"PAYMENT_CARD","label":{"cs":"Platební karta"},"image":{"normal":"https://x/n.png","large":"https://x/l.png"},"group":"card-payment","enabledSwifts":null},` +
		`{"paymentInstrument":"BANK_ACCOUNT","label":{"cs":"Rychlý převod"},"image":{"normal":"https://x/b.png","large":"https://x/bl.png"},"group":"bank-transfer",` +
		`"enabledSwifts":[{"swift":"KOMBCZPP","label":{"cs":"Komerční banka"},"image":{"normal":"https://x/k.png","large":"https://x/kl.png"},"isOnline":true}]}]}`
)

// TestWire checks every call as sent on the wire against a reviewed golden
// file, and that its reply is decoded.
func TestWire(t *testing.T) {
	ctx := context.Background()
	const id = 3000000001
	cases := []struct {
		name  string
		reply string
		call  func(c *restbackend.Client) error
		check func(t *testing.T, v any)
	}{
		{"create_payment", paymentReply, func(c *restbackend.Client) error {
			p, err := c.CreatePayment(ctx, testCreds, fullPayment)
			if err == nil {
				assert.Equal(t, "https://gw.sandbox.gopay.com/gw/v3/abc", p.GwURL)
				assert.Equal(t, "REQUESTED", p.Preauthorization.State)
				assert.Equal(t, int64(8123456789), p.Target.GoID)
			}
			return err
		}, nil},
		{"payment_status", `{"id":3000000001,"order_number":"ORD-1","state":"PAID","sub_state":"_101","amount":1000,"currency":"CZK","payment_instrument":"PAYMENT_CARD",` +
			`"payer":{"payment_card":{"card_number":"444444******4448","card_expiration":"2912","card_brand":"VISA","3ds_result":"Y/Y"}}}`,
			func(c *restbackend.Client) error {
				p, err := c.PaymentStatus(ctx, testCreds, id)
				if err == nil {
					assert.Equal(t, restbackend.StatePaid, p.State)
					assert.Equal(t, "_101", p.SubState)
					assert.Equal(t, "Y/Y", p.Payer.PaymentCard.ThreeDSResult)
				}
				return err
			}, nil},
		{"refund", resultReply, func(c *restbackend.Client) error {
			r, err := c.Refund(ctx, testCreds, id, 500)
			if err == nil {
				assert.Equal(t, restbackend.Result{ID: id, Result: "FINISHED"}, *r)
			}
			return err
		}, nil},
		{"refund_history", `[{"id":300000000101,"amount":500,"currency":"CZK","state":"SUCCESS","date_requested":"2026-03-02 10:00:00","date_last_change":"2026-03-02 10:00:05"},` +
			`{"id":300000000102,"amount":200,"currency":"CZK","state":"FAILED","date_requested":"2026-03-03 09:00:00","date_last_change":"2026-03-03 09:00:01"}]`,
			func(c *restbackend.Client) error {
				l, err := c.RefundHistory(ctx, testCreds, id)
				if err == nil {
					assert.Equal(t, []restbackend.Refund{
						{ID: 300000000101, Amount: 500, Currency: "CZK", State: "SUCCESS", DateRequested: "2026-03-02 10:00:00", DateLastChange: "2026-03-02 10:00:05"},
						{ID: 300000000102, Amount: 200, Currency: "CZK", State: "FAILED", DateRequested: "2026-03-03 09:00:00", DateLastChange: "2026-03-03 09:00:01"},
					}, l)
				}
				return err
			}, nil},
		{"create_recurrence", `{"id":3000000002,"parent_id":3000000001,"order_number":"ORD-2","state":"CREATED","amount":500,"currency":"CZK","payment_instrument":"PAYMENT_CARD"}`,
			func(c *restbackend.Client) error {
				p, err := c.CreateRecurrence(ctx, testCreds, id, &restbackend.RecurrenceRequest{
					Amount: 500, Currency: "CZK", OrderNumber: "ORD-2", OrderDescription: "Měsíční předplatné",
					Items:            []restbackend.Item{{Type: "ITEM", Name: "Předplatné", Amount: 500, Count: 1}},
					AdditionalParams: []restbackend.AdditionalParam{{Name: "period", Value: "2026-02"}},
				})
				if err == nil {
					assert.Equal(t, int64(id), p.ParentID)
				}
				return err
			}, nil},
		{"void_recurrence", resultReply, func(c *restbackend.Client) error {
			_, err := c.VoidRecurrence(ctx, testCreds, id)
			return err
		}, nil},
		{"capture", resultReply, func(c *restbackend.Client) error {
			_, err := c.Capture(ctx, testCreds, id, nil)
			return err
		}, nil},
		{"capture_partial", `{"id":3000000001,"result":"ACCEPTED"}`, func(c *restbackend.Client) error {
			r, err := c.Capture(ctx, testCreds, id, &restbackend.CaptureRequest{
				Amount: 700, Items: []restbackend.Item{{Type: "ITEM", Name: "Obuv", Amount: 700, Count: 1}},
			})
			if err == nil {
				assert.Equal(t, restbackend.ResultAccepted, r.Result)
			}
			return err
		}, nil},
		{"void_authorization", resultReply, func(c *restbackend.Client) error {
			_, err := c.VoidAuthorization(ctx, testCreds, id)
			return err
		}, nil},
		{"payment_instruments", instrumentsReply, func(c *restbackend.Client) error {
			l, err := c.PaymentInstruments(ctx, testCreds, 8123456789, "CZK")
			if err == nil {
				require.Len(t, l.EnabledPaymentInstruments, 2)
				assert.Nil(t, l.EnabledPaymentInstruments[0].EnabledSwifts)
				assert.Equal(t, "KOMBCZPP", l.EnabledPaymentInstruments[1].EnabledSwifts[0].Swift)
				assert.True(t, l.EnabledPaymentInstruments[1].EnabledSwifts[0].IsOnline)
				assert.Equal(t, "Platební karta", l.Groups["card-payment"].Label["cs"])
			}
			return err
		}, nil},
		{"account_statement", "", func(c *restbackend.Client) error {
			b, err := c.AccountStatement(ctx, testCreds, &restbackend.StatementRequest{
				DateFrom: "2026-01-01", DateTo: "2026-01-31", GoID: 8123456789, Currency: "CZK", Format: "CSV_A",
			})
			if err == nil {
				assert.Equal(t, "date;amount\n2026-01-05;1000\n", string(b))
			}
			return err
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newFakeGateway(t)
			g.setAPI(func(w http.ResponseWriter, _ *http.Request, _ *recorded) {
				if tc.reply == "" { // the statement is a file
					w.Header().Set("Content-Type", "application/octet-stream")
					w.Write([]byte("date;amount\n2026-01-05;1000\n"))
					return
				}
				writeJSON(w, http.StatusOK, tc.reply)
			})
			require.NoError(t, tc.call(g.client()))
			require.Equal(t, 1, g.callCount())
			golden(t, tc.name, render(t, g.lastCall(), tokenPrefix+"1"))
		})
	}
	t.Run("token", func(t *testing.T) {
		g := newFakeGateway(t)
		tok, err := g.client().Token(ctx, testCreds)
		require.NoError(t, err)
		assert.Equal(t, tokenPrefix+"1", tok)
		require.Equal(t, 1, g.tokenCount())
		golden(t, "token", render(t, g.tokenCalls[0], ""))
	})
}

// TestWireHeadersConfigured: Accept-Language and User-Agent come from the
// configuration.
func TestWireHeadersConfigured(t *testing.T) {
	g := newFakeGateway(t)
	c := g.client(func(c *restbackend.Config) { c.AcceptLanguage = "cs-CZ"; c.UserAgent = "eshop-bridge/2" })
	_, err := c.PaymentStatus(context.Background(), testCreds, pid)
	require.NoError(t, err)
	h := g.lastCall().Header
	assert.Equal(t, "cs-CZ", h.Get("Accept-Language"))
	assert.Equal(t, "eshop-bridge/2", h.Get("User-Agent"))
	assert.Equal(t, "cs-CZ", g.tokenCalls[0].Header.Get("Accept-Language"))
}

// TestBaseURLGetsAPI: "/api" is appended to a gateway URL only when missing.
func TestBaseURLGetsAPI(t *testing.T) {
	g := newFakeGateway(t)
	for _, base := range []string{g.srv.URL, g.srv.URL + "/", g.srv.URL + "/api", g.srv.URL + "/api/"} {
		c := g.client(func(c *restbackend.Config) { c.BaseURL = base })
		_, err := c.PaymentStatus(context.Background(), testCreds, pid)
		require.NoError(t, err, base)
		assert.Equal(t, "/api/payments/payment/3000000001", g.lastCall().Path, base)
	}
}
