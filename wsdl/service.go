// Package wsdl describes the EPaymentServiceV2 SOAP interface: the
// operations, their messages and types, and the WSDL document the legacy
// clients download from `{soap path}?wsdl` to build their stubs. It knows
// the service description (with the members each signature covers, a fact
// of the same messages), nothing of payments or of the wire encoding.
package wsdl

import "strings"

// Namespaces of the service description. The type and input namespaces are
// fixed by the legacy clients; the service (target) namespace is
// configurable and defaults to DefaultServiceNamespace.
const (
	NSWSDL       = "http://schemas.xmlsoap.org/wsdl/"
	NSWSDLSOAP   = "http://schemas.xmlsoap.org/wsdl/soap/"
	NSSOAPEnc    = "http://schemas.xmlsoap.org/soap/encoding/"
	NSXSD        = "http://www.w3.org/2001/XMLSchema"
	NSApacheSOAP = "http://xml.apache.org/xml-soap"
	NSHTTP       = "http://schemas.xmlsoap.org/soap/http"

	// NSTypes (prefix tns1) holds the EPayment structures.
	NSTypes = "urn:AxisEPaymentProvider"
	// NSGate (prefix tns2) holds EPaymentResult and the request structures
	// of recurrence and refund.
	NSGate = "http://gate.gopay.cz/ws"
	// NSInput is the body namespace of every request.
	NSInput = "http://axis.web.gopay.cz"

	// DefaultServiceNamespace is the original test service's namespace;
	// keeping it lets stubs generated from the old WSDL match replies.
	DefaultServiceNamespace = "https://testgw.gopay.cz/axis/EPaymentServiceV2"
)

// Names of the WSDL components, as in the original service.
const (
	PortTypeName = "AxisEPaymentProviderV2"
	BindingName  = "EPaymentServiceV2SoapBinding"
	ServiceName  = "AxisEPaymentProviderV2Service"
	PortName     = "EPaymentServiceV2"
)

// Type names are written with the document's fixed prefixes: soapenc, xsd,
// tns1 (NSTypes), tns2 (NSGate) and impl (the service namespace).

// Part is one part of a message: its name and (prefixed) type.
type Part struct {
	Name string
	Type string
}

// Operation is one operation of the port type. refundPayment appears twice
// (overloaded), told apart by its message names.
type Operation struct {
	Name   string
	Input  string // input message name
	Output string // output message name
	Param  *Part  // the single input part; nil when the operation takes none
	Return Part
}

// OperationNames are the names of Operations, each once (refundPayment
// has two forms), in the port type's order.
func OperationNames() []string {
	var names []string
	for _, op := range Operations {
		if len(names) == 0 || names[len(names)-1] != op.Name {
			names = append(names, op.Name)
		}
	}
	return names
}

// Operations are the operations of the service in the port type's order.
// The WSDL is generated from this list; the SOAP dispatcher can check its
// table against it.
var Operations = []Operation{
	op("createPayment", "", &Part{"paymentCommand", "tns1:EPaymentCommand"}, "tns1:EPaymentStatus"),
	op("voidAuthorization", "", sessionInfo, "tns2:EPaymentResult"),
	op("createRecurrentPayment", "", &Part{"recurrenceRequest", "tns2:ERecurrenceRequest"}, "tns1:EPaymentStatus"),
	op("refundPayment", "", sessionInfo, "tns2:EPaymentResult"),
	op("refundPayment", "1", refundRequest, "tns2:EPaymentResult"),
	op("partiallyRefundPayment", "", refundRequest, "tns2:EPaymentResult"),
	op("paymentStatus", "", paymentSessionInfo, "tns1:EPaymentStatus"),
	op("paymentStatusWCust", "", paymentSessionInfo, "tns1:EPaymentStatusWCust"),
	op("voidRecurrentPayment", "", sessionInfo, "tns2:EPaymentResult"),
	op("createBuyer", "", &Part{"buyerCreate", "tns1:EBuyerCreate"}, "tns1:EBuyerCreateResult"),
	op("capturePayment", "", sessionInfo, "tns2:EPaymentResult"),
	op("paymentMethodList", "", nil, "impl:ArrayOf_tns1_EPaymentMethod"),
	op("touch", "", nil, "soapenc:string"),
}

var (
	sessionInfo        = &Part{"sessionInfo", "tns1:EPaymentSessionInfo"}
	paymentSessionInfo = &Part{"paymentSessionInfo", "tns1:EPaymentSessionInfo"}
	refundRequest      = &Part{"refundRequest", "tns2:ERefundRequest"}
)

// op builds an operation with Axis's naming: messages <name>Request<n> and
// <name>Response<n>, return part <name>Return.
func op(name, n string, param *Part, ret string) Operation {
	return Operation{
		Name:   name,
		Input:  name + "Request" + n,
		Output: name + "Response" + n,
		Param:  param,
		Return: Part{name + "Return", ret},
	}
}

// Field is one member of a structure. Required members are not nillable
// (the xsd:boolean flags of EPaymentMethod).
type Field struct {
	Name     string
	Type     string
	Required bool
}

// Type is a structure, or (ArrayOf set) a soapenc:Array of ArrayOf items.
type Type struct {
	Prefix  string // schema: tns1, tns2 or impl
	Name    string
	Fields  []Field
	ArrayOf string
	// Signature are the members its encryptedSignature covers, in the
	// order they are joined (legacy-protocol.md, "The signature scheme"),
	// for the types whose signature covers members of their own beyond the
	// goid and session id; not part of the document. Package operations
	// joins those signatures by it.
	Signature []Signed
}

// Signed is a member a signature covers. Trim: the legacy libraries trim
// it of surrounding whitespace before joining.
type Signed struct {
	Name string
	Trim bool
}

