package operations

import (
	"cmp"
	"context"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// Key rotation. A merchant may hold its previous secure key (and client
// secret) beside the current one until its overlap ends: requests signed
// with either verify, so that shops move to the new key one server at a
// time without a failed call. The overlap ends at previous_until, or, when
// that is not set, DefaultPreviousOverlap after a bridge first saw the
// previous key (said loudly at start and at each reload). Each end is kept
// in the store (key_overlaps) and, once passed, is final: no later
// configuration (a reload dropping or moving previous_until, a restart)
// makes that key or secret accepted again (resolveOverlaps).
//
// What the bridge signs follows what the shop itself did, never what a
// later request tells:
//   - the reply to a call, with the key the request was signed with (the
//     shop verifies with the key it signs with);
//   - the return redirects and notifications of a payment, which answer
//     no request, with the key the shop created the payment with, kept
//     with its session (Session.KeyID; a recurring child's is its
//     parent's), while that key is in force; the current key once it is
//     not. Notifications are signed when sent, not when queued.
//
// Payments created before the key was kept with the session fall back to
// the key earlier versions learnt the shop signed with (shop_keys, read
// and no longer written, so that no request moves it), else the current
// key.

// DefaultPreviousOverlap bounds a previous_secure_key or
// previous_client_secret configured without previous_until: counted from
// when a bridge first saw it (kept in the store, so a restart does not
// extend it).
const DefaultPreviousOverlap = 30 * 24 * time.Hour

// The kinds of previous credential an overlap record names.
const (
	overlapKey    = "secure_key"
	overlapSecret = "client_secret"
)

// previousKeyInForce reports whether m's previous secure key is accepted
// at now; previousSecretInForce the same of its previous client secret.
func (m Merchant) previousKeyInForce(now time.Time) bool {
	return m.PreviousSecureKey != "" && m.overlapInForce(m.keyEnds, now)
}

func (m Merchant) previousSecretInForce(now time.Time) bool {
	return m.PreviousClientSecret != "" && m.overlapInForce(m.secretEnds, now)
}

// overlapInForce: a merchant the service resolved (resolveOverlaps) ends
// its overlap at ends; one it did not (a configuration being checked)
// at previous_until, if any.
func (m Merchant) overlapInForce(ends, now time.Time) bool {
	if m.resolved {
		return now.Before(ends)
	}
	return m.previousUntil.IsZero() || now.Before(m.previousUntil)
}

// keys are the secure keys a request of m may be signed with at now.
func (m Merchant) keys(now time.Time) []string {
	if m.previousKeyInForce(now) {
		return []string{m.SecureKey, m.PreviousSecureKey}
	}
	return []string{m.SecureKey}
}

// Credentials are m's OAuth2 credentials, the previous client secret
// included while it is in force. A pointer receiver: a call does not copy
// the whole Merchant into its caller's frame, which a status call holds
// while it waits for the gateway (issue 28).
func (m *Merchant) Credentials() restbackend.Credentials {
	cr := m.Account.Credentials()
	if !m.previousSecretInForce(time.Now()) {
		cr.PreviousSecret = ""
	}
	return cr
}

// verified is what a request's signature told: which key signed it, which
// of the field lists and in which charset; what the ledger keys a
// money-moving call with follows from them (ledgerText).
type verified struct {
	// key is the secure key the signature verified with; replies to the
	// call are signed with it.
	key     string
	fields  []string
	charset Charset
	// block is key's Triple DES cipher, so that signing the reply does
	// not look it up again (call.cipherFor).
	block cipher.Block
}

// ledgerText is what the ledger keys a money-moving call by: the signed
// fields joined as the shop hashed them, in the charset it hashed them in,
// without the key. The same request signed with another of the merchant's
// keys (a rotation) is the same call; and the windows-1250 fallback accepts
// one signature for two texts (the UTF-8 original and its mojibake, whose
// windows-1250 bytes are the original's UTF-8 bytes), which give the same
// bytes here: one request.
func (v verified) ledgerText() string {
	joined := strings.Join(v.fields, "|")
	if v.charset == CharsetWindows1250 {
		if cp, ok := windows1250(joined); ok {
			return string(cp)
		}
	}
	return joined
}

// legacyDigests are the ledger keys earlier versions gave the request of
// m: what was signed, hashed with the secure key then in force (digestOf),
// the current one and, when configured, the previous one. A repeat of a
// call such a version recorded finds its entry under one of them.
func (v verified) legacyDigests(m Merchant) []string {
	ds := []string{digestOf(m.SecureKey, v.fields, v.charset)}
	if m.PreviousSecureKey != "" {
		ds = append(ds, digestOf(m.PreviousSecureKey, v.fields, v.charset))
	}
	return ds
}

// verify checks signature over one of alts (canonical first) with the
// keys of m in force at now. A request the previous key verifies is noted
// (previousUsed): the operator ends a rotation once the shop no longer
// signs with it.
func (m *Merchant) verify(now time.Time, signature string, alts ...[]string) (verified, bool) {
	// The keys of m.keys(now), in its order, without its slice.
	if v, ok := m.verifyWith(m.SecureKey, now, signature, alts); ok {
		return v, true
	}
	if m.previousKeyInForce(now) {
		return m.verifyWith(m.PreviousSecureKey, now, signature, alts)
	}
	return verified{}, false
}

// verifyWith is verify with one of m's keys.
func (m *Merchant) verifyWith(key string, now time.Time, signature string, alts [][]string) (verified, bool) {
	var block cipher.Block
	if m.secure != nil && m.secure.key == key {
		block = m.secure.block
	} else {
		var err error
		if block, err = tripleDES(key); err != nil {
			return verified{}, false // a key that cannot key Triple DES verifies nothing
		}
	}
	i, cs, ok := verifyFieldsWith(block, key, signature, alts)
	if !ok {
		return verified{}, false
	}
	if key != m.SecureKey && m.previousUsed != nil {
		m.previousUsed.Store(now.UnixNano())
	}
	return verified{key: key, fields: alts[i], charset: cs, block: block}, true
}

// keyID names a key in the store without revealing it.
func keyID(key string) string { return credentialID("soapbridge secure key", key) }

// credentialID names a secret of a kind without revealing it.
func credentialID(kind, secret string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + secret))
	return hex.EncodeToString(sum[:8])
}

