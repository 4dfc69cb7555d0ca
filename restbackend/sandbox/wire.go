package sandbox

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/legacybridge/soapbridge/restbackend"
)

// The request bodies the sandbox reads. Each mirrors a restbackend request
// type and converts to it (rest), but is lenient where the real gateway is:
// the official SDKs send numbers as JSON strings ("amount":"1900",
// "goid":"8123456789"), booleans as strings ("preauthorization":"true"),
// vat_rate as an integer and ean as a string. Unknown fields stay refused
// (decodeJSON). wire_test.go holds each mirror to its restbackend type: the
// same JSON keys, and nothing lost in the conversion. Replies are built from
// restbackend's types, so they carry real numbers.

// num is an integer sent as a JSON number or as a string holding one.
type num int64

func (n *num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	s, quoted := unquote(b)
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		what := "number " + s
		if quoted {
			what = "string " + strconv.Quote(s)
		}
		return &json.UnmarshalTypeError{Value: what, Type: reflect.TypeFor[int64]()}
	}
	*n = num(v)
	return nil
}

// boolText is a boolean sent as true/false or as the string "true"/"false".
type boolText bool

func (f *boolText) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	s, _ := unquote(b)
	v, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return &json.UnmarshalTypeError{Value: strconv.Quote(s), Type: reflect.TypeFor[bool]()}
	}
	*f = boolText(v)
	return nil
}

// text is a string that may also arrive as a JSON number (vat_rate: 21).
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	s, quoted := unquote(b)
	if !quoted {
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return &json.UnmarshalTypeError{Value: s, Type: reflect.TypeFor[string]()}
		}
	}
	*t = text(s)
	return nil
}

// unquote returns the content of a JSON string, or b itself for any other value.
func unquote(b []byte) (string, bool) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) == nil {
			return s, true
		}
	}
	return string(b), false
}

type targetIn struct {
	Type string `json:"type"`
	GoID num    `json:"goid"`
}

type itemIn struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Amount     num    `json:"amount"`
	Count      num    `json:"count"`
	VatRate    text   `json:"vat_rate"`
	EAN        text   `json:"ean"`
	ProductURL string `json:"product_url"`
}

type payerIn struct {
	AllowedPaymentInstruments []string             `json:"allowed_payment_instruments"`
	DefaultPaymentInstrument  string               `json:"default_payment_instrument"`
	AllowedSwifts             []string             `json:"allowed_swifts"`
	DefaultSwift              string               `json:"default_swift"`
	Contact                   *restbackend.Contact `json:"contact"`
	VerifyPin                 string               `json:"verify_pin"`
	AllowedCardToken          string               `json:"allowed_card_token"`
	RequestCardToken          boolText             `json:"request_card_token"`
}

type recurrenceIn struct {
	RecurrenceCycle  string `json:"recurrence_cycle"`
	RecurrencePeriod num    `json:"recurrence_period"`
	RecurrenceDateTo string `json:"recurrence_date_to"`
}

// eetIn has the fields the interface names; others are refused as unknown.
type eetIn struct {
	CelkTrzba num    `json:"celk_trzba"`
	ZaklDan1  num    `json:"zakl_dan1"`
	Dan1      num    `json:"dan1"`
	ZaklDan2  num    `json:"zakl_dan2"`
	Dan2      num    `json:"dan2"`
	Mena      string `json:"mena"`
}

// createIn is the body of POST /payments/payment.
type createIn struct {
	Payer            *payerIn                      `json:"payer"`
	Target           targetIn                      `json:"target"`
	Items            []itemIn                      `json:"items"`
	Amount           num                           `json:"amount"`
	Currency         string                        `json:"currency"`
	OrderNumber      string                        `json:"order_number"`
	OrderDescription string                        `json:"order_description"`
	Lang             string                        `json:"lang"`
	Callback         *restbackend.Callback         `json:"callback"`
	AdditionalParams []restbackend.AdditionalParam `json:"additional_params"`
	Preauthorization boolText                      `json:"preauthorization"`
	Recurrence       *recurrenceIn                 `json:"recurrence"`
	EET              *eetIn                        `json:"eet"`
}

// recurrenceReqIn is the body of create-recurrence.
type recurrenceReqIn struct {
	Amount           num                           `json:"amount"`
	Currency         string                        `json:"currency"`
	OrderNumber      string                        `json:"order_number"`
	OrderDescription string                        `json:"order_description"`
	Items            []itemIn                      `json:"items"`
	AdditionalParams []restbackend.AdditionalParam `json:"additional_params"`
	EET              *eetIn                        `json:"eet"`
}

// captureIn is the body of a partial capture; an EET merchant's carries the
// captured sale's eet (the documentation's partial_preauthorized_capture_eet).
type captureIn struct {
	Amount num      `json:"amount"`
	Items  []itemIn `json:"items"`
	EET    *eetIn   `json:"eet"`
}

