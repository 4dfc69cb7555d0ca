package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
)

// startupTokenParallel bounds the token requests of the start-up check in
// flight at once: hundreds of merchants must not arrive at the gateway
// together.
const startupTokenParallel = 8

// tokenSource is the gateway client's token request (restbackend.Client).
type tokenSource interface {
	Token(ctx context.Context, cr restbackend.Credentials) (string, error)
}

// checkGateway asks the gateway for a token of every merchant of ms (all
// at start, those a reload added or changed after it), as the first call of
// each would, and says what it found (when: "at start", "after a reload"): a warning naming
// each merchant whose credentials the gateway refuses, one warning naming
// the gateway and the merchants it did not answer for, an info line
// otherwise. It runs in the background once the bridge serves, so that a
// gateway that hangs never delays the listener; each request is bounded by
// the REST timeout, and ctx ends it at shutdown. The tokens it gets are
// cached for the first calls. Nothing logged contains a secret (the REST
// client's errors never do).
func checkGateway(ctx context.Context, gw tokenSource, gatewayURL string, ms []Merchant, when string, log *zap.Logger) {
	type result struct {
		m   Merchant
		err error
	}
	results := make([]result, len(ms))
	sem := make(chan struct{}, startupTokenParallel)
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i] = result{m, ctx.Err()}
				return
			}
			defer func() { <-sem }()
			_, err := gw.Token(ctx, m.Credentials())
			results[i] = result{m, err}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // shutting down: what it found no longer matters
	}
	var ok, down []int64
	var downErr error
	for _, r := range results {
		var ae *restbackend.APIError
		switch {
		case r.err == nil:
			ok = append(ok, r.m.GoID)
		case errors.As(r.err, &ae) && ae.Status >= 400 && ae.Status < 500:
			log.Warn("the gateway refuses this merchant's credentials (token request "+when+"): its SOAP calls will fail "+
				"until client_id and client_secret are right", zap.Int64("goid", r.m.GoID), zap.String("client_id", r.m.ClientID),
				zap.Int("status", ae.Status), zap.Error(r.err))
		default:
			down = append(down, r.m.GoID)
			downErr = r.err
		}
	}
	if len(down) > 0 {
		slices.Sort(down)
		log.Warn("the gateway does not answer (token request "+when+"): calls that need it will fail until it does",
			zap.String("gateway", gatewayURL), zap.Int64s("merchants", down), zap.Error(downErr))
	}
	if len(ok) > 0 {
		log.Info("the gateway issued tokens "+when, zap.String("gateway", gatewayURL), zap.Int64s("merchants", ok))
	}
}

// callersUnseen is the problem of a configuration that cannot tell callers
// apart although a merchant's rules depend on it ("" when none): the
// per-address connection cap off (max_connections_per_ip 0, which is what
// one sets behind a load balancer, whose address every connection comes
// from) and no trusted_proxies, so every call seems to come from the
// balancer. Then a merchant's allowed_networks sees only the balancer, and
// the refused-login limit (counted per caller address) blocks every caller
// once a stranger has sent wrong Basic passwords: the shop's right ones are
// refused too. A bridge exposed directly keeps a per-address cap, so the
// combination is refused at start (and by check and reload), naming the
// settings.
func callersUnseen(c Config) string {
	if c.MaxConnsPerIP != 0 || strings.TrimSpace(c.TrustedProxies) != "" {
		return ""
	}
	var who []string
	for _, m := range c.Merchants {
		if m.AllowedNetworks != "" || m.BasicUser != "" && c.AuthFailures > 0 {
			who = append(who, strconv.FormatInt(m.GoID, 10))
		}
	}
	if len(who) == 0 {
		return ""
	}
	return fmt.Sprintf("max_connections_per_ip is 0 (as behind a load balancer) but trusted_proxies is empty, and merchant(s) %s "+
		"rely on the caller's address (allowed_networks, or basic_user with basic_auth_failures_per_minute): every call would "+
		"seem to come from the balancer, so a stranger's wrong Basic passwords would block the shop's right ones and allowed_networks "+
		"would see only the balancer. Set trusted_proxies to the balancer's addresses (the Kubernetes base: the ingress "+
		"controller's pod network), or, exposed directly, a per-address cap (max_connections_per_ip > 0)", strings.Join(who, ", "))
}