// Find returns the type of Types named name.
func Find(name string) (Type, bool) {
	for _, t := range Types {
		if t.Name == name {
			return t, true
		}
	}
	return Type{}, false
}

// Types are the schema types in document order.
var Types = []Type{
	{Prefix: "tns1", Name: "ECustomerData", Fields: strs("city", "countryCode", "email", "firstName", "lastName", "phoneNumber", "postalCode", "street")},
	{Prefix: "tns1", Name: "EPaymentCommand", Fields: []Field{
		str("currency"), {Name: "customerData", Type: "tns1:ECustomerData"},
		str("defaultPaymentChannel"), str("encryptedSignature"), str("failedURL"), str("lang"), str("orderNumber"),
		str("p1"), str("p2"), str("p3"), str("p4"),
		long("partnerGoId"), str("paymentChannels"), boolean("preAuthorization"), str("productName"),
		str("recurrenceCycle"), str("recurrenceDateTo"), {Name: "recurrencePeriod", Type: "soapenc:int"},
		boolean("recurrentPayment"), str("successURL"), long("targetGoId"), long("totalPrice"),
	}, Signature: signed("targetGoId", "productName*", "totalPrice", "currency*", "orderNumber*", "failedURL*", "successURL*",
		"preAuthorization", "recurrentPayment", "recurrenceDateTo*", "recurrenceCycle*", "recurrencePeriod*", "paymentChannels*")},
	{Prefix: "tns1", Name: "EPaymentStatus", Fields: paymentStatusFields, Signature: paymentStatusSignature},
	{Prefix: "tns1", Name: "EPaymentSessionInfo", Fields: []Field{str("encryptedSignature"), long("paymentSessionId"), long("targetGoId")}},
	{Prefix: "tns1", Name: "EBuyerCreate", Fields: []Field{str("buyerEmail"), str("encryptedSignature"), long("eshopGoId")}},
	{Prefix: "tns1", Name: "EBuyerCreateResult", Fields: []Field{
		str("buyerEmail"), long("buyerGoId"), str("encryptedSignature"), long("eshopGoId"), str("result"), str("resultDescription"),
	}},
	{Prefix: "tns1", Name: "EPaymentMethod", Fields: []Field{
		str("code"), str("description"), str("logo"), required("offline"), str("paymentMethod"),
		required("supportPreauthorization"), required("supportRecurrent"), str("supportedCurrency"),
	}},
	// Not in the original (Axis) WSDL: the specification adds
	// paymentStatusWCust. Its reply extends EPaymentStatus by appending the
	// customer, the card and the instrument's country (read by clients of
	// that era), flat rather than by xsd:extension, which old toolkits
	// handle poorly.
	{Prefix: "tns1", Name: "ECustomerCardData", Fields: strs("cardNumber", "cardExpiration", "cardBrand", "cardIssuerCountry", "cardIssuerBank")},
	{Prefix: "tns1", Name: "EPaymentStatusWCust", Fields: append(append([]Field(nil), paymentStatusFields...),
		Field{Name: "customerData", Type: "tns1:ECustomerData"},
		Field{Name: "customerCardData", Type: "tns1:ECustomerCardData"},
		str("paymentInstCountryCode"),
	), Signature: paymentStatusSignature},

	{Prefix: "tns2", Name: "EPaymentResult", Fields: []Field{str("encryptedSignature"), long("paymentSessionId"), str("result"), str("resultDescription")}},
	{Prefix: "tns2", Name: "ERecurrenceRequest", Fields: []Field{
		str("encryptedSignature"), str("orderNumber"), long("parentPaymentSessionId"), long("targetGoId"), long("totalPrice"),
	}},
	{Prefix: "tns2", Name: "ERefundRequest", Fields: []Field{
		long("amount"), str("currency"), str("description"), str("encryptedSignature"), long("paymentSessionId"), long("targetGoId"),
	}},

	{Prefix: "impl", Name: "ArrayOf_tns1_EPaymentMethod", ArrayOf: "tns1:EPaymentMethod"},
}

var paymentStatusFields = []Field{
	str("currency"), str("encryptedSignature"), str("orderNumber"),
	str("p1"), str("p2"), str("p3"), str("p4"),
	long("parentPaymentSessionId"), str("paymentChannel"), long("paymentSessionId"),
	boolean("preAuthorization"), str("productName"), boolean("recurrentPayment"),
	str("result"), str("resultDescription"), str("sessionState"), str("sessionSubState"), str("sessionSubStateDesc"),
	long("targetGoId"), long("totalPrice"),
}

// paymentStatusSignature is the paymentStatus signature, of every
// EPaymentStatus reply (and of EPaymentStatusWCust, which extends it).
var paymentStatusSignature = signed("targetGoId", "productName*", "totalPrice", "currency", "orderNumber*",
	"recurrentPayment", "parentPaymentSessionId", "preAuthorization", "result", "sessionState", "sessionSubState", "paymentChannel")

// signed lists signature members as legacy-protocol.md writes them: a
// trimmed one marked with a trailing *.
func signed(names ...string) []Signed {
	out := make([]Signed, len(names))
	for i, n := range names {
		name, trim := strings.CutSuffix(n, "*")
		out[i] = Signed{Name: name, Trim: trim}
	}
	return out
}

func str(name string) Field      { return Field{Name: name, Type: "soapenc:string"} }
func long(name string) Field     { return Field{Name: name, Type: "soapenc:long"} }
func boolean(name string) Field  { return Field{Name: name, Type: "soapenc:boolean"} }
func required(name string) Field { return Field{Name: name, Type: "xsd:boolean", Required: true} }

func strs(names ...string) []Field {
	fs := make([]Field, len(names))
	for i, n := range names {
		fs[i] = str(n)
	}
	return fs
}
