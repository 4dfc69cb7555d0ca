package operations

import (
	"strings"

	"golang.org/x/text/language"
)

// Language and country codes as legacy clients write them, mapped onto the
// forms the REST gateway accepts (rest-facts.md: two-letter upper-case
// language codes; spec: three-letter country codes in payer.contact).
//
// Legacy clients disagree: the PHP library sends "CS" or "cs", a Django
// library allows only "CZE", Java shops send locale strings. An unknown
// value must never fail a payment (the gateway would refuse it with 409), so
// the callers fall back and log a warning instead.

// gatewayLangs are the languages the gateway lists (rest-facts.md).
var gatewayLangs = map[string]bool{
	"CS": true, "EN": true, "SK": true, "DE": true, "RU": true, "PL": true, "HU": true,
	"FR": true, "RO": true, "BG": true, "HR": true, "IT": true, "ES": true, "UK": true,
	"ET": true, "LT": true, "LV": true, "SL": true, "PT": true,
}

// langAliases maps the other spellings of the gateway's languages onto them:
// ISO 639-2 bibliographic and terminology codes, the ISO 3166 alpha-3 code
// of the country where the language is the national one (shops fill lang
// from their country setting: SVK, POL), and the few two-letter country
// codes that differ from the language code (CZ for Czech). Where a
// three-letter code is both a language and an unrelated country (SLV is
// Slovenian and El Salvador) the language wins: the field is a language.
var langAliases = map[string]string{
	"CZE": "CS", "CES": "CS", "CZ": "CS",
	"ENG": "EN", "GBR": "EN", "GB": "EN",
	"SLO": "SK", "SLK": "SK", "SVK": "SK",
	"GER": "DE", "DEU": "DE",
	"RUS": "RU",
	"POL": "PL",
	"HUN": "HU",
	"FRE": "FR", "FRA": "FR",
	"RUM": "RO", "RON": "RO", "ROU": "RO",
	"BUL": "BG", "BGR": "BG",
	"HRV": "HR", "SCR": "HR",
	"ITA": "IT",
	"SPA": "ES", "ESP": "ES",
	"UKR": "UK", "UA": "UK",
	"EST": "ET", "EE": "ET",
	"LIT": "LT", "LTU": "LT",
	"LAV": "LV", "LVA": "LV",
	"SLV": "SL", "SVN": "SL", "SI": "SL",
	"POR": "PT", "PRT": "PT",
}

// GatewayLang maps a legacy lang value onto the gateway's language code:
// two- or three-letter codes in any case, also a locale such as "cs_CZ" or
// "en-US" (its language part counts). An empty value asks for no language
// and gives ("", true): the request leaves lang out, as before. A value that
// names no language the gateway offers gives (fallback, false): the caller
// sends the merchant's default language and logs a warning naming the value
// and the merchant.
func GatewayLang(lang, fallback string) (code string, known bool) {
	s := strings.ToUpper(trim(lang))
	if s == "" {
		return "", true
	}
	if i := strings.IndexAny(s, "-_"); i > 0 {
		s = s[:i]
	}
	if gatewayLangs[s] {
		return s, true
	}
	if c, ok := langAliases[s]; ok {
		return c, true
	}
	return strings.ToUpper(trim(fallback)), false
}

// GatewayCountry maps a legacy customerData.countryCode onto the three-letter
// ISO 3166 code the REST payer contact carries. Legacy clients mostly send
// three letters already (CZE, SVK), some two (CZ, sk); any case is accepted.
// Empty gives ("", true). A value that is no country gives ("", false): the
// caller leaves the country out (the contact is optional data that only
// helps the payment along) and logs a warning.
func GatewayCountry(code string) (iso3 string, known bool) {
	s := strings.ToUpper(trim(code))
	if s == "" {
		return "", true
	}
	if (len(s) != 2 && len(s) != 3) || strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return "", false
	}
	// CS was Czechoslovakia and later Serbia and Montenegro; from a Czech
	// shop it is more likely the language code. Neither guess is safe.
	if s == "CS" {
		return "", false
	}
	r, err := language.ParseRegion(s)
	if err != nil || !r.IsCountry() {
		return "", false
	}
	// UK → GB and other aliases of a current code.
	iso3 = r.Canonicalize().ISO3()
	if len(iso3) != 3 || iso3 == "ZZZ" {
		return "", false
	}
	return iso3, true
}