// overlapTimeout bounds the store work of resolveOverlaps.
const overlapTimeout = 10 * time.Second

// resolveOverlaps sets, on each merchant of ms (validated and normalized),
// when its previous secure key and client secret stop being accepted, from
// the configuration and the store's record of each (key_overlaps):
//   - a record whose end has passed is final: the key or secret stays
//     refused whatever the configuration says now (a warning names it);
//   - otherwise the end is previous_until, or first seen +
//     DefaultPreviousOverlap when it is not set (a warning says so), and
//     the record is written (first seen is kept from the first writer).
//
// It fails only when the store cannot be read or written: a caller then
// keeps the merchants in force (a reload is refused; a start fails). Every
// record is read before any is written, so a store that cannot read one
// names the setting; then all are written in one transaction, all or
// none. It is the last step of a reload or a start that can refuse (after
// every validation), so one refused writes nothing.
//
// When the previous secure key stays the same, the time it last verified a
// request is carried over from the merchant in force (old, nil at start).
func (s *Service) resolveOverlaps(ctx context.Context, ms []Merchant, old *MerchantSet) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), overlapTimeout)
	defer cancel()
	now := s.now()
	if err := s.readOverlaps(ctx, ms); err != nil {
		return err
	}
	// What each merchant's previous key and secret want, then their
	// records as written, in that order.
	type want struct {
		m                *Merchant
		setting, setPath string
		ends             *time.Time
	}
	var wants []want
	var ws []store.KeyOverlapWant
	for i := range ms {
		m := &ms[i]
		m.resolved = true
		m.previousUsed = new(atomic.Int64)
		m.secure = nil
		if block, err := tripleDES(m.SecureKey); err == nil { // a key too short verifies nothing either way
			m.secure = &merchantCipher{key: m.SecureKey, block: block}
		}
		if old != nil {
			if prev, ok := old.byGoID[m.GoID]; ok && prev.PreviousSecureKey == m.PreviousSecureKey && prev.previousUsed != nil {
				m.previousUsed = prev.previousUsed
			}
		}
		m.keyEnds, m.secretEnds = time.Time{}, time.Time{}
		for _, p := range []struct {
			kind, setting, previous string
			ends                    *time.Time
		}{
			{overlapKey, "previous_secure_key", m.PreviousSecureKey, &m.keyEnds},
			{overlapSecret, "previous_client_secret", m.PreviousClientSecret, &m.secretEnds},
		} {
			if p.previous == "" {
				continue
			}
			wants = append(wants, want{m, p.setting, fmt.Sprintf("merchants[%d].%s", i, p.setting), p.ends})
			ws = append(ws, store.KeyOverlapWant{GoID: m.GoID, Kind: p.kind, KeyID: overlapID(p.kind, p.previous), EndsAt: m.wantedEnd})
		}
	}
	if len(ws) == 0 {
		return nil
	}
	recs, err := s.store.RecordKeyOverlaps(ctx, ws, now)
	if err != nil {
		return &Problem{"merchants", "the ends of the key overlaps could not be recorded (none was): " + err.Error()}
	}
	for i, w := range wants {
		rec := recs[i]
		*w.ends = rec.EndsAt
		log := s.log.With(zap.Int64("goid", w.m.GoID), zap.String("setting", w.setPath))
		if !now.Before(rec.EndsAt) {
			if w.m.wantedEnd(rec.FirstSeen).After(rec.EndsAt) {
				log.Warn(w.setting+" ended earlier and is never accepted again, whatever previous_until says now: remove it from the configuration",
					zap.Time("ended", rec.EndsAt), zap.String("previous_until", w.m.PreviousUntil))
			}
			continue
		}
		if w.m.previousUntil.IsZero() {
			log.Warn(w.setting+" has no previous_until: accepted until first seen + "+DefaultPreviousOverlap.String()+"; set previous_until to end the rotation when you mean to",
				zap.Time("first_seen", rec.FirstSeen), zap.Time("until", rec.EndsAt))
		}
	}
	return nil
}

