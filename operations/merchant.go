package operations

import (
	"crypto/cipher"
	"fmt"
	"strings"
	"sync/atomic"
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
	// PreviousSecureKey is the key in force before SecureKey, kept while
	// shops move to the new one: requests signed with either verify (see
	// keys.go). PreviousUntil (RFC 3339) ends it, as it ends
	// PreviousClientSecret; empty: DefaultPreviousOverlap after a bridge
	// first saw it. An end once passed is final (keys.go).
	PreviousSecureKey string `yaml:"previous_secure_key"`
	PreviousUntil     string `yaml:"previous_until"`
	previousUntil     time.Time
	Currency          string `yaml:"currency"` // default currency (paymentMethodList); CZK when empty
	Lang              string `yaml:"lang"`     // default language (paymentMethodList descriptions); CS when empty
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

	// keyEnds and secretEnds are when the previous key and secret stop
	// being accepted, as the service resolved them (resolved) from the
	// configuration and the store (Service.resolveOverlaps).
	keyEnds, secretEnds time.Time
	resolved            bool
	// previousUsed is when (Unix ns) the previous secure key last verified
	// a request on this replica; shared by the copies of the merchant.
	previousUsed *atomic.Int64
	// secure holds the Triple DES cipher of SecureKey, found once by
	// Service.resolveOverlaps (nil: tripleDES finds it per call, which
	// hashes the key to look it up in the cache). A pointer, not the
	// interface: a call copies the Merchant into its record (call), which
	// must stay within its 640-byte size class (TestCallSizeClass).
	secure *merchantCipher
}

// merchantCipher is a merchant's secure key's cipher (Merchant.secure),
// with the key it was made from: a copy of the Merchant given another
// SecureKey does not use it.
type merchantCipher struct {
	key   string
	block cipher.Block
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

// String never shows a client secret or a secure key.
func (m Merchant) String() string {
	return fmt.Sprintf("Merchant{goid:%d, client:%s, secret:***, secureKey:***, previousKeys:%t, currency:%s, lang:%s, notify:%s, replay:%v, voidRecurrentReply:%s, unmappedChannels:%s}",
		m.GoID, m.ClientID, m.PreviousSecureKey != "" || m.PreviousClientSecret != "", m.Currency, m.Lang, m.NotificationURL, m.ReplayWindow,
		m.VoidRecurrentReply, m.UnmappedChannels)
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
	m.PreviousUntil = strings.TrimSpace(m.PreviousUntil)
	m.previousUntil, _ = time.Parse(time.RFC3339, m.PreviousUntil) // a bad one is a Problem
	// Empty stays empty: the PHP library's paymentResult scheme.
	for _, scheme := range []string{ReplyPaymentResult, ReplyPaymentSession} {
		if strings.EqualFold(strings.TrimSpace(m.VoidRecurrentReply), scheme) {
			m.VoidRecurrentReply = scheme
		}
	}
}

// Problems lists what is wrong with a normalized m, in field order; each
// Key is the merchant's setting (secure_key), and no message quotes a
// secret.
func (m Merchant) Problems() []Problem {
	var ps []Problem
	for _, p := range m.Account.Problems() {
		ps = append(ps, Problem{p.Field, p.Msg})
	}
	if len(m.SecureKey) < minSecureKey {
		ps = append(ps, Problem{"secure_key", fmt.Sprintf("secure key must have at least %d characters", minSecureKey)})
	}
	switch {
	case m.PreviousSecureKey == "":
	case len(m.PreviousSecureKey) < minSecureKey:
		ps = append(ps, Problem{"previous_secure_key", fmt.Sprintf("previous secure key must have at least %d characters", minSecureKey)})
	case m.PreviousSecureKey == m.SecureKey:
		ps = append(ps, Problem{"previous_secure_key", "previous secure key is the secure key itself: a rotation keeps the key it replaces"})
	}
	if m.PreviousUntil != "" {
		if _, err := time.Parse(time.RFC3339, m.PreviousUntil); err != nil {
			ps = append(ps, Problem{"previous_until", fmt.Sprintf("previous_until %q is not an RFC 3339 time (2026-12-31T00:00:00Z)", m.PreviousUntil)})
		} else if m.PreviousSecureKey == "" && m.PreviousClientSecret == "" {
			ps = append(ps, Problem{"previous_until", "previous_until without previous_secure_key or previous_client_secret: nothing to end"})
		}
	}
	if !letters(m.Currency, 3) {
		ps = append(ps, Problem{"currency", fmt.Sprintf("currency %q is not a 3-letter code", m.Currency)})
	}
	if !letters(m.Lang, 2) {
		ps = append(ps, Problem{"lang", fmt.Sprintf("language %q is not a 2-letter code", m.Lang)})
	}
	if m.ReplayWindow < time.Minute {
		ps = append(ps, Problem{"replay_window", fmt.Sprintf("replay window %v is under a minute: a client's retry would act again", m.ReplayWindow)})
	}
	if m.VoidRecurrentReply != "" && m.VoidRecurrentReply != ReplyPaymentResult && m.VoidRecurrentReply != ReplyPaymentSession {
		ps = append(ps, Problem{"void_recurrent_reply", fmt.Sprintf("void_recurrent_reply %q must be %s or %s",
			m.VoidRecurrentReply, ReplyPaymentResult, ReplyPaymentSession)})
	}
	if m.UnmappedChannels != "" && m.UnmappedChannels != UnmappedUseEnabled && m.UnmappedChannels != UnmappedRefuse {
		ps = append(ps, Problem{"unmapped_channels", fmt.Sprintf("unmapped_channels %q must be %s or %s",
			m.UnmappedChannels, UnmappedUseEnabled, UnmappedRefuse)})
	}
	for _, p := range m.Rules.Problems() {
		ps = append(ps, Problem{p.Field, p.Msg})
	}
	if m.NotificationURL != "" {
		if err := restbackend.CheckURL(m.NotificationURL, true); err != nil {
			ps = append(ps, Problem{"notification_url", "notification URL: " + err.Error()})
		}
	}
	return ps
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
