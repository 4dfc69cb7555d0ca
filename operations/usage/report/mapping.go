package report

import (
	"strings"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/restbackend"
)

// Row is one line of the mapping table: a legacy operation, flow, feature
// or retired thing, what replaces it in REST and what the shop changes.
// The table is the project's one statement of the SOAP-to-REST mapping
// for shops; docs/mapping.md is checked against it (mapping_test.go).
type Row struct {
	Name string // as the usage record names it
	// REST is what replaces it: an endpoint ("POST /payments/payment"), a
	// field of one, or "none".
	REST string
	// Fields are the REST fields that carry it, spelled as docs/mapping.md
	// writes them.
	Fields []string
	// Change is what the shop changes in its own code.
	Change string
	// Call is the REST call of the examples; nil when there is none to make.
	Call *Call
}

// Call is a REST call as the examples write it in each language.
type Call struct {
	Method string
	// Path may hold {id}, {goid} and {currency}: the shop's variables.
	Path string
	JSON obj // JSON body; nil: none
	Form obj // form body (refund); nil: none
	// Result names the variable the reply goes into.
	Result string
	// Then is what the shop does with the reply, a comment after the call.
	Then string
}

// Endpoints of the REST interface the rows use: the paths of the REST
// client's table.
const (
	restCreate      = "POST " + restbackend.PathCreatePayment
	restStatus      = "GET " + restbackend.PathPayment
	restCapture     = "POST " + restbackend.PathCapture
	restVoidAuth    = "POST " + restbackend.PathVoidAuthorization
	restVoidRecur   = "POST " + restbackend.PathVoidRecurrence
	restRefund      = "POST " + restbackend.PathRefund
	restRecurrence  = "POST " + restbackend.PathCreateRecurrence
	restInstruments = "GET " + restbackend.PathInstruments
	restStatement   = "POST " + restbackend.PathStatement
	restNone        = "none"
)

func call(endpoint string, result, then string) *Call {
	method, path, _ := strings.Cut(endpoint, " ")
	return &Call{Method: method, Path: path, Result: result, Then: then}
}

func (c *Call) withJSON(body obj) *Call { c.JSON = body; return c }
func (c *Call) withForm(body obj) *Call { c.Form = body; return c }

// paymentBody is the create-payment request the examples show.
func paymentBody() obj {
	return o("target", o("type", "ACCOUNT", "goid", shopVar("goid")),
		"amount", 12900,
		"currency", "CZK",
		"order_number", shopVar("orderNumber"),
		"order_description", shopVar("productName"),
		"items", arr{o("type", "ITEM", "name", shopVar("productName"), "amount", 12900, "count", 1)},
		"callback", o("return_url", "https://eshop.example/return", "notification_url", "https://eshop.example/notify"),
		"lang", "CS")
}

// fragment is a create-payment body of which only the feature's part is
// shown.
func fragment(pairs ...any) obj { return append(o(pairs...), kv{k: elided}) }