// wantedEnd is the end m's configuration wants for a previous key or
// secret first seen at firstSeen: previous_until, else the default bound.
func (m Merchant) wantedEnd(firstSeen time.Time) time.Time {
	if !m.previousUntil.IsZero() {
		return m.previousUntil
	}
	return firstSeen.Add(DefaultPreviousOverlap)
}

// readOverlaps reads the record of every previous key and secret of ms,
// writing nothing: a problem names the first that cannot be read.
func (s *Service) readOverlaps(ctx context.Context, ms []Merchant) error {
	for i, m := range ms {
		for _, p := range []struct{ kind, setting, previous string }{
			{overlapKey, "previous_secure_key", m.PreviousSecureKey},
			{overlapSecret, "previous_client_secret", m.PreviousClientSecret},
		} {
			if p.previous == "" {
				continue
			}
			if _, err := s.store.KeyOverlap(ctx, m.GoID, p.kind, overlapID(p.kind, p.previous)); err != nil && !errors.Is(err, store.ErrNotFound) {
				return &Problem{fmt.Sprintf("merchants[%d].%s", i, p.setting), "the end of its overlap could not be read: " + err.Error()}
			}
		}
	}
	return nil
}

// overlapID names previous, of kind, in key_overlaps.
func overlapID(kind, previous string) string {
	if kind == overlapKey {
		return keyID(previous)
	}
	return credentialID("soapbridge "+kind, previous)
}

