package operations

import (
	"strings"

	"github.com/legacybridge/soapbridge/operations/usage"
)

// What a call uses of the legacy protocol beyond its operation, for the
// usage record (package usage): the features a shop must carry over to
// REST and the things REST has no equivalent for. Read from the request as
// sent, once the call is verified (call.finish): a request refused after
// its signature verified still shows what the shop relies on; one that
// does not verify shows nothing (anyone can send it).

// LegacyUses lists what a call of operation op (a SOAP operation or a
// usage.Flow* name) with request req uses, for m: features (each once) and
// retired things. req is the operation's request (*PaymentCommand,
// *RefundRequest, *BuyerCreate, *StatementRequest, ...; nil when it takes
// none).
func (m Merchant) LegacyUses(op string, req any) (features []usage.Feature, retired []string) {
	u := uses{}
	switch r := req.(type) {
	case *PaymentCommand:
		u.command(r)
	case *RefundRequest:
		if trim(r.Description) != "" {
			u.feature(usage.FeatureRefundDescription)
		}
	case *BuyerCreate:
		u.retire(usage.RetiredOperation("createBuyer"))
	case *StatementRequest:
		u.statement(r)
	}
	if op == "voidRecurrentPayment" && m.VoidRecurrentReply == ReplyPaymentSession {
		u.feature(usage.FeatureVoidRecurrentReply)
	}
	return u.features, u.retired
}

type uses struct {
	features []usage.Feature
	retired  []string
}

func (u *uses) feature(f usage.Feature) {
	for _, x := range u.features {
		if x == f {
			return
		}
	}
	u.features = append(u.features, f)
}

func (u *uses) retire(what string) {
	for _, x := range u.retired {
		if x == what {
			return
		}
	}
	u.retired = append(u.retired, what)
}

func (u *uses) command(c *PaymentCommand) {
	if trim(c.P1) != "" || trim(c.P2) != "" || trim(c.P3) != "" || trim(c.P4) != "" {
		u.feature(usage.FeatureParams)
	}
	if cd := c.CustomerData; cd != nil && *cd != (CustomerData{}) {
		u.feature(usage.FeatureCustomerData)
	}
	if trim(c.PaymentChannels) != "" {
		u.feature(usage.FeaturePaymentChannels)
		for _, code := range strings.Split(c.PaymentChannels, ",") {
			u.channel(code)
		}
	}
	if trim(c.DefaultPaymentChannel) != "" {
		u.feature(usage.FeatureDefaultChannel)
		u.channel(c.DefaultPaymentChannel)
	}
	if trim(c.Lang) != "" {
		u.feature(usage.FeatureLang)
	}
	if c.PreAuthorization != nil && *c.PreAuthorization {
		u.feature(usage.FeaturePreauthorization)
	}
	if c.RecurrentPayment != nil && *c.RecurrentPayment {
		if f, ok := usage.RecurrenceFeature(c.RecurrenceCycle); ok {
			u.feature(f)
		}
	}
	if c.PartnerGoID != nil {
		u.retire(usage.RetiredField("partnerGoId"))
	}
}

// channel notes one code of paymentChannels or defaultPaymentChannel: a
// mapped one as a feature in the table's spelling, an unknown one or one
// the channel table maps to nothing (a channel not offered any more) as
// retired.
func (u *uses) channel(code string) {
	code = trim(code)
	if code == "" {
		return
	}
	c, ok := channelByCode(code)
	switch {
	case !ok:
		u.retire(usage.RetiredChannel(code))
	case c.Instrument == "":
		u.retire(usage.RetiredChannel(c.Code))
	default:
		u.feature(usage.ChannelFeature(c.Code))
	}
}

func (u *uses) statement(r *StatementRequest) {
	if trim(r.Currency) == "" {
		u.feature(usage.FeatureStatementNoCurrency)
	}
	kind := strings.TrimPrefix(strings.ToUpper(trim(r.ContentType)), "TYPE_")
	switch kind {
	case "", "CSV":
		u.feature(usage.FeatureStatementCSV)
	case "XLS":
		u.feature(usage.FeatureStatementXLS)
	case "ABO":
		u.feature(usage.FeatureStatementABO)
	default:
		if _, ok := statementFormats[kind]; ok {
			u.feature(usage.FeatureStatementREST)
		}
	}
}

// ChannelREST is the REST equivalent of a legacy channel code: the payment
// instrument and, for a bank's button, its SWIFT code. ok is false for a
// code the bridge does not know.
func ChannelREST(code string) (instrument, swift string, ok bool) {
	c, ok := channelByCode(code)
	return c.Instrument, c.Swift, ok
}

// ChannelCodes lists the legacy channel codes the bridge knows, in table
// order.
func ChannelCodes() []string {
	out := make([]string, len(channels))
	for i, c := range channels {
		out[i] = c.Code
	}
	return out
}