// operationRows are the operations' rows, in no particular order: a report
// lists operations in the WSDL table's order (orderOf).
var operationRows = []Row{
	{Name: "touch", REST: restNone,
		Change: "Remove the call: REST needs no liveness check. A token request (POST /oauth2/token) proves the credentials."},
	{Name: "createPayment", REST: restCreate,
		Fields: []string{"target", "amount", "currency", "order_number", "order_description", "items", "callback"},
		Change: "Create the payment as JSON with an OAuth2 token (no encryptedSignature); the order, amount and return and notification URLs move into it.",
		Call:   call(restCreate, "payment", "send the customer to payment.gw_url (no pay-full-v2 link to build)").withJSON(paymentBody())},
	{Name: "paymentStatus", REST: restStatus,
		Fields: []string{"state", "sub_state", "payment_instrument", "additional_params"},
		Change: "Read the payment by its id; state replaces sessionState, sub_state sessionSubState (with a leading underscore), payment_instrument paymentChannel. There is no signature to verify.",
		Call:   call(restStatus, "payment", "payment.state: PAID, CANCELED, TIMEOUTED, ...")},
	{Name: "paymentStatusWCust", REST: restStatus,
		Fields: []string{"payer.contact", "payer.payment_card"},
		Change: "The same status read; the customer's contact and card are in payer.contact and payer.payment_card.",
		Call:   call(restStatus, "payment", "payment.payer.contact, payment.payer.payment_card")},
	{Name: "capturePayment", REST: restCapture,
		Change: "Capture by the payment id, without a body (the whole amount); the reply's result is FINISHED or ACCEPTED as before.",
		Call:   call(restCapture, "result", "result.result: FINISHED or ACCEPTED")},
	{Name: "voidAuthorization", REST: restVoidAuth,
		Change: "Release the preauthorized amount by the payment id.",
		Call:   call(restVoidAuth, "result", "result.result: FINISHED or ACCEPTED")},
	{Name: "voidRecurrentPayment", REST: restVoidRecur,
		Change: "End the recurrence by the id of the initiating payment; the reply carries no signature.",
		Call:   call(restVoidRecur, "result", "result.result: FINISHED or ACCEPTED")},
	{Name: "refundPayment", REST: restRefund,
		Fields: []string{"amount"},
		Change: "REST refunds an amount: where refundPayment(sessionInfo) refunded what was left, read the payment's amount and refunds first and send the rest.",
		Call:   call(restRefund, "result", "result.result: FINISHED or ACCEPTED").withForm(o("amount", shopVar("amount")))},
	{Name: "partiallyRefundPayment", REST: restRefund,
		Fields: []string{"amount"},
		Change: "Refund the amount by the payment id (form field amount); description has no REST field.",
		Call:   call(restRefund, "result", "result.result: FINISHED or ACCEPTED").withForm(o("amount", shopVar("amount")))},
	{Name: "createRecurrentPayment", REST: restRecurrence,
		Fields: []string{"amount", "currency", "order_number", "items"},
		Change: "Charge the next payment of an ON_DEMAND recurrence by the initiating payment's id; currency and items are required (the legacy call took them from the parent).",
		Call: call(restRecurrence, "payment", "payment.id is the new payment; its outcome is notified").withJSON(
			o("amount", 12900, "currency", "CZK", "order_number", shopVar("orderNumber"), "order_description", shopVar("productName"),
				"items", arr{o("type", "ITEM", "name", shopVar("productName"), "amount", 12900, "count", 1)}))},
	{Name: "paymentMethodList", REST: restInstruments,
		Change: "List the enabled payment instruments of the e-shop and currency; REST instruments replace the channel codes.",
		Call:   call(restInstruments, "instruments", "instruments.enabledPaymentInstruments: paymentInstrument, label, image, enabledSwifts")},
	{Name: "createBuyer", REST: restNone,
		Change: "Remove the call: the REST interface has no buyer accounts (the bridge already answers FAILED)."},
}

var flowRows = []Row{
	{Name: usage.FlowPayFull, REST: "gw_url",
		Fields: []string{"gw_url"},
		Change: "Send the customer to gw_url of the create-payment reply (or open the inline gateway) instead of building the signed pay-full-v2 link."},
	{Name: usage.FlowPayBase, REST: restCreate,
		Fields: []string{"gw_url"},
		Change: "The shop's server creates the payment (the form's paymentCommand fields become the JSON payment) and sends the customer to gw_url; no signed form.",
		Call:   call(restCreate, "payment", "send the customer to payment.gw_url").withJSON(paymentBody())},
	{Name: usage.FlowStatement, REST: restStatement,
		Fields: []string{"date_from", "date_to", "goid", "currency", "format"},
		Change: "Ask for the statement as JSON with a token; the reply's body is the file. The format names the variant (CSV_A, XLS_A, ABO_A, ...).",
		Call: call(restStatement, "file", "the reply body is the statement file").withJSON(
			o("date_from", "2026-01-01", "date_to", "2026-01-31", "goid", shopVar("goid"), "currency", "CZK", "format", "CSV_A"))},
	{Name: usage.FlowReturn, REST: "callback.return_url",
		Fields: []string{"callback.return_url"},
		Change: "The customer comes back to callback.return_url with ?id=<payment id>, unsigned: read the payment's state instead of verifying encryptedSignature.",
		Call:   call(restStatus, "payment", "show the order as paid when payment.state is PAID")},
	{Name: usage.FlowNotification, REST: "callback.notification_url",
		Fields: []string{"callback.notification_url"},
		Change: "Announcements come to callback.notification_url as a GET with ?id=<payment id>, unsigned: answer 200 and read the payment's state.",
		Call:   call(restStatus, "payment", "update the order from payment.state")},
}

