package operations

import (
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/soapenc"
)

// Values of the legacy result fields.
const (
	CallCompleted = "CALL_COMPLETED" // EPaymentStatus.result
	CallFailed    = "CALL_FAILED"
	Finished      = "FINISHED" // EPaymentResult.result, EBuyerCreateResult.result
	Accepted      = "ACCEPTED"
	Failed        = "FAILED"
)

// Types of the replies (and of their members).
var (
	typeStatus      = soapenc.QName{Space: NSProvider, Local: "EPaymentStatus"}
	typeStatusWCust = soapenc.QName{Space: NSProvider, Local: "EPaymentStatusWCust"}
	typeCustomer    = soapenc.QName{Space: NSProvider, Local: "ECustomerData"}
	typeCard        = soapenc.QName{Space: NSProvider, Local: "ECustomerCardData"}
	typeMethod      = soapenc.QName{Space: NSProvider, Local: "EPaymentMethod"}
	typeBuyerResult = soapenc.QName{Space: NSProvider, Local: "EBuyerCreateResult"}
	typeResult      = soapenc.QName{Space: NSGate, Local: "EPaymentResult"}
)

// arrayOfMethods is the name of the paymentMethodList array type, which
// lives in the service namespace.
const arrayOfMethods = "ArrayOf_tns1_EPaymentMethod"

