package restbackend_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGetHeaderShared: the GETs of one token share one header (the
// Client's own transport never writes it). Calls in parallel, with the
// token revoked and renewed in between, each send exactly the GET
// headers with the token in force, once each; run under -race it also
// shows that nothing writes the shared header.
func TestGetHeaderShared(t *testing.T) {
	g := newFakeGateway(t)
	c := g.client()
	ctx := context.Background()
	for round := range 3 {
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					_, err := c.PaymentStatus(ctx, testCreds, pid)
					assert.NoError(t, err)
				}
			}()
		}
		wg.Wait()
		g.mu.Lock()
		calls := g.calls
		g.calls = nil
		g.mu.Unlock()
		// After a revocation each goroutine's next call may meet a 401
		// and is repeated once, under the new token.
		require.GreaterOrEqual(t, len(calls), 80+map[bool]int{true: 1, false: 0}[round > 0], "round %d", round)
		require.LessOrEqual(t, len(calls), 80+map[bool]int{true: 8, false: 0}[round > 0], "round %d", round)
		tokens := map[string]bool{}
		for _, rec := range calls {
			assert.Equal(t, http.MethodGet, rec.Method)
			for _, h := range []string{"Accept", "Accept-Language", "User-Agent", "Authorization"} {
				assert.Len(t, rec.Header.Values(h), 1, h)
			}
			assert.Equal(t, "application/json", rec.Header.Get("Accept"))
			assert.Empty(t, rec.Header.Values("Content-Type"))
			tokens[strings.TrimPrefix(rec.Header.Get("Authorization"), "Bearer ")] = true
		}
		if round == 0 {
			assert.Len(t, tokens, 1)
		} else {
			assert.GreaterOrEqual(t, len(tokens), 2, "round %d: the revoked token, then a new one", round)
		}
		g.revokeAll()
	}
}
