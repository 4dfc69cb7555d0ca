package operations

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
)

// channel is one legacy payment channel code and its REST equivalent.
type channel struct {
	Code string
	// Instrument is the REST payment instrument; "" when the channel has
	// no REST equivalent today: the code is retired (the usage record says
	// so), while a code with one is mapped, even where the bank is gone.
	Instrument string
	Swift      string // the bank of a bank button; empty otherwise (also "any bank")
	// Historic: a code of earlier years. It is read wherever a shop sends
	// it, but a payment is reported with it only when the shop's own list
	// named it (reportedChannel): shops configured later know the current
	// codes.
	Historic bool
}

// channels is the legacy channel table: the last list the PHP library
// published (2015), then the codes of earlier years that shops still send
// (legacy-protocol facts, "Codes of earlier years"). Where several codes
// share a REST equivalent the first current one is what status replies and
// paymentMethodList show by default (eu_gp_u for a card).
var channels = []channel{
	{Code: "eu_gp_u", Instrument: restbackend.InstrumentPaymentCard},
	{Code: "eu_gp_kb", Instrument: restbackend.InstrumentPaymentCard},
	{Code: "eu_om", Instrument: restbackend.InstrumentPaymentCard},
	{Code: "cz_kb", Instrument: restbackend.InstrumentBankAccount, Swift: "KOMBCZPP"},
	{Code: "cz_rb", Instrument: restbackend.InstrumentBankAccount, Swift: "RZBCCZPP"},
	{Code: "cz_mb", Instrument: restbackend.InstrumentBankAccount, Swift: "BREXCZPP"},
	{Code: "cz_fb", Instrument: restbackend.InstrumentBankAccount, Swift: "FIOBCZPP"},
	{Code: "cz_csas", Instrument: restbackend.InstrumentBankAccount, Swift: "GIBACZPX"},
	{Code: "sk_uni", Instrument: restbackend.InstrumentBankAccount, Swift: "UNCRSKBX"},
	{Code: "sk_sp", Instrument: restbackend.InstrumentBankAccount, Swift: "GIBASKBX"},
	{Code: "sk_vubbank", Instrument: restbackend.InstrumentBankAccount, Swift: "SUBASKBX"},
	{Code: "sk_tatrabank", Instrument: restbackend.InstrumentBankAccount, Swift: "TATRSKBX"},
	{Code: "sk_pabank", Instrument: restbackend.InstrumentBankAccount, Swift: "POBNSKBA"},
	{Code: "eu_bank", Instrument: restbackend.InstrumentBankAccount},
	{Code: "eu_gp_w", Instrument: "GOPAY"},
	{Code: "eu_psc", Instrument: "PAYSAFECARD"},
	{Code: "eu_paypal", Instrument: "PAYPAL"},
	{Code: "SUPERCASH", Instrument: "SUPERCASH"},
	{Code: "eu_pr_sms", Instrument: "PRSMS"},
	{Code: "cz_mp", Instrument: "MPAYMENT"},

	// Earlier years. Card gateways (Česká spořitelna 3-D Secure, GoPay's
	// own, Moneybookers) are one card instrument today.
	{Code: "cz_cs_c", Instrument: restbackend.InstrumentPaymentCard, Historic: true},
	{Code: "cz_gp_c", Instrument: restbackend.InstrumentPaymentCard, Historic: true},
	{Code: "eu_mb_a", Instrument: restbackend.InstrumentPaymentCard, Historic: true},
	{Code: "eu_mb_b", Instrument: restbackend.InstrumentPaymentCard, Historic: true},
	{Code: "eu_mb_w", Historic: true}, // Moneybookers wallet: not offered any more
	{Code: "cz_gp_w", Instrument: "GOPAY", Historic: true},
	// GE Money Bank is Moneta today; Volksbank CZ and Sberbank SK no longer
	// exist, so their buttons allow a transfer from any bank.
	{Code: "cz_ge", Instrument: restbackend.InstrumentBankAccount, Swift: "AGBACZPP", Historic: true},
	{Code: "cz_vb", Instrument: restbackend.InstrumentBankAccount, Historic: true},
	{Code: "cz_fio", Instrument: restbackend.InstrumentBankAccount, Swift: "FIOBCZPP", Historic: true},
	{Code: "cz_bank", Instrument: restbackend.InstrumentBankAccount, Historic: true},
	{Code: "cs_sms", Instrument: "PRSMS", Historic: true},
	{Code: "cz_sms", Instrument: "PRSMS", Historic: true},
	{Code: "sk_csob", Instrument: restbackend.InstrumentBankAccount, Swift: "CEKOSKBX", Historic: true},
	{Code: "sk_otpbank", Instrument: restbackend.InstrumentBankAccount, Swift: "OTPVSKBX", Historic: true},
	{Code: "sk_sberbank", Instrument: restbackend.InstrumentBankAccount, Historic: true},
}