// KeyOverlap is a merchant whose previous secure key or client secret is
// accepted now, beside the current one.
type KeyOverlap struct {
	GoID int64
	// SecureKey and ClientSecret say which of the two is in overlap.
	SecureKey, ClientSecret bool
	// EndsAt is when the last of them stops being accepted.
	EndsAt time.Time
	// Default: an end of DefaultPreviousOverlap, previous_until not set.
	Default bool
	// PreviousKeyUsed is when this replica last accepted a request signed
	// with the previous secure key (zero: not since start, or none).
	PreviousKeyUsed time.Time
}

// KeyOverlaps are the merchants in force whose previous key or secret is
// accepted now, by goid.
func (s *Service) KeyOverlaps() []KeyOverlap {
	now := s.now()
	var out []KeyOverlap
	for _, m := range s.current().byGoID {
		o := KeyOverlap{GoID: m.GoID, SecureKey: m.previousKeyInForce(now), ClientSecret: m.previousSecretInForce(now), Default: m.previousUntil.IsZero()}
		if !o.SecureKey && !o.ClientSecret {
			continue
		}
		if o.SecureKey {
			o.EndsAt = m.keyEnds
		}
		if o.ClientSecret && m.secretEnds.After(o.EndsAt) {
			o.EndsAt = m.secretEnds
		}
		if m.previousUsed != nil && m.previousUsed.Load() != 0 {
			o.PreviousKeyUsed = time.Unix(0, m.previousUsed.Load())
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b KeyOverlap) int { return cmp.Compare(a.GoID, b.GoID) })
	return out
}

// shopKeyTTL is how long a replica trusts what it read of a shop's key in
// shop_keys (which only replicas of earlier versions still write, during
// an upgrade).
const shopKeyTTL = 10 * time.Second

// shopKeys caches, per goid, the key shop_keys names.
type shopKeys struct {
	mu   sync.Mutex
	seen map[int64]shopKey
}

type shopKey struct {
	id     string
	readAt time.Time
}

// paymentKey is the key the return redirects and notifications of the
// payment of sess (of m) are signed with at now: the key the shop created
// it with (a recurring child's: its parent's) while that key is in force,
// else the current one; for a payment whose session names no key, the
// fallback of legacyShopKey.
func (s *Service) paymentKey(ctx context.Context, m Merchant, sess store.Session) string {
	id := sess.KeyID
	if id == "" && sess.ParentID != 0 {
		if parent, err := s.store.Session(ctx, sess.ParentID); err == nil {
			id = parent.KeyID
		}
	}
	if id == "" {
		return s.legacyShopKey(ctx, m)
	}
	for _, k := range m.keys(s.now()) {
		if keyID(k) == id {
			return k
		}
	}
	return m.SecureKey
}

// legacyShopKey is the key of a payment created before its key was kept:
// the one shop_keys names (what earlier versions signed with; no request
// moves it now), while that key is in force; else the current key.
func (s *Service) legacyShopKey(ctx context.Context, m Merchant) string {
	now := s.now()
	if !m.previousKeyInForce(now) {
		return m.SecureKey
	}
	s.shop.mu.Lock()
	known, ok := s.shop.seen[m.GoID]
	s.shop.mu.Unlock()
	if !ok || now.Sub(known.readAt) >= shopKeyTTL {
		id, _, err := s.store.ShopKey(ctx, m.GoID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			id = keyID(m.SecureKey)
		case err != nil:
			s.logFor(ctx).Warn("the shop's key not readable; signing with the current key", zap.Int64("goid", m.GoID), zap.Error(err))
			return m.SecureKey
		}
		known = shopKey{id: id, readAt: now}
		s.shop.mu.Lock()
		if s.shop.seen == nil {
			s.shop.seen = map[int64]shopKey{}
		}
		s.shop.seen[m.GoID] = known
		s.shop.mu.Unlock()
	}
	if known.id == keyID(m.PreviousSecureKey) {
		return m.PreviousSecureKey
	}
	return m.SecureKey
}
