// Package restbackend is the client of the payment gateway's REST interface.
// The sandbox gateway (package sandbox beside it) is the server side of the
// same interface and shares these types.
package restbackend

import "encoding/json"

// Scopes of the OAuth2 token.
const (
	ScopePaymentCreate = "payment-create"
	ScopePaymentAll    = "payment-all"
)

// Payment states.
const (
	StateCreated             = "CREATED"
	StatePaymentMethodChosen = "PAYMENT_METHOD_CHOSEN"
	StatePaid                = "PAID"
	StateAuthorized          = "AUTHORIZED"
	StateCanceled            = "CANCELED"
	StateTimeouted           = "TIMEOUTED"
	StateRefunded            = "REFUNDED"
	StatePartiallyRefunded   = "PARTIALLY_REFUNDED"
)

// Results of operations (refund, capture, voids).
const (
	ResultFinished = "FINISHED"
	ResultAccepted = "ACCEPTED"
	ResultFailed   = "FAILED"
)

// Payment instruments.
const (
	InstrumentPaymentCard = "PAYMENT_CARD"
	InstrumentBankAccount = "BANK_ACCOUNT"
)

// Recurrence cycles.
const (
	CycleDay      = "DAY"
	CycleWeek     = "WEEK"
	CycleMonth    = "MONTH"
	CycleOnDemand = "ON_DEMAND"
)

