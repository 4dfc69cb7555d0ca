package operations

import (
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

// allowedMethods maps paymentChannels (comma separated) and
// defaultPaymentChannel onto the payer's method settings. An empty list
// leaves every method the e-shop has enabled allowed. Bank buttons restrict
// the allowed banks, unless eu_bank (any bank, offline) is in the list: REST
// cannot say "these buttons plus offline transfer from any bank", so then
// every bank stays allowed.
func allowedMethods(list, def string) (*restbackend.Payer, error) {
	p := &restbackend.Payer{}
	anyBank := false
	seenInst := map[string]bool{}
	seenSwift := map[string]bool{}
	for _, code := range strings.Split(list, ",") {
		code = strings.TrimSpace(code)
		if code == "" {
			continue
		}
		c, ok := channelByCode(code)
		if !ok {
			return nil, fmt.Errorf("unknown payment channel %q in paymentChannels", code)
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
	if anyBank {
		p.AllowedSwifts = nil
	}
	if def = strings.TrimSpace(def); def != "" {
		c, ok := channelByCode(def)
		if !ok {
			return nil, fmt.Errorf("unknown payment channel %q in defaultPaymentChannel", def)
		}
		p.DefaultPaymentInstrument = c.Instrument
		p.DefaultSwift = c.Swift
	}
	return p, nil
}
