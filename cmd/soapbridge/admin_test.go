package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/store"
)

// downStore is a store whose database cannot be reached (unit test of the
// probe only; the other methods are never called).
type downStore struct {
	store.Store
	calls atomic.Int32
}

func (s *downStore) Counts(context.Context) (store.OutboxCounts, error) {
	s.calls.Add(1)
	return store.OutboxCounts{}, errors.New("dial tcp 127.0.0.1:5432: connection refused")
}

func TestReadyzFailsWithTheStoreDownAndCachesTheProbe(t *testing.T) {
	gw := httptest.NewServer(http.NotFoundHandler()) // any answer: reachable
	defer gw.Close()
	st := &downStore{}
	h := newAdminHandler(Config{}, metrics.New(nil, nil, nil), st, gw.URL, zap.NewNop())
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Contains(t, rec.Body.String(), `"store":"unreachable: dial tcp 127.0.0.1:5432: connection refused"`)
		assert.Contains(t, rec.Body.String(), `"gateway":"ok"`)
	}
	assert.Equal(t, int32(1), st.calls.Load(), "probes within the TTL reuse the result")
}