// Legacy codes the bridge itself relies on.
const (
	codeCard         = "eu_gp_u"
	codeBankTransfer = "eu_bank"
)

// channelByCode finds a legacy code; codes are matched exactly except for
// letter case (legacy clients wrote SUPERCASH upper case and the rest lower).
func channelByCode(code string) (channel, bool) {
	for _, c := range channels {
		if strings.EqualFold(c.Code, code) {
			return c, true
		}
	}
	return channel{}, false
}

// legacyCode maps the instrument (and bank) a payment used back to a
// current legacy code: a bank with a button gets its button code, any other
// bank transfer eu_bank, a card eu_gp_u. ok is false for instruments
// without a legacy code. reportedChannel prefers the shop's own codes.
func legacyCode(instrument, swift string) (string, bool) {
	if instrument == "" {
		return "", false
	}
	if instrument == restbackend.InstrumentBankAccount {
		if swift != "" {
			for _, c := range channels {
				if !c.Historic && c.Swift != "" && strings.EqualFold(c.Swift, swift) {
					return c.Code, true
				}
			}
		}
		return codeBankTransfer, true
	}
	for _, c := range channels {
		if !c.Historic && c.Instrument == instrument {
			return c.Code, true
		}
	}
	return "", false
}

// reportedChannel is the paymentChannel of a status reply for a payment
// that used instrument (and bank swift), created with the shop's
// paymentChannels list: the code the shop used where it used one, so that
// a shop still configured with codes of earlier years recognises its
// channel. In order: the shop's code for exactly that bank (cz_ge for
// AGBACZPP); else the current code (legacyCode) when the shop listed it;
// else the first code of the shop's list whose REST equivalent admits the
// payment (cz_gp_c for a card, cz_bank or cz_vb for a bank transfer); else
// the current code. ok is false when the instrument has no legacy code.
func reportedChannel(instrument, swift, list string) (string, bool) {
	std, ok := legacyCode(instrument, swift)
	if !ok || list == "" {
		return std, ok
	}
	// The list's codes, trimmed, empty ones skipped; read three times
	// rather than collected (no slice per status reply).
	codes := func(yield func(string) bool) {
		for code := range strings.SplitSeq(list, ",") {
			if code = trim(code); code != "" && !yield(code) {
				return
			}
		}
	}
	if swift != "" {
		for code := range codes {
			if c, known := channelByCode(code); known && c.Instrument == instrument && c.Swift != "" && strings.EqualFold(c.Swift, swift) {
				return code, true
			}
		}
	}
	for code := range codes {
		if strings.EqualFold(code, std) {
			return code, true
		}
	}
	for code := range codes {
		if c, known := channelByCode(code); known && c.Instrument == instrument && c.Swift == "" {
			return code, true
		}
	}
	return std, true
}

// paymentChannelOf is the paymentChannel of a status reply for p, created
// with the shop's paymentChannels list ("" when unknown); nil when p used
// no instrument with a legacy code (none chosen yet, APPLE_PAY, …).
func paymentChannelOf(p *restbackend.Payment, list string) *string {
	swift := ""
	if p.Payer != nil && p.Payer.BankAccount != nil {
		swift = p.Payer.BankAccount.BIC
	}
	if code, ok := reportedChannel(p.PaymentInstrument, swift, list); ok {
		return &code
	}
	return nil
}

// Settings of Merchant.UnmappedChannels: what a paymentChannels list none
// of whose codes has a REST equivalent today does.
const (
	// UnmappedUseEnabled creates the payment with the methods the merchant
	// has enabled at the gateway (no allowed-instrument restriction), as
	// the original service served such shops. The default.
	UnmappedUseEnabled = "use_enabled"
	// UnmappedRefuse answers CALL_FAILED, for shops that would rather not
	// offer methods they did not list.
	UnmappedRefuse = "refuse"
)

// Outcomes of codes without a REST equivalent, as logged and counted.
const (
	ChannelDropped    = "dropped"     // left out; the shop's other codes restrict the payment
	ChannelUseEnabled = "use_enabled" // the whole list: the merchant's enabled methods offered
	ChannelRefused    = "refused"     // the whole list: refused (unmapped_channels: refuse)
)

// UnknownChannelCode is the code label of a code in no table: metrics
// never carry a client's raw string.
const UnknownChannelCode = "unknown"

// ChannelCodeLabel is code as a bounded label: its table spelling, or
// UnknownChannelCode.
func ChannelCodeLabel(code string) string {
	if c, ok := channelByCode(code); ok {
		return c.Code
	}
	return UnknownChannelCode
}

// channelSelection is paymentChannels and defaultPaymentChannel read into
// the payer's method settings, with the codes that were left out.
type channelSelection struct {
	Payer *restbackend.Payer
	// Unmapped are the codes of paymentChannels without a REST equivalent
	// (unknown codes, eu_mb_w), each once, in the order sent;
	// UnmappedDefault such a defaultPaymentChannel.
	Unmapped        []string
	UnmappedDefault string
	// WholeList: the list named codes and none has a REST equivalent, so
	// the payment allows every method the merchant has enabled.
	WholeList bool
}

