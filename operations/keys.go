package operations

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// Key rotation. A merchant may hold its previous secure key (and client
// secret) beside the current one until PreviousUntil (or the next reload
// without them): requests signed with either verify, so that shops move to
// the new key one server at a time without a failed call. What the bridge
// signs follows the shop:
//   - the reply to a call, with the key the request was signed with (the
//     shop verifies with the key it signs with);
//   - notifications and return redirects, which answer no request, with
//     the key the merchant's shop last signed a call with, as every replica
//     learns it from the store (shop_keys); the current key when the shop
//     has not been seen since the previous one came in. Notifications are
//     signed when sent, not when queued: one refused by a shop that moved
//     meanwhile is signed again at its next attempt.

// previousInForce reports whether m's previous key and secret are accepted
// at now.
func (m Merchant) previousInForce(now time.Time) bool {
	return (m.PreviousSecureKey != "" || m.PreviousClientSecret != "") && (m.previousUntil.IsZero() || now.Before(m.previousUntil))
}

// keys are the secure keys a request of m may be signed with at now.
func (m Merchant) keys(now time.Time) []string {
	if m.PreviousSecureKey != "" && m.previousInForce(now) {
		return []string{m.SecureKey, m.PreviousSecureKey}
	}
	return []string{m.SecureKey}
}

// Credentials are m's OAuth2 credentials, the previous client secret
// included while it is in force.
func (m Merchant) Credentials() restbackend.Credentials {
	cr := m.Account.Credentials()
	if !m.previousInForce(time.Now()) {
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
// keys of m in force at now.
func (m Merchant) verify(now time.Time, signature string, alts ...[]string) (verified, bool) {
	for _, key := range m.keys(now) {
		if i, cs, ok := verifyFields(key, signature, alts); ok {
			return verified{key: key, fields: alts[i], charset: cs}, true
		}
	}
	return verified{}, false
}

// keyID names a key in the store without revealing it.
func keyID(key string) string {
	sum := sha256.Sum256([]byte("soapbridge secure key\x00" + key))
	return hex.EncodeToString(sum[:8])
}

// shopKeyTTL is how long a replica trusts what it read of a shop's key: a
// notification signed with a key the shop left meanwhile is refused and
// signed again at its next attempt.
const shopKeyTTL = 10 * time.Second

// shopKeys caches, per goid, which key the shop was last seen with.
type shopKeys struct {
	mu   sync.Mutex
	seen map[int64]shopKey
}

type shopKey struct {
	id     string
	readAt time.Time
}

// keySeen records that m's shop signed a request with key. Only while a
// previous key is in force is there a choice to remember, and the store is
// written only when the key differs from the one this replica knows. The
// replica takes the key for known only once it is written, so that a failed
// write is tried again by the next call.
func (s *Service) keySeen(ctx context.Context, m Merchant, key string) {
	now := s.now()
	if !m.previousInForce(now) {
		return
	}
	id := keyID(key)
	s.shop.mu.Lock()
	known, ok := s.shop.seen[m.GoID]
	if ok && known.id == id {
		s.shop.seen[m.GoID] = shopKey{id: id, readAt: now}
	}
	s.shop.mu.Unlock()
	if ok && known.id == id {
		return
	}
	lctx, cancel := s.ledgerContext(ctx)
	defer cancel()
	if err := s.store.SetShopKey(lctx, m.GoID, id, now); err != nil {
		s.logFor(ctx).Warn("the shop's key not recorded; notifications may be signed with the other key and be retried", zap.Int64("goid", m.GoID), zap.Error(err))
		return
	}
	s.shop.mu.Lock()
	if s.shop.seen == nil {
		s.shop.seen = map[int64]shopKey{}
	}
	s.shop.seen[m.GoID] = shopKey{id: id, readAt: now}
	s.shop.mu.Unlock()
	s.logFor(ctx).Info("shop signs with another of its keys", zap.Int64("goid", m.GoID), zap.Bool("previous", key == m.PreviousSecureKey))
}

// shopKeyOf is the key notifications and return redirects of m are signed
// with at now (see the top of this file).
func (s *Service) shopKeyOf(ctx context.Context, m Merchant) string {
	now := s.now()
	if m.PreviousSecureKey == "" || !m.previousInForce(now) {
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
