package operations

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/restbackend"
)

// minSecureKey is the length of a Triple DES key: the legacy scheme keys the
// cipher with the first 24 bytes of the secure key.
const minSecureKey = 24

// Merchant is one e-shop (selling point) the bridge serves: its gateway
// account and its legacy settings. The yaml tags are the configuration
// file's keys.
type Merchant struct {
	restbackend.Account `yaml:",inline"`
	SecureKey           string `yaml:"secure_key"` // legacy signature key
	Currency            string `yaml:"currency"`   // default currency (paymentMethodList); CZK when empty
	Lang                string `yaml:"lang"`       // default language (paymentMethodList descriptions); CS when empty
	// NotificationURL is the e-shop's legacy notification URL (one per
	// e-shop, not per payment); empty means the e-shop gets none.
	NotificationURL string `yaml:"notification_url"`
	// ReplayWindow is how long a repeat of a money-moving call (same
	// operation, same signed fields) gets the first call's answer instead
	// of acting again; DefaultReplayWindow when zero. A shop that really
	// wants two identical partial refunds gives them different
	// descriptions, which are signed.
	ReplayWindow time.Duration `yaml:"replay_window"`

	// VoidRecurrentReply is the signature scheme of the voidRecurrentPayment
	// reply, for what the e-shop's client library verifies: ReplyPaymentResult
	// (the PHP library; also when empty) or ReplyPaymentSession (the .NET
	// library). No single reply satisfies both.
	VoidRecurrentReply string `yaml:"void_recurrent_reply"`

	// UnmappedChannels is what a createPayment does whose paymentChannels
	// named codes none of which has a REST equivalent today (unknown codes,
	// eu_mb_w): UnmappedUseEnabled (also when empty) offers the methods the
	// merchant has enabled, UnmappedRefuse answers CALL_FAILED.
	UnmappedChannels string `yaml:"unmapped_channels"`

	// Access says who may make SOAP calls for the merchant (networks,
	// Basic credentials, rate). The core only carries it: the SOAP adapter
	// enforces it, since only it sees where a call comes from.
	access.Rules `yaml:",inline"`
}

// DefaultReplayWindow outlasts any legacy client's retry loop (minutes to
// hours, a nightly batch at most), and is short enough that a shop
// repeating an identical call on another day is served.
const DefaultReplayWindow = 24 * time.Hour

// Reply signature schemes a merchant can choose for voidRecurrentPayment.
const (
	ReplyPaymentResult  = "paymentResult"  // paymentSessionId|result|secureKey
	ReplyPaymentSession = "paymentSession" // targetGoId|paymentSessionId|secureKey
)

// String never shows the client secret or the secure key.
func (m Merchant) String() string {
	return fmt.Sprintf("Merchant{goid:%d, client:%s, secret:***, secureKey:***, currency:%s, lang:%s, notify:%s, replay:%v, voidRecurrentReply:%s, unmappedChannels:%s}",
		m.GoID, m.ClientID, m.Currency, m.Lang, m.NotificationURL, m.ReplayWindow, m.VoidRecurrentReply, m.UnmappedChannels)
}

// GoString is String, so %#v does not leak secrets either.
func (m Merchant) GoString() string { return m.String() }

// Normalize fills the default currency and language and upper-cases them.
func (m *Merchant) Normalize() {
	if m.Currency == "" {
		m.Currency = "CZK"
	}
	if m.Lang == "" {
		m.Lang = "CS"
	}
	if m.ReplayWindow == 0 {
		m.ReplayWindow = DefaultReplayWindow
	}
	m.Currency = strings.ToUpper(m.Currency)
	m.Lang = strings.ToUpper(m.Lang)
	// Empty stays empty: UnmappedUseEnabled.
	m.UnmappedChannels = strings.ToLower(strings.TrimSpace(m.UnmappedChannels))
	// Empty stays empty: the PHP library's paymentResult scheme.
	for _, scheme := range []string{ReplyPaymentResult, ReplyPaymentSession} {
		if strings.EqualFold(strings.TrimSpace(m.VoidRecurrentReply), scheme) {
			m.VoidRecurrentReply = scheme
		}
	}
}

// Problems lists what is wrong with a normalized m, in field order; the
// messages never quote a secret.
func (m Merchant) Problems() []restbackend.Problem {
	ps := m.Account.Problems()
	if len(m.SecureKey) < minSecureKey {
		ps = append(ps, restbackend.Problem{Field: "secure_key", Msg: fmt.Sprintf("secure key must have at least %d characters", minSecureKey)})
	}
	if !letters(m.Currency, 3) {
		ps = append(ps, restbackend.Problem{Field: "currency", Msg: fmt.Sprintf("currency %q is not a 3-letter code", m.Currency)})
	}
	if !letters(m.Lang, 2) {
		ps = append(ps, restbackend.Problem{Field: "lang", Msg: fmt.Sprintf("language %q is not a 2-letter code", m.Lang)})
	}
	if m.ReplayWindow < time.Minute {
		ps = append(ps, restbackend.Problem{Field: "replay_window", Msg: fmt.Sprintf("replay window %v is under a minute: a client's retry would act again", m.ReplayWindow)})
	}
	if m.VoidRecurrentReply != "" && m.VoidRecurrentReply != ReplyPaymentResult && m.VoidRecurrentReply != ReplyPaymentSession {
		ps = append(ps, restbackend.Problem{Field: "void_recurrent_reply", Msg: fmt.Sprintf("void_recurrent_reply %q must be %s or %s",
			m.VoidRecurrentReply, ReplyPaymentResult, ReplyPaymentSession)})
	}
	if m.UnmappedChannels != "" && m.UnmappedChannels != UnmappedUseEnabled && m.UnmappedChannels != UnmappedRefuse {
		ps = append(ps, restbackend.Problem{Field: "unmapped_channels", Msg: fmt.Sprintf("unmapped_channels %q must be %s or %s",
			m.UnmappedChannels, UnmappedUseEnabled, UnmappedRefuse)})
	}
	for _, p := range m.Rules.Problems() {
		ps = append(ps, restbackend.Problem{Field: p.Field, Msg: p.Msg})
	}
	if m.NotificationURL != "" {
		if msg := checkNotificationURL(m.NotificationURL); msg != "" {
			ps = append(ps, restbackend.Problem{Field: "notification_url", Msg: "notification URL: " + msg})
		}
	}
	return ps
}

// Validate returns the first problem of m (see Problems), naming its goid.
func (m Merchant) Validate() error {
	ps := m.Problems()
	if len(ps) == 0 {
		return nil
	}
	if m.GoID > 0 {
		return fmt.Errorf("goid %d: %w", m.GoID, ps[0])
	}
	return ps[0]
}

// checkNotificationURL accepts an absolute http(s) URL, with a query but
// without user info or fragment. The message never quotes the URL (it may
// carry credentials).
func checkNotificationURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "not an absolute http(s) URL"
	}
	if u.Fragment != "" || u.User != nil {
		return "must not carry user info or a fragment"
	}
	return ""
}

func letters(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}
