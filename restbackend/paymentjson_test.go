package restbackend

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fullPayment has every field of a Payment and its structs set, some
// strings with characters encoding/json escapes.
var fullPayment = Payment{
	ID: 3000000002, ParentID: 3000000001, OrderNumber: "ORD-<1>", State: StatePaid, SubState: "_101",
	Amount: -12900, Currency: "CZK", PaymentInstrument: InstrumentPaymentCard,
	Payer: &Payer{
		AllowedPaymentInstruments: []string{InstrumentBankAccount, InstrumentPaymentCard},
		DefaultPaymentInstrument:  InstrumentBankAccount,
		AllowedSwifts:             []string{"KOMBCZPP", "GIBACZPX"},
		DefaultSwift:              "KOMBCZPP",
		Contact: &Contact{FirstName: "Jan", LastName: "Novák \"Honza\"", Email: "jan@example.cz", PhoneNumber: "+420777123456",
			City: "Praha", Street: "Dlouhá 1\n", PostalCode: "11000", CountryCode: "CZE"},
		VerifyPin: "1234", AllowedCardToken: "tok", RequestCardToken: true,
		PaymentCard: &PaymentCard{CardNumber: "418803******0003", CardExpiration: "2912", CardBrand: "VISA",
			CardIssuerCountry: "CZE", CardIssuerBank: "SANDBOX BANK, A.S.", ThreeDSResult: "Y/Y", CardToken: "ct\u2028"},
		BankAccount: &BankAccount{IBAN: "CZ65", BIC: "KOMBCZPP", PrefixNumber: "19", AccountNumber: "123",
			BankCode: "0100", AccountName: "Jan 😀"},
	},
	Target:           &Target{Type: "ACCOUNT", GoID: 8123456789},
	AdditionalParams: []AdditionalParam{{Name: "p1", Value: "a"}, {Name: "p4", Value: "x&y<z>"}},
	Lang:             "CS",
	Recurrence:       &Recurrence{RecurrenceCycle: CycleMonth, RecurrencePeriod: 1, RecurrenceDateTo: "2027-12-31", RecurrenceState: "STARTED"},
	Preauthorization: &Preauthorization{Requested: true, State: "REQUESTED"},
	EET:              &EET{CelkTrzba: 12900, ZaklDan1: 10000, Dan1: 2100, ZaklDan2: 700, Dan2: 100, Mena: "CZK"},
	GwURL:            "https://sandbox.test/gw/v3/T5eX1Y_9at4EHuCUepv-5-bC",
}

