package operations

// The legacy request and result types, one Go type per legacy structure.
// The legacy tag is the member's name in the legacy protocol (the SOAP
// accessor, also the base-integration form field); the SOAP adapter encodes
// and decodes them driven by the WSDL table (wsdl.Types), and a test there
// checks that both declare the same members. A Go field without a legacy
// tag is not on the wire; each such field is listed in that test.
//
// Requests keep the values exactly as sent (signatures are checked over
// them). Absent optional values are nil pointers. In results a nil pointer,
// an empty plain string and a nil struct are sent as xsi:nil.

// CustomerData is an ECustomerData.
type CustomerData struct {
	City        string `legacy:"city"`
	CountryCode string `legacy:"countryCode"`
	Email       string `legacy:"email"`
	FirstName   string `legacy:"firstName"`
	LastName    string `legacy:"lastName"`
	PhoneNumber string `legacy:"phoneNumber"`
	PostalCode  string `legacy:"postalCode"`
	Street      string `legacy:"street"`
}

// CardData is an ECustomerCardData.
type CardData struct {
	CardNumber        string `legacy:"cardNumber"`
	CardExpiration    string `legacy:"cardExpiration"`
	CardBrand         string `legacy:"cardBrand"`
	CardIssuerCountry string `legacy:"cardIssuerCountry"`
	CardIssuerBank    string `legacy:"cardIssuerBank"`
}

// PaymentCommand is an EPaymentCommand (createPayment, pay-base-v2).
type PaymentCommand struct {
	Currency              string        `legacy:"currency"`
	CustomerData          *CustomerData `legacy:"customerData"`
	DefaultPaymentChannel string        `legacy:"defaultPaymentChannel"`
	EncryptedSignature    string        `legacy:"encryptedSignature"`
	FailedURL             string        `legacy:"failedURL"`
	Lang                  string        `legacy:"lang"`
	OrderNumber           string        `legacy:"orderNumber"`
	P1                    string        `legacy:"p1"`
	P2                    string        `legacy:"p2"`
	P3                    string        `legacy:"p3"`
	P4                    string        `legacy:"p4"`
	PartnerGoID           *int64        `legacy:"partnerGoId"` // read only to reject a malformed one; not mapped
	PaymentChannels       string        `legacy:"paymentChannels"`
	PreAuthorization      *bool         `legacy:"preAuthorization"`
	ProductName           string        `legacy:"productName"`
	RecurrenceCycle       string        `legacy:"recurrenceCycle"`
	RecurrenceDateTo      string        `legacy:"recurrenceDateTo"`
	RecurrencePeriod      *int64        `legacy:"recurrencePeriod"`
	RecurrentPayment      *bool         `legacy:"recurrentPayment"`
	SuccessURL            string        `legacy:"successURL"`
	TargetGoID            *int64        `legacy:"targetGoId"`
	TotalPrice            *int64        `legacy:"totalPrice"`

	// Invalid is the first problem the adapter met reading the request
	// ("missing paymentCommand", "paymentCommand.totalPrice is not a
	// number"); a request with one is refused with it.
	Invalid string
}

// SessionInfo is an EPaymentSessionInfo.
type SessionInfo struct {
	EncryptedSignature string `legacy:"encryptedSignature"`
	PaymentSessionID   *int64 `legacy:"paymentSessionId"`
	TargetGoID         *int64 `legacy:"targetGoId"`

	Invalid string // see PaymentCommand.Invalid
}

// RefundRequest is an ERefundRequest.
type RefundRequest struct {
	Amount             *int64 `legacy:"amount"`
	Currency           string `legacy:"currency"`
	Description        string `legacy:"description"`
	EncryptedSignature string `legacy:"encryptedSignature"`
	PaymentSessionID   *int64 `legacy:"paymentSessionId"`
	TargetGoID         *int64 `legacy:"targetGoId"`

	Invalid string // see PaymentCommand.Invalid
}