// Token is the reply of POST /oauth2/token.
type Token struct {
	TokenType    string `json:"token_type"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	ExpiresIn    int64  `json:"expires_in"`
}

// Contact is the payer's data.
type Contact struct {
	FirstName   string `json:"first_name,omitempty"`
	LastName    string `json:"last_name,omitempty"`
	Email       string `json:"email,omitempty"`
	PhoneNumber string `json:"phone_number,omitempty"`
	City        string `json:"city,omitempty"`
	Street      string `json:"street,omitempty"`
	PostalCode  string `json:"postal_code,omitempty"`
	CountryCode string `json:"country_code,omitempty"`
}

// PaymentCard is the card used, inside payer of a status reply.
type PaymentCard struct {
	CardNumber        string `json:"card_number,omitempty"`
	CardExpiration    string `json:"card_expiration,omitempty"`
	CardBrand         string `json:"card_brand,omitempty"`
	CardIssuerCountry string `json:"card_issuer_country,omitempty"`
	CardIssuerBank    string `json:"card_issuer_bank,omitempty"`
	ThreeDSResult     string `json:"3ds_result,omitempty"`
	CardToken         string `json:"card_token,omitempty"`
}

// BankAccount is the account used, inside payer of a status reply. Its
// fields are not specified; these are the ones the official libraries show.
type BankAccount struct {
	IBAN          string `json:"iban,omitempty"`
	BIC           string `json:"bic,omitempty"`
	PrefixNumber  string `json:"prefix,omitempty"`
	AccountNumber string `json:"account_number,omitempty"`
	BankCode      string `json:"bank_code,omitempty"`
	AccountName   string `json:"account_name,omitempty"`
}

// Payer holds payment method settings and payer data. One type serves the
// request and the reply; the fields marked so appear in one of them only.
type Payer struct {
	AllowedPaymentInstruments []string     `json:"allowed_payment_instruments,omitempty"`
	DefaultPaymentInstrument  string       `json:"default_payment_instrument,omitempty"`
	AllowedSwifts             []string     `json:"allowed_swifts,omitempty"`
	DefaultSwift              string       `json:"default_swift,omitempty"`
	Contact                   *Contact     `json:"contact,omitempty"`
	VerifyPin                 string       `json:"verify_pin,omitempty"`
	AllowedCardToken          string       `json:"allowed_card_token,omitempty"`
	RequestCardToken          bool         `json:"request_card_token,omitempty"` // requests only: store the card once paid
	PaymentCard               *PaymentCard `json:"payment_card,omitempty"`       // replies only
	BankAccount               *BankAccount `json:"bank_account,omitempty"`       // replies only
}

// Target is the recipient of a payment.
type Target struct {
	Type string `json:"type"` // "ACCOUNT"
	GoID int64  `json:"goid"`
}

// Item is one order line.
type Item struct {
	Type       string `json:"type,omitempty"` // ITEM, DISCOUNT, DELIVERY
	Name       string `json:"name"`
	Amount     int64  `json:"amount"`
	Count      int64  `json:"count,omitempty"`
	VatRate    string `json:"vat_rate,omitempty"`
	EAN        int64  `json:"ean,omitempty"`
	ProductURL string `json:"product_url,omitempty"`
}

// Callback holds the return and notification URLs.
type Callback struct {
	ReturnURL       string `json:"return_url"`
	NotificationURL string `json:"notification_url"`
}

// AdditionalParam is a free name/value pair (at most 4 per payment).
type AdditionalParam struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Recurrence makes a payment recurring.
type Recurrence struct {
	RecurrenceCycle  string `json:"recurrence_cycle"`
	RecurrencePeriod int64  `json:"recurrence_period,omitempty"`
	RecurrenceDateTo string `json:"recurrence_date_to,omitempty"` // YYYY-MM-DD
	RecurrenceState  string `json:"recurrence_state,omitempty"`   // replies only
}

// Preauthorization is the preauthorization block of a reply.
type Preauthorization struct {
	Requested bool   `json:"requested"`
	State     string `json:"state,omitempty"`
}

// EET holds fiscal data (EET variant B merchants only).
type EET struct {
	CelkTrzba int64  `json:"celk_trzba"`
	ZaklDan1  int64  `json:"zakl_dan1,omitempty"`
	Dan1      int64  `json:"dan1,omitempty"`
	ZaklDan2  int64  `json:"zakl_dan2,omitempty"`
	Dan2      int64  `json:"dan2,omitempty"`
	Mena      string `json:"mena"`
}

// PaymentRequest is the body of POST /payments/payment.
type PaymentRequest struct {
	Payer            *Payer            `json:"payer,omitempty"`
	Target           Target            `json:"target"`
	Items            []Item            `json:"items,omitempty"`
	Amount           int64             `json:"amount"`
	Currency         string            `json:"currency"`
	OrderNumber      string            `json:"order_number"`
	OrderDescription string            `json:"order_description,omitempty"`
	Lang             string            `json:"lang,omitempty"`
	Callback         *Callback         `json:"callback,omitempty"`
	AdditionalParams []AdditionalParam `json:"additional_params,omitempty"`
	Preauthorization bool              `json:"preauthorization,omitempty"`
	Recurrence       *Recurrence       `json:"recurrence,omitempty"`
	EET              *EET              `json:"eet,omitempty"`
}

// Payment is the reply of creation, status and on-demand recurrence.
type Payment struct {
	ID                int64             `json:"id"`
	ParentID          int64             `json:"parent_id,omitempty"`
	OrderNumber       string            `json:"order_number"`
	State             string            `json:"state"`
	SubState          string            `json:"sub_state,omitempty"`
	Amount            int64             `json:"amount"`
	Currency          string            `json:"currency"`
	PaymentInstrument string            `json:"payment_instrument,omitempty"`
	Payer             *Payer            `json:"payer,omitempty"`
	Target            *Target           `json:"target,omitempty"`
	AdditionalParams  []AdditionalParam `json:"additional_params,omitempty"`
	Lang              string            `json:"lang,omitempty"`
	Recurrence        *Recurrence       `json:"recurrence,omitempty"`
	Preauthorization  *Preauthorization `json:"preauthorization,omitempty"`
	EET               *EET              `json:"eet,omitempty"`
	GwURL             string            `json:"gw_url,omitempty"`
}

// RecurrenceRequest is the body of POST /payments/payment/{id}/create-recurrence.
type RecurrenceRequest struct {
	Amount           int64             `json:"amount"`
	Currency         string            `json:"currency"`
	OrderNumber      string            `json:"order_number"`
	OrderDescription string            `json:"order_description,omitempty"`
	Items            []Item            `json:"items"`
	AdditionalParams []AdditionalParam `json:"additional_params,omitempty"`
	EET              *EET              `json:"eet,omitempty"`
}

// CaptureRequest is the body of a partial capture. EET merchants send the
// captured sale's fiscal data with it, as the gateway's documentation
// example of a partial capture does.
type CaptureRequest struct {
	Amount int64  `json:"amount,omitempty"`
	Items  []Item `json:"items,omitempty"`
	EET    *EET   `json:"eet,omitempty"`
}

// RefundRequest is the JSON body of a refund that carries EET data, as the
// official libraries send it. This client refunds with the form body
// (amount only); the sandbox reads both.
type RefundRequest struct {
	Amount int64  `json:"amount"`
	Items  []Item `json:"items,omitempty"`
	EET    *EET   `json:"eet,omitempty"`
}

// Result is the reply of refund, capture and the voids.
type Result struct {
	ID     int64  `json:"id"`
	Result string `json:"result"`
}

// States of a refund in the refund history (not the operation results:
// the history says SUCCESS where a refund call answered FINISHED).
const (
	RefundSucceeded = "SUCCESS"
	RefundRequested = "REQUESTED"
	RefundFailed    = "FAILED"
)

// Refund is one entry of a payment's refund history
// (GET /payments/payment/{id}/refunds; not in the specification, the
// official client libraries offer it).
type Refund struct {
	ID             int64  `json:"id"`
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency,omitempty"`
	State          string `json:"state"` // RefundSucceeded, RefundFailed or RefundRequested
	DateRequested  string `json:"date_requested,omitempty"`
	DateLastChange string `json:"date_last_change,omitempty"`
}