// recordedPayments are the payment replies of testdata/sdk (the sandbox's
// answers to the official libraries' calls).
func recordedPayments(t testing.TB) [][]byte {
	t.Helper()
	files, err := filepath.Glob("../testdata/sdk/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Steps []struct {
				Reply json.RawMessage `json:"reply"`
			} `json:"steps"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, s := range rec.Steps {
			var probe map[string]json.RawMessage
			if json.Unmarshal(s.Reply, &probe) == nil && probe["state"] != nil && probe["order_number"] != nil {
				out = append(out, s.Reply)
			}
		}
	}
	return out
}

func sameAsStd(t *testing.T, body []byte) (fast bool) {
	t.Helper()
	var want Payment
	stdErr := json.Unmarshal(body, &want)
	var got Payment
	if !decodePayment(body, &got) {
		var viaDecode Payment
		err := decodeJSON(body, &viaDecode)
		if (err == nil) != (stdErr == nil) || (err == nil && !reflect.DeepEqual(viaDecode, want)) {
			t.Fatalf("fallback of %q: %+v, %v; encoding/json %+v, %v", body, viaDecode, err, want, stdErr)
		}
		return false
	}
	if stdErr != nil {
		t.Fatalf("decodePayment took %q, encoding/json refuses it: %v", body, stdErr)
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Fatalf("decodePayment(%q)\n got %s\nwant %s", body, gj, wj)
	}
	return true
}

// TestDecodePaymentFast: the replies the sandbox makes (every field, the
// escapes of encoding/json, compact and indented, the recorded ones) take
// the fast path and come out as encoding/json decodes them.
func TestDecodePaymentFast(t *testing.T) {
	full, err := json.Marshal(fullPayment)
	if err != nil {
		t.Fatal(err)
	}
	indented, _ := json.MarshalIndent(fullPayment, "", "\t")
	bodies := [][]byte{full, indented, []byte(`{}`), []byte(` {"id":1} `),
		[]byte(`{"id":1,"payer":{"allowed_swifts":[],"contact":{}},"additional_params":[],"eet_code":{"fik":"x","n":[1.5e3,-0,true,null,{"a":[]}]}}`),
		[]byte(`{"id":1,"order_number":"\ud83d\ude00 \ud800 \u00e9\/\b\f\n\r\t\\\""}`),
		[]byte("{\"id\":1,\"order_number\":\"bad \xff utf8\"}"),
	}
	bodies = append(bodies, recordedPayments(t)...)
	for _, b := range bodies {
		if !sameAsStd(t, b) {
			t.Errorf("%q went to encoding/json", b)
		}
	}
	var p Payment
	if !decodePayment(full, &p) || !reflect.DeepEqual(p, fullPayment) {
		t.Errorf("round trip: %+v", p)
	}
}

// TestDecodePaymentLeavesToStd: what decodePayment does not take goes to
// encoding/json, which decodes or refuses it as before.
func TestDecodePaymentLeavesToStd(t *testing.T) {
	for _, b := range []string{
		`null`, `[]`, `{"id":null}`, `{"id":1,"id":2}`, `{"ID":1}`, `{"Id":1,"id":2}`, `{"amount":1.0}`, `{"amount":1e3}`,
		`{"amount":"1"}`, `{"amount":9223372036854775808}`, `{"amount":01}`, `{"payer":{"contact":null}}`,
		`{"payer":{"request_card_token":1}}`, `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
		`{"id":1}x`, `{"id":1,}`, `{"order_number":"a\'b"}`, `{"order_number":"tab	"}`, `{"\u0069d":5}`,
		`{"payer":{"allowed_swifts":["a",null]}}`, `{"ordeR_number":"x"}`, `{"eet":{"mena":"CZK","mena":"EUR"}}`,
		`{"id":1`, ``, `{"lang":"x\u12"}`, `{"x":tru}`, `{"x":-}`, `{"x":1.}`, `{"x":1e}`,
	} {
		sameAsStd(t, []byte(b))
	}
	if decodePayment([]byte(`{"id":1,"id":2}`), new(Payment)) {
		t.Error("a duplicate member took the fast path")
	}
}

// FuzzDecodePayment: whatever decodePayment takes, encoding/json takes and
// decodes to the same Payment; what it leaves, decodeJSON decodes as
// encoding/json does.
func FuzzDecodePayment(f *testing.F) {
	full, _ := json.Marshal(fullPayment)
	f.Add(full)
	f.Add([]byte(`{"id":1,"order_number":"\ud83d\ude00 \ud800\u0041","eet_code":[1,{"a":"b"}],"payer":{"contact":{"email":"é"}}}`))
	for _, b := range recordedPayments(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsStd(t, body)
	})
}

// BenchmarkDecodePayment: the sandbox's status reply of a paid card
// payment, by decodePayment and by encoding/json, in one run:
//
//	go test ./restbackend -run '^$' -bench DecodePayment -benchmem -count 6
func BenchmarkDecodePayment(b *testing.B) {
	body := []byte(`{"id":3000000001,"order_number":"42","state":"PAID","amount":12900,"currency":"CZK","payment_instrument":"PAYMENT_CARD",` +
		`"payer":{"allowed_payment_instruments":["BANK_ACCOUNT","PAYMENT_CARD"],"default_payment_instrument":"BANK_ACCOUNT","allowed_swifts":["KOMBCZPP"],` +
		`"default_swift":"KOMBCZPP","contact":{"first_name":"Jan","last_name":"Novák","email":"jan@example.cz","phone_number":"+420777123456",` +
		`"city":"Praha","street":"Dlouhá 1","postal_code":"11000","country_code":"CZE"},"payment_card":{"card_number":"418803******0003",` +
		`"card_expiration":"2912","card_brand":"VISA","card_issuer_country":"CZE","card_issuer_bank":"SANDBOX BANK, A.S.","3ds_result":"Y/Y"}},` +
		`"target":{"type":"ACCOUNT","goid":8123456789},"additional_params":[{"name":"p1","value":"a"},{"name":"p4","value":"x\u0026y\u003cz\u003e"}],` +
		`"lang":"CS","gw_url":"https://sandbox.test/gw/v3/T5eX1Y_9at4EHuCUepv-5-bC"}`)
	b.Run("decodePayment", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p Payment
			if !decodePayment(body, &p) {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p Payment
			if err := json.Unmarshal(body, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
