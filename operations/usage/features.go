package usage

import "strings"

// Feature is a legacy feature a call used beyond its operation: what a shop
// must carry over to REST besides the calls themselves. Names are stable:
// they are stored and appear in the report's JSON.
type Feature string

// Features of the legacy requests and flows. The report's mapping table
// (operations/usage/report) says what replaces each in REST.
const (
	FeatureParams              Feature = "p1-p4"                 // paymentCommand.p1 … p4
	FeatureCustomerData        Feature = "customerData"          // paymentCommand.customerData
	FeaturePaymentChannels     Feature = "paymentChannels"       // paymentCommand.paymentChannels
	FeatureDefaultChannel      Feature = "defaultPaymentChannel" // paymentCommand.defaultPaymentChannel
	FeatureLang                Feature = "lang"                  // paymentCommand.lang
	FeaturePreauthorization    Feature = "preAuthorization"      // paymentCommand.preAuthorization = true
	FeatureRecurrenceDay       Feature = "recurrence DAY"
	FeatureRecurrenceWeek      Feature = "recurrence WEEK"
	FeatureRecurrenceMonth     Feature = "recurrence MONTH"
	FeatureRecurrenceOnDemand  Feature = "recurrence ON_DEMAND"
	FeatureRefundDescription   Feature = "refund description" // refundRequest.description (REST has none)
	FeatureStatementCSV        Feature = "statement CSV"
	FeatureStatementXLS        Feature = "statement XLS"
	FeatureStatementABO        Feature = "statement ABO"
	FeatureStatementREST       Feature = "statement REST format"               // contentType given as a REST format (CSV_A …)
	FeatureStatementNoCurrency Feature = "statement without currency"          // the Java 2.4 and .NET libraries' four-field request
	FeatureWindows1250         Feature = "charset windows-1250"                // a SOAP body or form in windows-1250
	FeatureISO88592            Feature = "charset iso-8859-2"                  // a SOAP body in ISO-8859-2
	FeatureVoidRecurrentReply  Feature = "void_recurrent_reply paymentSession" // the merchant's .NET reply setting
)

// AllFeatures lists the constant features, in report order. Channel
// features (ChannelFeature) follow the channel table.
var AllFeatures = []Feature{
	FeatureParams, FeatureCustomerData, FeaturePaymentChannels, FeatureDefaultChannel, FeatureLang,
	FeaturePreauthorization, FeatureRecurrenceDay, FeatureRecurrenceWeek, FeatureRecurrenceMonth,
	FeatureRecurrenceOnDemand, FeatureRefundDescription, FeatureStatementCSV, FeatureStatementXLS,
	FeatureStatementABO, FeatureStatementREST, FeatureStatementNoCurrency, FeatureWindows1250, FeatureISO88592,
	FeatureVoidRecurrentReply,
}

// channelPrefix starts the name of a channel feature and of a retired
// channel.
const channelPrefix = "channel "

// ChannelFeature is the feature of a legacy payment channel code the
// bridge maps to REST; code must be the channel table's own spelling (never
// the client's text: the table bounds the set).
func ChannelFeature(code string) Feature { return Feature(channelPrefix + code) }

// ChannelOf is the code of a channel feature or retired channel, and
// whether name is one.
func ChannelOf(name string) (string, bool) { return strings.CutPrefix(name, channelPrefix) }

// RecurrenceFeature is the feature of a recurrence cycle (DAY, WEEK,
// MONTH, ON_DEMAND, any case); ok is false for any other text.
func RecurrenceFeature(cycle string) (Feature, bool) {
	switch strings.ToUpper(strings.TrimSpace(cycle)) {
	case "DAY":
		return FeatureRecurrenceDay, true
	case "WEEK":
		return FeatureRecurrenceWeek, true
	case "MONTH":
		return FeatureRecurrenceMonth, true
	case "ON_DEMAND":
		return FeatureRecurrenceOnDemand, true
	}
	return "", false
}

// Retired things: what a shop still uses that has no REST equivalent.

// RetiredChannel names a channel code the REST interface has no
// equivalent for (a bank that no longer exists, a service no longer
// offered, a code no table knows). The code is client-supplied: the
// Recorder bounds its length and how many distinct ones it keeps.
func RetiredChannel(code string) string { return channelPrefix + code }

// RetiredOperation names an operation without a REST equivalent
// (createBuyer).
func RetiredOperation(name string) string { return "operation " + name }

// RetiredField names a request field the bridge reads but REST has no
// place for (partnerGoId).
func RetiredField(name string) string { return "field " + name }