// InstrumentList is the reply of the enabled payment instruments call.
type InstrumentList struct {
	Groups                    map[string]InstrumentGroup `json:"groups"`
	EnabledPaymentInstruments []Instrument               `json:"enabledPaymentInstruments"`
}

// InstrumentGroup is one group of instruments (card-payment, bank-transfer, wallet, others).
type InstrumentGroup struct {
	Label map[string]string `json:"label"`
}

// Image holds the URLs of an instrument's or bank's logo.
type Image struct {
	Normal string `json:"normal"`
	Large  string `json:"large"`
}

// Instrument is one enabled payment instrument.
type Instrument struct {
	PaymentInstrument string            `json:"paymentInstrument"`
	Label             map[string]string `json:"label"`
	Image             Image             `json:"image"`
	Group             string            `json:"group"`
	EnabledSwifts     []Swift           `json:"enabledSwifts"` // null when the instrument has no banks
}

// Swift is one bank offered by BANK_ACCOUNT.
type Swift struct {
	Swift    string            `json:"swift"`
	Label    map[string]string `json:"label"`
	Image    Image             `json:"image"`
	IsOnline bool              `json:"isOnline"`
}

// StatementRequest is the body of POST /accounts/account-statement.
type StatementRequest struct {
	DateFrom string `json:"date_from"` // YYYY-MM-DD
	DateTo   string `json:"date_to"`
	GoID     int64  `json:"goid"`
	Currency string `json:"currency"`
	Format   string `json:"format"` // CSV_A …
}

// ErrorBody is the body of every failed call.
type ErrorBody struct {
	DateIssued string      `json:"date_issued,omitempty"`
	Errors     []ErrorItem `json:"errors"`
}

// UnmarshalJSON accepts date_issued as a timestamp string (every recorded
// reply) or as epoch milliseconds (one published example), which becomes its
// decimal text: a refusal must not turn into a malformed reply over it.
func (b *ErrorBody) UnmarshalJSON(data []byte) error {
	type plain ErrorBody
	var raw struct {
		plain
		DateIssued json.RawMessage `json:"date_issued"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*b = ErrorBody(raw.plain)
	d := raw.DateIssued
	switch {
	case len(d) == 0 || string(d) == "null":
	case d[0] == '"':
		return json.Unmarshal(d, &b.DateIssued)
	default:
		var n json.Number
		if err := json.Unmarshal(d, &n); err != nil {
			return err
		}
		b.DateIssued = n.String()
	}
	return nil
}

// ErrorItem is one entry of an error list.
type ErrorItem struct {
	Scope       string `json:"scope,omitempty"` // G or F
	Field       string `json:"field,omitempty"`
	ErrorCode   int    `json:"error_code"`
	ErrorName   string `json:"error_name,omitempty"`
	Message     string `json:"message,omitempty"`
	Description string `json:"description,omitempty"`
}
