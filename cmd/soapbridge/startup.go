package main

import (
	"context"
	"errors"
	"slices"
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
