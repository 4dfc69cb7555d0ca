package sandbox

import (
	"time"
	_ "time/tzdata" // Europe/Prague even where the system has no zoneinfo

	"github.com/legacybridge/soapbridge/restbackend"
)

// prague is the gateway's local time: statement dates and recurrence end
// dates are calendar days there.
var prague = func() *time.Location {
	l, err := time.LoadLocation("Europe/Prague")
	if err != nil {
		panic(err)
	}
	return l
}()

var currencies = map[string]bool{"CZK": true, "EUR": true, "PLN": true, "HUF": true, "GBP": true, "USD": true, "RON": true, "BGN": true}

var languages = map[string]bool{"CS": true, "EN": true, "SK": true, "DE": true, "RU": true, "PL": true, "HU": true, "FR": true, "RO": true,
	"BG": true, "HR": true, "IT": true, "ES": true, "UK": true, "ET": true, "LT": true, "LV": true, "SL": true, "PT": true}

var instrumentNames = map[string]bool{"PAYMENT_CARD": true, "BANK_ACCOUNT": true, "PRSMS": true, "MPAYMENT": true, "PAYSAFECARD": true,
	"SUPERCASH": true, "GOPAY": true, "PAYPAL": true, "BITCOIN": true, "ACCOUNT": true, "GPAY": true, "APPLE_PAY": true,
	"CLICK_TO_PAY": true, "TWISTO": true, "SKIPPAY": true}

// instrumentDef is one instrument the sandbox enables.
type instrumentDef struct {
	code       string
	group      string
	cs, en     string
	currencies []string // nil: every currency
}

// enabledInstruments are the instruments every sandbox merchant has, in the
// order the page and the list show them.
var enabledInstruments = []instrumentDef{
	{"PAYMENT_CARD", "card-payment", "Platební karta", "Payment card", nil},
	{"APPLE_PAY", "card-payment", "Apple Pay", "Apple Pay", nil},
	{"GPAY", "card-payment", "Google Pay", "Google Pay", nil},
	{"BANK_ACCOUNT", "bank-transfer", "Rychlý bankovní převod", "Instant bank transfer", nil},
	{"GOPAY", "wallet", "GoPay účet", "GoPay wallet", []string{"CZK", "EUR"}},
	{"PAYPAL", "wallet", "PayPal", "PayPal", nil},
	{"PAYSAFECARD", "others", "paysafecard", "paysafecard", []string{"CZK", "EUR"}},
}

var groupLabels = map[string]map[string]string{
	"card-payment":  {"cs": "Platební karta", "en": "Payment card"},
	"bank-transfer": {"cs": "Rychlý bankovní převod", "en": "Instant bank transfer"},
	"wallet":        {"cs": "Elektronické peněženky", "en": "E-wallets"},
	"others":        {"cs": "Ostatní", "en": "Others"},
}

// swiftDef is one bank button.
type swiftDef struct {
	swift    string
	name     string
	currency string // CZK banks for CZK, SK banks for EUR
	online   bool
}

var swifts = []swiftDef{
	{"GIBACZPX", "Česká spořitelna", "CZK", true},
	{"KOMBCZPP", "Komerční banka", "CZK", true},
	{"CEKOCZPP", "ČSOB", "CZK", true},
	{"RZBCCZPP", "Raiffeisenbank", "CZK", true},
	{"BACXCZPP", "UniCredit Bank CZ", "CZK", true},
	{"AGBACZPP", "Moneta Money Bank", "CZK", true},
	{"FIOBCZPP", "Fio banka", "CZK", true},
	{"BREXCZPP", "mBank", "CZK", true},
	{"AIRACZPP", "Air Bank", "CZK", true},
	{"TATRSKBX", "Tatra banka", "EUR", true},
	{"SUBASKBX", "Všeobecná úverová banka", "EUR", true},
	{"UNCRSKBX", "UniCredit Bank SK", "EUR", true},
	{"GIBASKBX", "Slovenská sporiteľňa", "EUR", true},
	{"POBNSKBA", "Poštová banka", "EUR", true},
	{"CEKOSKBX", "ČSOB SK", "EUR", true},
	{"OTPVSKBX", "OTP Banka", "EUR", true},
	{"OTHERS", "Jiná banka / Other bank", "", false},
}

func findSwift(code string) (swiftDef, bool) {
	for _, s := range swifts {
		if s.swift == code {
			return s, true
		}
	}
	return swiftDef{}, false
}

// swiftsFor are the banks offered for a currency (OTHERS for CZK and EUR).
func swiftsFor(currency string) []swiftDef {
	var out []swiftDef
	for _, s := range swifts {
		if s.currency == currency || (s.swift == "OTHERS" && (currency == "CZK" || currency == "EUR")) {
			out = append(out, s)
		}
	}
	return out
}

// instrumentsFor are the instruments enabled for a currency.
func instrumentsFor(currency string) []instrumentDef {
	var out []instrumentDef
	for _, d := range enabledInstruments {
		if d.currencies == nil || contains(d.currencies, currency) {
			out = append(out, d)
		}
	}
	return out
}

func instrumentEnabled(code, currency string) bool {
	for _, d := range instrumentsFor(currency) {
		if d.code == code {
			return true
		}
	}
	return false
}

// instrumentList builds the reply of the payment-instruments call.
func instrumentList(base, currency string) *restbackend.InstrumentList {
	l := &restbackend.InstrumentList{Groups: map[string]restbackend.InstrumentGroup{}, EnabledPaymentInstruments: []restbackend.Instrument{}}
	for _, d := range instrumentsFor(currency) {
		l.Groups[d.group] = restbackend.InstrumentGroup{Label: groupLabels[d.group]}
		in := restbackend.Instrument{
			PaymentInstrument: d.code,
			Label:             map[string]string{"cs": d.cs, "en": d.en},
			Image:             imageOf(base, d.code),
			Group:             d.group,
		}
		if d.code == "BANK_ACCOUNT" {
			in.EnabledSwifts = []restbackend.Swift{}
			for _, s := range swiftsFor(currency) {
				in.EnabledSwifts = append(in.EnabledSwifts, restbackend.Swift{
					Swift: s.swift, Label: map[string]string{"cs": s.name, "en": s.name},
					Image: imageOf(base, s.swift), IsOnline: s.online,
				})
			}
		}
		l.EnabledPaymentInstruments = append(l.EnabledPaymentInstruments, in)
	}
	return l
}

func imageOf(base, code string) restbackend.Image {
	return restbackend.Image{
		Normal: base + "/gp-gw/images/" + code + ".svg",
		Large:  base + "/gp-gw/images/" + code + "@2x.svg",
	}
}