var featureRows = []Row{
	{Name: string(usage.FeatureParams), REST: "additional_params",
		Fields: []string{"additional_params"},
		Change: "p1 to p4 become additional_params entries {name, value} (at most four); the status reply returns them the same way.",
		Call:   call(restCreate, "payment", "").withJSON(fragment("additional_params", arr{o("name", "p1", "value", shopVar("p1"))}))},
	{Name: string(usage.FeatureCustomerData), REST: "payer.contact",
		Fields: []string{"payer.contact"},
		Change: "customerData becomes payer.contact with snake_case names; country_code is three letters (CZE).",
		Call: call(restCreate, "payment", "").withJSON(fragment("payer", o("contact", o("first_name", "Jan", "last_name", "Novák",
			"email", "jan@example.cz", "phone_number", "+420777123456", "city", "Praha", "street", "Dlouhá 1",
			"postal_code", "11000", "country_code", "CZE"))))},
	{Name: string(usage.FeaturePaymentChannels), REST: "payer.allowed_payment_instruments",
		Fields: []string{"payer.allowed_payment_instruments", "allowed_swifts"},
		Change: "The channel list becomes instruments (PAYMENT_CARD, BANK_ACCOUNT, ...) and, for bank buttons, their SWIFT codes; see each channel below.",
		Call: call(restCreate, "payment", "").withJSON(fragment("payer", o("allowed_payment_instruments", arr{"PAYMENT_CARD", "BANK_ACCOUNT"},
			"allowed_swifts", arr{"KOMBCZPP"})))},
	{Name: string(usage.FeatureDefaultChannel), REST: "payer.default_payment_instrument",
		Fields: []string{"payer.default_payment_instrument", "default_swift"},
		Change: "The preselected channel becomes default_payment_instrument (and default_swift for a bank button).",
		Call: call(restCreate, "payment", "").withJSON(fragment("payer", o("default_payment_instrument", "BANK_ACCOUNT",
			"default_swift", "KOMBCZPP")))},
	{Name: string(usage.FeatureLang), REST: "lang",
		Fields: []string{"lang"},
		Change: "lang takes the gateway's two-letter codes (CS, SK, EN, DE, ...): CZE becomes CS, SVK SK.",
		Call:   call(restCreate, "payment", "").withJSON(fragment("lang", "CS"))},
	{Name: string(usage.FeaturePreauthorization), REST: "preauthorization",
		Fields: []string{"preauthorization"},
		Change: "preAuthorization becomes preauthorization: true; capture or release it with the capture and void-authorization calls.",
		Call:   call(restCreate, "payment", "later: POST /payments/payment/{id}/capture or /void-authorization").withJSON(fragment("preauthorization", true))},
	recurrenceRow(usage.FeatureRecurrenceDay, "DAY"),
	recurrenceRow(usage.FeatureRecurrenceWeek, "WEEK"),
	recurrenceRow(usage.FeatureRecurrenceMonth, "MONTH"),
	recurrenceRow(usage.FeatureRecurrenceOnDemand, "ON_DEMAND"),
	{Name: string(usage.FeatureRefundDescription), REST: restNone,
		Change: "REST refunds carry no description: keep it in the shop's own records."},
	statementRow(usage.FeatureStatementCSV, "CSV_A", "contentType CSV (TYPE_CSV) becomes format CSV_A."),
	statementRow(usage.FeatureStatementXLS, "XLS_A", "contentType XLS (TYPE_XLS) becomes format XLS_A."),
	statementRow(usage.FeatureStatementABO, "ABO_A", "contentType ABO (TYPE_ABO) becomes format ABO_A."),
	statementRow(usage.FeatureStatementREST, "CSV_B", "The REST format names (CSV_A ... PDF_A) are sent as they are."),
	{Name: string(usage.FeatureStatementNoCurrency), REST: "currency",
		Fields: []string{"currency"},
		Change: "The REST statement is of one account currency and currency is required: send it (the bridge used the merchant's default).",
		Call:   call(restStatement, "file", "").withJSON(fragment("currency", "CZK"))},
	{Name: string(usage.FeatureWindows1250), REST: "UTF-8 JSON",
		Change: "REST takes JSON in UTF-8: convert windows-1250 texts (product names, customer data) before sending; nothing is signed any more, so no charset affects a signature."},
	{Name: string(usage.FeatureISO88592), REST: "UTF-8 JSON",
		Change: "REST takes JSON in UTF-8: convert ISO-8859-2 texts before sending."},
	{Name: string(usage.FeatureVoidRecurrentReply), REST: restNone,
		Change: "REST replies carry no signature: the setting for the .NET library's check of the voidRecurrentPayment reply goes with the SOAP client."},
}

