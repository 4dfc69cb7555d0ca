package restbackend

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"
)

// cachedToken is an access token and the time after which it is not used.
type cachedToken struct {
	token   string
	expires time.Time
}

// maxTokenMargin bounds how long before expires_in a token is replaced, so
// a call never starts with a token about to expire.
const maxTokenMargin = 60 * time.Second

// tokenKey identifies a token by credentials and scope (the gateway URL is
// the Client's). It is a digest so that secrets are no map keys. Joined in
// a buffer on the stack and looked up without a string of its own, a call
// with a cached token allocates nothing for it.
func (c *Client) tokenKey(cr Credentials) tokenID {
	var buf [256]byte
	b := append(buf[:0], cr.ClientID...)
	b = append(append(b, 0), cr.ClientSecret...)
	b = append(append(b, 0), cr.PreviousSecret...)
	b = append(append(b, 0), c.cfg.Scope...)
	return sha256.Sum256(b)
}

// tokenID is a tokenKey; string(id[:]) keys Client.tokens.
type tokenID [sha256.Size]byte

func (c *Client) cachedToken(key tokenID) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tokens[string(key[:])]
	if !ok || !c.cfg.Now().Before(t.expires) {
		return "", false
	}
	return t.token, true
}

// dropToken forgets tok after the gateway refused it, unless another
// caller already replaced it.
func (c *Client) dropToken(key tokenID, tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tokens[string(key[:])].token == tok {
		delete(c.tokens, string(key[:]))
	}
}

// KeepTokens forgets the cached tokens of every credentials but keep's
// (a reload passes the merchants in force): no token of a removed
// merchant, or of a secret a rotation ended, stays in memory. A token
// being fetched meanwhile for credentials no longer kept is cached still,
// until it expires or the next KeepTokens.
func (c *Client) KeepTokens(keep []Credentials) {
	keys := make(map[string]bool, len(keep))
	for _, cr := range keep {
		id := c.tokenKey(cr)
		keys[string(id[:])] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.tokens {
		if !keys[k] {
			delete(c.tokens, k)
		}
	}
}

// token returns the cached token for key or fetches one; concurrent callers
// share one token request, each waiting only as long as its own ctx allows.
func (c *Client) token(ctx context.Context, cr Credentials, key tokenID) (string, error) {
	if t, ok := c.cachedToken(key); ok {
		return t, nil
	}
	ch := c.flight.DoChan(string(key[:]), func() (any, error) {
		if t, ok := c.cachedToken(key); ok {
			return t, nil
		}
		// The request serves every waiter: it must not die with the first
		// caller's context.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
		defer cancel()
		return c.fetchToken(fctx, cr, key)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return "", res.Err
		}
		return res.Val.(string), nil
	case <-ctx.Done():
		return "", transportError(ctx, &request{op: "token"}, false, 0, ctx.Err())
	}
}

// fetchToken asks POST /oauth2/token for a client-credentials token and
// caches it until shortly before expires_in. While a secret is rotated
// (cr.PreviousSecret), a refusal of the current secret is followed by one
// request with the previous one: the token request moves nothing, so
// asking twice is safe.
func (c *Client) fetchToken(ctx context.Context, cr Credentials, key tokenID) (string, error) {
	t, err := c.requestToken(ctx, cr.ClientID, cr.ClientSecret)
	var ae *APIError
	if err != nil && cr.PreviousSecret != "" && errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
		c.log.Info("gateway refused the client secret; trying the previous one (rotation)", zap.String("client_id", cr.ClientID))
		t, err = c.requestToken(ctx, cr.ClientID, cr.PreviousSecret)
	}
	if err != nil {
		return "", err
	}
	ttl := time.Duration(t.ExpiresIn) * time.Second
	c.mu.Lock()
	c.tokens[string(key[:])] = cachedToken{token: t.AccessToken, expires: c.cfg.Now().Add(ttl - min(maxTokenMargin, ttl/10))}
	c.mu.Unlock()
	return t.AccessToken, nil
}

// requestToken is one POST /oauth2/token with id and secret.
func (c *Client) requestToken(ctx context.Context, id, secret string) (*Token, error) {
	const op = "token"
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {c.cfg.Scope}}.Encode()
	r := request{op: op, method: http.MethodPost, path: PathToken, contentType: ctForm, body: []byte(form)}
	// Plain id:secret as the specification and the official clients do (not
	// the form-encoding of RFC 6749 2.3.1).
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))
	rep, err := c.send(ctx, &r, &bearerHeader{v: []string{basic}}, 1)
	if err != nil {
		return nil, err
	}
	if !rep.ok() {
		return nil, failure(&r, rep)
	}
	var t Token
	if err := decodeReply(&r, rep, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

func (t *Token) validate() error {
	if t.AccessToken == "" {
		return errors.New("no access_token")
	}
	return nil
}

func (p *Payment) validate() error {
	if p.ID == 0 {
		return errors.New("no id")
	}
	if p.State == "" {
		return errors.New("no state")
	}
	return nil
}

func (r *Result) validate() error {
	if r.ID == 0 {
		return errors.New("no id")
	}
	if r.Result == "" {
		return errors.New("no result")
	}
	return nil
}

// refundList is the reply of the refund history: a JSON array (empty when
// nothing was refunded), each entry with its id and state.
type refundList []Refund

func (l *refundList) validate() error {
	if *l == nil {
		return errors.New("refund history is not an array")
	}
	for _, r := range *l {
		if r.ID == 0 {
			return errors.New("refund without id")
		}
		if r.State == "" {
			return errors.New("refund without state")
		}
	}
	return nil
}

func (l *InstrumentList) validate() error {
	if l.EnabledPaymentInstruments == nil {
		return errors.New("no enabledPaymentInstruments")
	}
	return nil
}
