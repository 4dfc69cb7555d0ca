package operations

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// Return tokens make the bridge's callback URLs unguessable. Payment ids
// are sequential, so /callback/return?goid=G&id=P alone would let anyone
// walk paid payments and collect each customer's success URL with a valid
// signed identity. createPayment (and pay-base-v2, which creates through
// it) puts a random token in the return_url and notification_url it gives
// the gateway and stores its SHA-256 with the session (never the token: a
// copy of the database must open no callback); a callback must bring the
// token back. Recurring children are created by the gateway from the parent's
// request, callbacks included, so they bring back the parent's token and
// are checked against it.

// CallbackTokenParam is the query parameter of the return token in the
// callback URLs.
const CallbackTokenParam = "token"

// newReturnToken is 26 base32 characters (130 random bits), URL-safe.
func newReturnToken() string { return rand.Text() }

// tokenAccepts reports whether a callback bringing got may go on for a
// payment whose token hash (store.HashReturnToken) is wantHash. A session
// without a token (saved before tokens existed) accepts any callback, as
// before the upgrade.
func tokenAccepts(wantHash, got string) bool {
	if wantHash == "" {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(wantHash), []byte(store.HashReturnToken(got))) == 1
}

// tokenDigest names a token in notification keys without revealing it (keys
// are logged): the first 16 hex digits of its hash (the store keeps 64).
func tokenDigest(tokenHash string) string { return tokenHash[:min(16, len(tokenHash))] }

// sessionToken is the hash of the token that callbacks of sess must bring:
// its own, or for a recurring child saved without one, its parent's (the
// gateway copied the parent's callbacks). "" when neither has one.
func (s *Service) sessionToken(ctx context.Context, sess store.Session) (string, error) {
	if sess.TokenHash != "" || sess.ParentID == 0 {
		return sess.TokenHash, nil
	}
	parent, err := s.store.Session(ctx, sess.ParentID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return parent.TokenHash, nil
}

// callback is a gateway callback about one payment that passed the token
// check: the payment as the gateway has it now, its legacy session (zero
// when the bridge has none) and the hash of the token that session expects.
type callback struct {
	p         *restbackend.Payment
	sess      store.Session
	tokenHash string
}

// callbackPayment checks the token of a callback about payment id of m and
// then reads the payment (statusCtx bounds that read). A payment whose
// session the bridge holds is checked before any gateway call, so a wrong
// or missing token costs no REST call and answers ErrUnknownPayment (the
// same as an unknown id: nothing tells the caller the payment exists). A
// payment without a session (a recurring child the gateway charged on its
// own and the bridge has not seen yet) needs the status read to learn its
// parent, whose token it must then bring. Errors: ErrUnknownPayment,
// ErrGatewayDown, ErrStoreDown.
func (s *Service) callbackPayment(ctx, statusCtx context.Context, m Merchant, id int64, token string) (*callback, error) {
	log := s.logFor(ctx)
	own, err := s.store.Session(ctx, id)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		log.Error("callback: session read failed", zap.Int64("payment", id), zap.Error(err))
		return nil, ErrStoreDown
	}
	var want string
	if found {
		if own.GoID != m.GoID {
			log.Warn("callback refused: payment of another e-shop", zap.Int64("goid", m.GoID), zap.Int64("payment", id))
			return nil, ErrUnknownPayment
		}
		if want, err = s.sessionToken(ctx, own); err != nil {
			log.Error("callback: parent session read failed", zap.Int64("payment", id), zap.Error(err))
			return nil, ErrStoreDown
		}
		if !tokenAccepts(want, token) {
			log.Warn("callback refused: wrong or missing return token", zap.Int64("goid", m.GoID),
				zap.Int64("payment", id), zap.Bool("token_given", token != ""))
			return nil, ErrUnknownPayment
		}
	}
	p, err := s.paymentOf(statusCtx, m, id)
	if err != nil {
		return nil, err
	}
	if found {
		return &callback{p: p, sess: own, tokenHash: want}, nil
	}
	child, err := s.childSession(ctx, m, p, token)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if token != "" {
			// A token the bridge has nothing to check against: no
			// session of the payment nor of a parent (purged, or never
			// written).
			log.Warn("callback refused: token of a payment without session", zap.Int64("goid", m.GoID), zap.Int64("payment", id))
			return nil, ErrUnknownPayment
		}
		return &callback{p: p}, nil
	case errors.Is(err, errWrongToken):
		return nil, ErrUnknownPayment
	case err != nil:
		log.Error("callback: session of recurring child failed", zap.Int64("payment", id), zap.Error(err))
		return nil, ErrStoreDown
	}
	return &callback{p: p, sess: child, tokenHash: child.TokenHash}, nil
}

var errWrongToken = errors.New("wrong return token")