// RecurrenceRequest is an ERecurrenceRequest.
type RecurrenceRequest struct {
	EncryptedSignature     string `legacy:"encryptedSignature"`
	OrderNumber            string `legacy:"orderNumber"`
	ParentPaymentSessionID *int64 `legacy:"parentPaymentSessionId"`
	TargetGoID             *int64 `legacy:"targetGoId"`
	TotalPrice             *int64 `legacy:"totalPrice"`

	Invalid string // see PaymentCommand.Invalid
}

// BuyerCreate is an EBuyerCreate.
type BuyerCreate struct {
	BuyerEmail         *string `legacy:"buyerEmail"`
	EncryptedSignature string  `legacy:"encryptedSignature"`
	EshopGoID          *int64  `legacy:"eshopGoId"`
	// BuyerUsername is not in the WSDL; the Java 2.4 library sends and
	// signs it.
	BuyerUsername string `legacyExtra:"buyerUsername"`

	Invalid string // see PaymentCommand.Invalid
}

// BuyerCreateResult is an EBuyerCreateResult.
type BuyerCreateResult struct {
	BuyerEmail         *string `legacy:"buyerEmail"`
	BuyerGoID          *int64  `legacy:"buyerGoId"`
	EncryptedSignature *string `legacy:"encryptedSignature"`
	EshopGoID          *int64  `legacy:"eshopGoId"`
	Result             string  `legacy:"result"`
	ResultDescription  *string `legacy:"resultDescription"`
}

// PaymentStatus is an EPaymentStatus reply. Nil pointers sign as empty.
type PaymentStatus struct {
	Currency               *string `legacy:"currency"`
	EncryptedSignature     *string `legacy:"encryptedSignature"` // nil when no key is known
	OrderNumber            *string `legacy:"orderNumber"`
	P1                     *string `legacy:"p1"`
	P2                     *string `legacy:"p2"`
	P3                     *string `legacy:"p3"`
	P4                     *string `legacy:"p4"`
	ParentPaymentSessionID *int64  `legacy:"parentPaymentSessionId"`
	PaymentChannel         *string `legacy:"paymentChannel"`
	PaymentSessionID       *int64  `legacy:"paymentSessionId"`
	PreAuthorization       *bool   `legacy:"preAuthorization"`
	ProductName            *string `legacy:"productName"`
	RecurrentPayment       *bool   `legacy:"recurrentPayment"`
	Result                 string  `legacy:"result"`
	ResultDescription      *string `legacy:"resultDescription"`
	SessionState           *string `legacy:"sessionState"`
	SessionSubState        *string `legacy:"sessionSubState"`
	SessionSubStateDesc    *string `legacy:"sessionSubStateDesc"`
	TargetGoID             *int64  `legacy:"targetGoId"`
	TotalPrice             *int64  `legacy:"totalPrice"`
}

// PaymentStatusWCust is an EPaymentStatusWCust reply: EPaymentStatus and,
// after its members, the payer's contact, card and the card's country.
type PaymentStatusWCust struct {
	PaymentStatus
	CustomerData           *CustomerData `legacy:"customerData"`
	CustomerCardData       *CardData     `legacy:"customerCardData"`
	PaymentInstCountryCode *string       `legacy:"paymentInstCountryCode"`
}

// PaymentResult is an EPaymentResult reply.
type PaymentResult struct {
	EncryptedSignature *string `legacy:"encryptedSignature"`
	PaymentSessionID   *int64  `legacy:"paymentSessionId"`
	Result             string  `legacy:"result"`
	ResultDescription  *string `legacy:"resultDescription"`
}

// PaymentMethod is one EPaymentMethod of paymentMethodList.
type PaymentMethod struct {
	Code                    string `legacy:"code"`
	Description             string `legacy:"description"`
	Logo                    string `legacy:"logo"`
	Offline                 bool   `legacy:"offline"`
	PaymentMethod           string `legacy:"paymentMethod"`
	SupportPreauthorization bool   `legacy:"supportPreauthorization"`
	SupportRecurrent        bool   `legacy:"supportRecurrent"`
	SupportedCurrency       string `legacy:"supportedCurrency"`
}