// refundIn is the JSON body of a refund (the form body is the ordinary one).
type refundIn struct {
	Amount num      `json:"amount"`
	Items  []itemIn `json:"items"`
	EET    *eetIn   `json:"eet"`
}

// statementIn is the body of the account statement call.
type statementIn struct {
	DateFrom string `json:"date_from"`
	DateTo   string `json:"date_to"`
	GoID     num    `json:"goid"`
	Currency string `json:"currency"`
	Format   string `json:"format"`
}

func (e *eetIn) rest() *restbackend.EET {
	if e == nil {
		return nil
	}
	return &restbackend.EET{CelkTrzba: int64(e.CelkTrzba), ZaklDan1: int64(e.ZaklDan1), Dan1: int64(e.Dan1),
		ZaklDan2: int64(e.ZaklDan2), Dan2: int64(e.Dan2), Mena: e.Mena}
}

// items converts items, checking what only the converted form can say
// (an ean that is not a number); problems go to v.
func items(v *validator, in []itemIn) []restbackend.Item {
	var out []restbackend.Item
	for i, it := range in {
		ean := int64(0)
		if s := strings.TrimSpace(string(it.EAN)); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				v.add(codeWrongFormat, "items["+strconv.Itoa(i)+"].ean", "ean must be a number (8 to 14 digits)")
			}
			ean = n
		}
		out = append(out, restbackend.Item{Type: it.Type, Name: it.Name, Amount: int64(it.Amount), Count: int64(it.Count),
			VatRate: string(it.VatRate), EAN: ean, ProductURL: it.ProductURL})
	}
	return out
}

// rest converts a create body; v collects conversion problems.
func (c *createIn) rest(v *validator) restbackend.PaymentRequest {
	r := restbackend.PaymentRequest{
		Target:           restbackend.Target{Type: c.Target.Type, GoID: int64(c.Target.GoID)},
		Items:            items(v, c.Items),
		Amount:           int64(c.Amount),
		Currency:         c.Currency,
		OrderNumber:      c.OrderNumber,
		OrderDescription: c.OrderDescription,
		Lang:             c.Lang,
		Callback:         c.Callback,
		AdditionalParams: c.AdditionalParams,
		Preauthorization: bool(c.Preauthorization),
		EET:              c.EET.rest(),
	}
	if p := c.Payer; p != nil {
		r.Payer = &restbackend.Payer{AllowedPaymentInstruments: p.AllowedPaymentInstruments, DefaultPaymentInstrument: p.DefaultPaymentInstrument,
			AllowedSwifts: p.AllowedSwifts, DefaultSwift: p.DefaultSwift, Contact: p.Contact, VerifyPin: p.VerifyPin,
			AllowedCardToken: p.AllowedCardToken, RequestCardToken: bool(p.RequestCardToken)}
	}
	if rc := c.Recurrence; rc != nil {
		r.Recurrence = &restbackend.Recurrence{RecurrenceCycle: rc.RecurrenceCycle, RecurrencePeriod: int64(rc.RecurrencePeriod), RecurrenceDateTo: rc.RecurrenceDateTo}
	}
	return r
}

// rest converts a create-recurrence body; v collects conversion problems.
func (r *recurrenceReqIn) rest(v *validator) restbackend.RecurrenceRequest {
	return restbackend.RecurrenceRequest{Amount: int64(r.Amount), Currency: r.Currency, OrderNumber: r.OrderNumber,
		OrderDescription: r.OrderDescription, Items: items(v, r.Items), AdditionalParams: r.AdditionalParams, EET: r.EET.rest()}
}

// rest converts a partial capture body; v collects conversion problems.
func (c *captureIn) rest(v *validator) restbackend.CaptureRequest {
	return restbackend.CaptureRequest{Amount: int64(c.Amount), Items: items(v, c.Items), EET: c.EET.rest()}
}

// rest converts a JSON refund body; v collects conversion problems.
func (r *refundIn) rest(v *validator) restbackend.RefundRequest {
	return restbackend.RefundRequest{Amount: int64(r.Amount), Items: items(v, r.Items), EET: r.EET.rest()}
}

// rest converts a statement body; it has nothing only the converted form can check.
func (s *statementIn) rest(*validator) restbackend.StatementRequest {
	return restbackend.StatementRequest{DateFrom: s.DateFrom, DateTo: s.DateTo, GoID: int64(s.GoID), Currency: s.Currency, Format: s.Format}
}

// decodeAs decodes body into the mirror In (a refusal when it does not
// decode) and converts it with rest, which adds its problems to v.
func decodeAs[In, Out any](body []byte, v *validator, rest func(*In, *validator) Out) (Out, error) {
	var in In
	if err := decodeJSON(body, &in); err != nil {
		var zero Out
		return zero, err
	}
	return rest(&in, v), nil
}