// ErrNoKnownChannel: paymentChannels named channels, none with a REST
// equivalent, and the merchant refuses such lists (UnmappedRefuse).
var ErrNoKnownChannel = errors.New("no payment channel in paymentChannels has an equivalent at the payment gateway")

// selectChannels maps paymentChannels and defaultPaymentChannel onto the
// payer's method settings. Codes are separated by "," with any spaces
// around them (", " and "," both occur). Codes without a REST equivalent
// are left out, so that one stale code in a shop's configuration does not
// fail every payment. A list none of whose codes has one leaves every
// method the merchant enabled allowed (an empty list too), unless policy is
// UnmappedRefuse: then ErrNoKnownChannel, wrapped with the codes. An
// unmapped default is left out and the gateway preselects. Bank buttons
// restrict the allowed banks, unless a code for any bank (eu_bank, cz_bank,
// cz_vb, sk_sberbank) is in the list: REST cannot say "these buttons plus a
// transfer from any bank", so then every bank stays allowed.
func selectChannels(list, def, policy string) (channelSelection, error) {
	p := &restbackend.Payer{}
	var sel channelSelection
	anyBank, named := false, false
	seenInst := map[string]bool{}
	seenSwift := map[string]bool{}
	seenUnmapped := map[string]bool{}
	for _, code := range strings.Split(list, ",") {
		code = trim(code)
		if code == "" {
			continue
		}
		named = true
		c, ok := channelByCode(code)
		if !ok || c.Instrument == "" {
			if !seenUnmapped[code] {
				seenUnmapped[code] = true
				sel.Unmapped = append(sel.Unmapped, code)
			}
			continue
		}
		if !seenInst[c.Instrument] {
			seenInst[c.Instrument] = true
			p.AllowedPaymentInstruments = append(p.AllowedPaymentInstruments, c.Instrument)
		}
		if c.Instrument == restbackend.InstrumentBankAccount {
			if c.Swift == "" {
				anyBank = true
			} else if !seenSwift[c.Swift] {
				seenSwift[c.Swift] = true
				p.AllowedSwifts = append(p.AllowedSwifts, c.Swift)
			}
		}
	}
	if named && len(p.AllowedPaymentInstruments) == 0 {
		sel.WholeList = true
		if policy == UnmappedRefuse {
			return sel, fmt.Errorf("%w (%s); this e-shop is set to refuse such lists", ErrNoKnownChannel, strings.Join(sel.Unmapped, ", "))
		}
	}
	if anyBank {
		p.AllowedSwifts = nil
	}
	if def = trim(def); def != "" {
		if c, ok := channelByCode(def); ok && c.Instrument != "" {
			p.DefaultPaymentInstrument = c.Instrument
			p.DefaultSwift = c.Swift
		} else {
			sel.UnmappedDefault = def
		}
	}
	sel.Payer = p
	return sel, nil
}

// channelsOf selects the payment methods of command c for merchant m (see
// selectChannels), and logs and counts every code without a REST
// equivalent: the operator sees, per merchant, which shops still send
// codes that lead nowhere.
func (s *Service) channelsOf(ctx context.Context, c *PaymentCommand, m Merchant) (*restbackend.Payer, *refusal) {
	sel, err := selectChannels(c.PaymentChannels, c.DefaultPaymentChannel, m.UnmappedChannels)
	outcome, msg := ChannelDropped, "unknown payment channel codes dropped"
	switch {
	case err != nil:
		outcome, msg = ChannelRefused, "no payment channel has a REST equivalent: payment refused (unmapped_channels: refuse)"
	case sel.WholeList:
		outcome, msg = ChannelUseEnabled, "no payment channel has a REST equivalent: payment offered with the merchant's enabled methods"
	}
	if len(sel.Unmapped) > 0 {
		s.logFor(ctx).Warn(msg, zap.Strings("codes", validUTF8(sel.Unmapped)), zap.Int64("goid", m.GoID))
		for _, code := range sel.Unmapped {
			s.unmappedChannel(m.GoID, code, outcome)
		}
	}
	if d := sel.UnmappedDefault; d != "" {
		s.logFor(ctx).Warn("unknown defaultPaymentChannel dropped", zap.String("code", strings.ToValidUTF8(d, "?")), zap.Int64("goid", m.GoID))
		s.unmappedChannel(m.GoID, d, ChannelDropped)
	}
	if err != nil {
		return nil, &refusal{desc: strings.ToValidUTF8(err.Error(), "?")}
	}
	return sel.Payer, nil
}

func (s *Service) unmappedChannel(goid int64, code, outcome string) {
	if s.onUnmappedChannel != nil {
		s.onUnmappedChannel(goid, ChannelCodeLabel(code), outcome)
	}
}