// Status is an EPaymentStatus (or EPaymentStatusWCust) reply. Nil pointers
// are sent as xsi:nil and sign as empty.
type Status struct {
	Currency            *string
	OrderNumber         *string
	P                   [4]*string // p1..p4
	ParentID            *int64     // parentPaymentSessionId
	PaymentChannel      *string
	PaymentID           *int64 // paymentSessionId
	PreAuthorization    *bool
	ProductName         *string
	RecurrentPayment    *bool
	Result              string
	ResultDescription   *string
	SessionState        *string
	SessionSubState     *string
	SessionSubStateDesc *string
	GoID                *int64 // targetGoId
	TotalPrice          *int64
	Signature           *string // encryptedSignature; nil when no key is known

	// Members of EPaymentStatusWCust only.
	Customer    *restbackend.Contact
	Card        *restbackend.PaymentCard
	InstCountry *string // paymentInstCountryCode
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// SignatureFields are the paymentStatus signature fields over the values
// exactly as the reply carries them.
func (st *Status) SignatureFields() []string {
	return PaymentStatusFields{
		TargetGoID:             FormatOptInt(st.GoID),
		ProductName:            deref(st.ProductName),
		TotalPrice:             FormatOptInt(st.TotalPrice),
		Currency:               deref(st.Currency),
		OrderNumber:            deref(st.OrderNumber),
		RecurrentPayment:       FormatBool(st.RecurrentPayment),
		ParentPaymentSessionID: FormatOptInt(st.ParentID),
		PreAuthorization:       FormatBool(st.PreAuthorization),
		Result:                 st.Result,
		SessionState:           deref(st.SessionState),
		SessionSubState:        deref(st.SessionSubState),
		PaymentChannel:         deref(st.PaymentChannel),
	}.Fields()
}

// Sign sets the signature with secureKey.
func (st *Status) Sign(secureKey string) error {
	sig, err := Sign(secureKey, st.SignatureFields()...)
	if err != nil {
		return err
	}
	st.Signature = &sig
	return nil
}

// Value renders the reply as part name; wcust selects EPaymentStatusWCust,
// whose extra members follow those of EPaymentStatus.
func (st *Status) Value(name string, wcust bool) *soapenc.Value {
	b := func(n string, v *bool) *soapenc.Value { return soapenc.NewBool(n, soapenc.TypeBoolean, v) }
	result := st.Result
	fields := []*soapenc.Value{
		soapenc.NewString("currency", st.Currency),
		soapenc.NewString("encryptedSignature", st.Signature),
		soapenc.NewString("orderNumber", st.OrderNumber),
		soapenc.NewString("p1", st.P[0]),
		soapenc.NewString("p2", st.P[1]),
		soapenc.NewString("p3", st.P[2]),
		soapenc.NewString("p4", st.P[3]),
		soapenc.NewLong("parentPaymentSessionId", st.ParentID),
		soapenc.NewString("paymentChannel", st.PaymentChannel),
		soapenc.NewLong("paymentSessionId", st.PaymentID),
		b("preAuthorization", st.PreAuthorization),
		soapenc.NewString("productName", st.ProductName),
		b("recurrentPayment", st.RecurrentPayment),
		soapenc.NewString("result", &result),
		soapenc.NewString("resultDescription", st.ResultDescription),
		soapenc.NewString("sessionState", st.SessionState),
		soapenc.NewString("sessionSubState", st.SessionSubState),
		soapenc.NewString("sessionSubStateDesc", st.SessionSubStateDesc),
		soapenc.NewLong("targetGoId", st.GoID),
		soapenc.NewLong("totalPrice", st.TotalPrice),
	}
	if !wcust {
		return soapenc.NewStruct(name, typeStatus, fields...)
	}
	fields = append(fields, customerValue(st.Customer), cardValue(st.Card),
		soapenc.NewString("paymentInstCountryCode", st.InstCountry))
	return soapenc.NewStruct(name, typeStatusWCust, fields...)
}

// opt turns an empty string into absent.
func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optInt(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func ptr[T any](v T) *T { return &v }

func customerValue(c *restbackend.Contact) *soapenc.Value {
	if c == nil {
		return &soapenc.Value{Name: "customerData", Type: typeCustomer, Kind: soapenc.KindStruct, Nil: true}
	}
	return soapenc.NewStruct("customerData", typeCustomer,
		soapenc.NewString("city", opt(c.City)),
		soapenc.NewString("countryCode", opt(c.CountryCode)),
		soapenc.NewString("email", opt(c.Email)),
		soapenc.NewString("firstName", opt(c.FirstName)),
		soapenc.NewString("lastName", opt(c.LastName)),
		soapenc.NewString("phoneNumber", opt(c.PhoneNumber)),
		soapenc.NewString("postalCode", opt(c.PostalCode)),
		soapenc.NewString("street", opt(c.Street)),
	)
}

func cardValue(c *restbackend.PaymentCard) *soapenc.Value {
	if c == nil {
		return &soapenc.Value{Name: "customerCardData", Type: typeCard, Kind: soapenc.KindStruct, Nil: true}
	}
	return soapenc.NewStruct("customerCardData", typeCard,
		soapenc.NewString("cardNumber", opt(c.CardNumber)),
		soapenc.NewString("cardExpiration", opt(c.CardExpiration)),
		soapenc.NewString("cardBrand", opt(c.CardBrand)),
		soapenc.NewString("cardIssuerCountry", opt(c.CardIssuerCountry)),
		soapenc.NewString("cardIssuerBank", opt(c.CardIssuerBank)),
	)
}

// Result is an EPaymentResult reply.
type Result struct {
	PaymentID         *int64
	Result            string
	ResultDescription *string
	Signature         *string
}

// Sign sets the paymentResult signature with secureKey.
func (r *Result) Sign(secureKey string) error {
	sig, err := Sign(secureKey, PaymentResultFields(FormatOptInt(r.PaymentID), r.Result)...)
	if err != nil {
		return err
	}
	r.Signature = &sig
	return nil
}

// Value renders the reply as part name.
func (r *Result) Value(name string) *soapenc.Value {
	result := r.Result
	return soapenc.NewStruct(name, typeResult,
		soapenc.NewString("encryptedSignature", r.Signature),
		soapenc.NewLong("paymentSessionId", r.PaymentID),
		soapenc.NewString("result", &result),
		soapenc.NewString("resultDescription", r.ResultDescription),
	)
}
