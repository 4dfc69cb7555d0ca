package operations

import (
	"errors"
	"fmt"
	"strings"

	"github.com/legacybridge/soapbridge/restbackend"
)

// channel is one legacy payment channel code and its REST equivalent.
type channel struct {
	Code       string
	Instrument string
	Swift      string // the bank of a bank button; empty otherwise
}

// channels is the legacy channel table. Where several codes share a REST
// equivalent (the three card codes) the first one is what status replies
// and paymentMethodList show.
var channels = []channel{
	{"eu_gp_u", restbackend.InstrumentPaymentCard, ""},
	{"eu_gp_kb", restbackend.InstrumentPaymentCard, ""},
	{"eu_om", restbackend.InstrumentPaymentCard, ""},
	// Codes outside the published table that shops still send. Both are card
	// gateways: the client libraries of the era name cz_gp_c "WEBPAY" (the
	// GP webpay card gateway, the same "_gp_" family as eu_gp_u and eu_gp_kb)
	// and cz_cs_c the card gateway of Česká spořitelna ("E-commerce 3-D
	// Secure", the "_c" of a card beside that bank's cz_csas button). REST has
	// one card instrument whatever the acquirer, so both allow PAYMENT_CARD;
	// status replies still show eu_gp_u for a card.
	{"cz_gp_c", restbackend.InstrumentPaymentCard, ""},
	{"cz_cs_c", restbackend.InstrumentPaymentCard, ""},
	{"cz_kb", restbackend.InstrumentBankAccount, "KOMBCZPP"},
	{"cz_rb", restbackend.InstrumentBankAccount, "RZBCCZPP"},
	{"cz_mb", restbackend.InstrumentBankAccount, "BREXCZPP"},
	{"cz_fb", restbackend.InstrumentBankAccount, "FIOBCZPP"},
	{"cz_csas", restbackend.InstrumentBankAccount, "GIBACZPX"},
	{"sk_uni", restbackend.InstrumentBankAccount, "UNCRSKBX"},
	{"sk_sp", restbackend.InstrumentBankAccount, "GIBASKBX"},
	{"sk_vubbank", restbackend.InstrumentBankAccount, "SUBASKBX"},
	{"sk_tatrabank", restbackend.InstrumentBankAccount, "TATRSKBX"},
	{"sk_pabank", restbackend.InstrumentBankAccount, "POBNSKBA"},
	{"eu_bank", restbackend.InstrumentBankAccount, ""},
	{"eu_gp_w", "GOPAY", ""},
	{"eu_psc", "PAYSAFECARD", ""},
	{"eu_paypal", "PAYPAL", ""},
	{"SUPERCASH", "SUPERCASH", ""},
	{"eu_pr_sms", "PRSMS", ""},
	{"cz_mp", "MPAYMENT", ""},
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

// legacyCode maps the instrument (and bank) a payment used back to a legacy
// code: a bank with a button gets its button code, any other bank transfer
// eu_bank, a card eu_gp_u. ok is false for instruments without a legacy code.
func legacyCode(instrument, swift string) (string, bool) {
	if instrument == "" {
		return "", false
	}
	if instrument == restbackend.InstrumentBankAccount {
		if swift != "" {
			for _, c := range channels {
				if c.Swift != "" && strings.EqualFold(c.Swift, swift) {
					return c.Code, true
				}
			}
		}
		return codeBankTransfer, true
	}
	for _, c := range channels {
		if c.Instrument == instrument {
			return c.Code, true
		}
	}
	return "", false
}

// channelSelection is paymentChannels and defaultPaymentChannel read into
// the payer's method settings, with the codes that were left out.
type channelSelection struct {
	Payer *restbackend.Payer
	// DroppedList are the unknown codes of paymentChannels, each once, in
	// the order sent; DroppedDefault an unknown defaultPaymentChannel. The
	// caller logs a warning naming them and the merchant.
	DroppedList    []string
	DroppedDefault string
}

// Dropped are all codes left out (list, then default), for one log line.
func (s channelSelection) Dropped() []string {
	if s.DroppedDefault == "" {
		return s.DroppedList
	}
	return append(append([]string(nil), s.DroppedList...), s.DroppedDefault)
}

// ErrNoKnownChannel: paymentChannels named channels, none of them known.
// Going ahead would offer every method, which the shop did not ask for.
var ErrNoKnownChannel = errors.New("no known payment channel in paymentChannels")

// selectChannels maps paymentChannels and defaultPaymentChannel onto the
// payer's method settings. Codes are separated by "," with any spaces
// around them (", " and "," both occur). Unknown codes are dropped, so that
// one stale code in a shop's configuration does not fail every payment; the
// call fails (ErrNoKnownChannel, wrapped with the codes) only when the list
// named codes and none is known. An empty list leaves every method the
// e-shop has enabled allowed. An unknown default is dropped and the gateway
// preselects. Bank buttons restrict the allowed banks, unless eu_bank (any
// bank, offline) is in the list: REST cannot say "these buttons plus offline
// transfer from any bank", so then every bank stays allowed.
func selectChannels(list, def string) (channelSelection, error) {
	p := &restbackend.Payer{}
	var sel channelSelection
	anyBank, named := false, false
	seenInst := map[string]bool{}
	seenSwift := map[string]bool{}
	seenDropped := map[string]bool{}
	for _, code := range strings.Split(list, ",") {
		code = trim(code)
		if code == "" {
			continue
		}
		named = true
		c, ok := channelByCode(code)
		if !ok {
			if !seenDropped[code] {
				seenDropped[code] = true
				sel.DroppedList = append(sel.DroppedList, code)
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
		return sel, fmt.Errorf("%w (unknown: %s)", ErrNoKnownChannel, strings.Join(sel.DroppedList, ", "))
	}
	if anyBank {
		p.AllowedSwifts = nil
	}
	if def = trim(def); def != "" {
		if c, ok := channelByCode(def); ok {
			p.DefaultPaymentInstrument = c.Instrument
			p.DefaultSwift = c.Swift
		} else {
			sel.DroppedDefault = def
		}
	}
	sel.Payer = p
	return sel, nil
}