func recurrenceRow(f usage.Feature, cycle string) Row {
	rec := o("recurrence_cycle", cycle, "recurrence_period", 1, "recurrence_date_to", "2027-12-31")
	change := "recurrentPayment with recurrenceCycle " + cycle + " becomes recurrence {recurrence_cycle, recurrence_period, recurrence_date_to}; the gateway charges the following payments itself."
	if cycle == "ON_DEMAND" {
		rec = o("recurrence_cycle", cycle, "recurrence_date_to", "2027-12-31")
		change = "recurrentPayment ON_DEMAND becomes recurrence {recurrence_cycle: ON_DEMAND, recurrence_date_to}; each following payment is a create-recurrence call."
	}
	return Row{Name: string(f), REST: "recurrence",
		Fields: []string{"recurrence", "recurrence_cycle"},
		Change: change,
		Call:   call(restCreate, "payment", "").withJSON(fragment("recurrence", rec))}
}

func statementRow(f usage.Feature, format, change string) Row {
	return Row{Name: string(f), REST: "format " + format, Fields: []string{"format"}, Change: change,
		Call: call(restStatement, "file", "").withJSON(fragment("format", format))}
}

// channelRow is the row of a channel code the bridge knows.
func channelRow(code string) (Row, bool) {
	instrument, swift, ok := operations.ChannelREST(code)
	if !ok {
		return Row{}, false
	}
	if instrument == "" { // a channel of earlier years no longer offered (eu_mb_w)
		return Row{Name: string(usage.ChannelFeature(code)), REST: restNone,
			Change: "Drop the code: channel " + code + " is not offered any more; the payment offers the methods the e-shop has enabled."}, true
	}
	payer := o("allowed_payment_instruments", arr{instrument})
	rest := instrument
	change := "Channel " + code + " becomes the instrument " + instrument
	if swift != "" {
		payer = append(payer, kv{"allowed_swifts", arr{swift}})
		rest += " + SWIFT " + swift
		change += " with the bank's SWIFT code " + swift
	}
	return Row{Name: string(usage.ChannelFeature(code)), REST: rest, Fields: []string{"payer.allowed_payment_instruments"},
		Change: change + " (also for default_payment_instrument).",
		Call:   call(restCreate, "payment", "").withJSON(fragment("payer", payer))}, true
}

// retiredRow says what to do about a retired thing.
func retiredRow(what string) Row {
	switch {
	case what == usage.RetiredOperation("createBuyer"):
		return Row{Name: what, REST: restNone, Change: "Remove the call: the REST interface has no buyer accounts."}
	case what == usage.RetiredField("partnerGoId"):
		return Row{Name: what, REST: restNone, Change: "Drop the field: REST has no partner goid (the bridge already ignores it)."}
	case strings.HasPrefix(what, "channel "):
		return Row{Name: what, REST: restNone, Change: "Drop the code: it names a channel the gateway no longer offers (or none it ever knew). " +
			"The customer gets the instruments the e-shop has enabled; list them with GET /eshops/eshop/{goid}/payment-instruments/{currency}."}
	}
	return Row{Name: what, REST: restNone, Change: "No REST equivalent: remove it."}
}

// Lookup finds the row of an operation or flow, a feature (channel
// features from the channel table) or a retired thing.
func Lookup(name string) (Row, bool) {
	for _, rows := range [][]Row{operationRows, flowRows, featureRows} {
		for _, r := range rows {
			if r.Name == name {
				return r, true
			}
		}
	}
	if code, ok := usage.ChannelOf(name); ok {
		return channelRow(code)
	}
	return Row{}, false
}

// Rows lists the table: operations, flows, features, then one row per
// channel code the bridge knows.
func Rows() []Row {
	var out []Row
	out = append(out, operationRows...)
	out = append(out, flowRows...)
	out = append(out, featureRows...)
	for _, code := range operations.ChannelCodes() {
		if r, ok := channelRow(code); ok {
			out = append(out, r)
		}
	}
	return out
}
