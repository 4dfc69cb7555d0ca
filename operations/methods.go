package operations

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/legacybridge/soapbridge/restbackend"
)

// methodTTL is how long the paymentMethodList reply is reused: the enabled
// methods change rarely and e-shops often ask on every checkout page.
const methodTTL = 5 * time.Minute

// methodCache holds the mapped method list of one MerchantSet's default
// merchant (a reload builds a new set, with an empty cache); one load runs
// at a time and concurrent callers wait for it (a small singleflight).
// Failures are not cached.
type methodCache struct {
	mu      sync.Mutex
	until   time.Time
	methods []PaymentMethod
	loading chan struct{}
	err     error
}

// methodList returns the cached list or loads it. A refusal of the gateway
// cannot be told in a bare array: every failure is a Server fault here.
func (s *Service) methodList(ctx context.Context) ([]PaymentMethod, error) {
	set := s.set(ctx)
	c := &set.methods
	for {
		c.mu.Lock()
		if c.methods != nil && s.now().Before(c.until) {
			ms := c.methods
			c.mu.Unlock()
			return ms, nil
		}
		if wait := c.loading; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				c.mu.Lock()
				err := c.err
				c.mu.Unlock()
				if err != nil {
					return nil, err
				}
				continue
			case <-ctx.Done():
				return nil, serverError("payment gateway unavailable")
			}
		}
		done := make(chan struct{})
		c.loading = done
		c.mu.Unlock()

		ms, err := s.loadMethods(ctx, set)
		c.mu.Lock()
		c.loading, c.err = nil, err
		if err == nil {
			c.methods, c.until = ms, s.now().Add(methodTTL)
		}
		c.mu.Unlock()
		close(done)
		return ms, err
	}
}

func (s *Service) loadMethods(ctx context.Context, set *MerchantSet) ([]PaymentMethod, error) {
	m := set.byGoID[set.defaultGoID]
	list, err := s.gw.PaymentInstruments(ctx, m.Credentials(), m.GoID, m.Currency)
	if err != nil {
		var r *refusal
		if errors.As(s.gatewayFailed(ctx, "payment instruments", m.GoID, 0, err), &r) {
			return nil, serverError("payment method list unavailable: " + r.desc)
		}
		return nil, serverError("payment gateway unavailable")
	}
	return methodsOf(list, m.Currency, m.Lang), nil
}

// methodsOf maps the enabled instruments onto legacy channels: a card is
// eu_gp_u; bank transfer becomes one entry per bank that has a legacy
// button code plus eu_bank (offline transfer from any bank); other
// instruments with a legacy code map one to one; the rest has no legacy
// code and is left out.
func methodsOf(list *restbackend.InstrumentList, currency, lang string) []PaymentMethod {
	out := []PaymentMethod{}
	for _, in := range list.EnabledPaymentInstruments {
		label := pickLabel(in.Label, lang)
		switch in.PaymentInstrument {
		case restbackend.InstrumentBankAccount:
			for _, sw := range in.EnabledSwifts {
				code, _ := legacyCode(in.PaymentInstrument, sw.Swift)
				if code == codeBankTransfer {
					continue // a bank without a legacy button
				}
				out = append(out, PaymentMethod{Code: code, Description: pickLabel(sw.Label, lang), Logo: sw.Image.Normal,
					PaymentMethod: in.PaymentInstrument, SupportedCurrency: currency, Offline: !sw.IsOnline})
			}
			out = append(out, PaymentMethod{Code: codeBankTransfer, Description: label, Logo: in.Image.Normal,
				PaymentMethod: in.PaymentInstrument, SupportedCurrency: currency, Offline: true})
		default:
			code, ok := legacyCode(in.PaymentInstrument, "")
			if !ok {
				continue
			}
			card := in.PaymentInstrument == restbackend.InstrumentPaymentCard
			out = append(out, PaymentMethod{Code: code, Description: label, Logo: in.Image.Normal,
				PaymentMethod: in.PaymentInstrument, SupportedCurrency: currency,
				Offline: in.PaymentInstrument == "SUPERCASH", SupportPreauthorization: card, SupportRecurrent: card})
		}
	}
	return out
}

// pickLabel chooses the label in lang, else English, else any (stable).
func pickLabel(labels map[string]string, lang string) string {
	for _, k := range []string{strings.ToLower(lang), strings.ToUpper(lang), "en", "EN", "cs", "CS"} {
		if l, ok := labels[k]; ok {
			return l
		}
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		return labels[keys[0]]
	}
	return ""
}
