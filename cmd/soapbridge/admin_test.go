package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/store"
)

// switchStore is a real SQLite store whose database can be made
// unreachable (unit tests of the probes only).
type switchStore struct {
	store.Store
	down atomic.Bool
}

var errDown = errors.New("dial tcp 127.0.0.1:5432: connection refused")

func (s *switchStore) Counts(ctx context.Context) (store.OutboxCounts, error) {
	if s.down.Load() {
		return store.OutboxCounts{}, errDown
	}
	return s.Store.Counts(ctx)
}

func (s *switchStore) LedgerCounts(ctx context.Context) (store.LedgerCounts, error) {
	if s.down.Load() {
		return store.LedgerCounts{}, errDown
	}
	return s.Store.LedgerCounts(ctx)
}

func newSwitchStore(t *testing.T) *switchStore {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "admin.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.Enqueue(context.Background(), store.Notification{GoID: 1, PaymentID: 2, Key: "2:PAID", URL: "http://shop/notify"})
	require.NoError(t, err)
	return &switchStore{Store: st}
}

type adminEnv struct {
	h     http.Handler
	m     *metrics.Metrics
	p     *probes
	ready *readiness
	st    *switchStore
}

func newAdminEnv(t *testing.T, gatewayURL string) *adminEnv {
	t.Helper()
	e := &adminEnv{m: metrics.New(metrics.Options{}), st: newSwitchStore(t)}
	e.ready = newReadiness(nil)
	e.p = newProbes(e.st, gatewayURL, e.m, zap.NewNop())
	e.h = newAdminHandler(func() []Merchant { return nil }, e.m, e.st, e.p, e.ready, zap.NewNop())
	return e
}

func (e *adminEnv) get(t *testing.T, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(b)
}

func TestReadinessIsThePods(t *testing.T) {
	e := newAdminEnv(t, "http://127.0.0.1:1")
	code, body := e.get(t, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, `"reason":"starting"`)
	assert.Contains(t, body, `"gateway":null`, "not probed yet")

	e.ready.serving()
	code, body = e.get(t, "/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"status":"ready"`)
	_, text := e.get(t, "/metrics")
	assert.Contains(t, text, "soapbridge_ready 1")

	// Connections at the high-water mark of the cap: not ready, until they close.
	stats := metrics.ConnStats{Open: 95, Max: 100}
	e.ready.conns = func() metrics.ConnStats { return stats }
	code, body = e.get(t, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, `"reason":"connections: 95 open of max_connections 100"`)
	_, text = e.get(t, "/metrics")
	assert.Contains(t, text, "soapbridge_ready 0")
	stats.Open = 94
	code, _ = e.get(t, "/readyz")
	assert.Equal(t, http.StatusOK, code)

	// File descriptors near the limit.
	e.ready.files = func() (int, int, error) { return 1000, 1024, nil }
	code, body = e.get(t, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, `"reason":"file descriptors: 1000 open of a limit of 1024"`)
	e.ready.files = func() (int, int, error) { return 0, 0, errors.New("no /proc") }
	code, _ = e.get(t, "/readyz")
	assert.Equal(t, http.StatusOK, code, "unknown: not a reason")

	e.ready.draining()
	code, body = e.get(t, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, `"reason":"shutting down"`)
	e.ready.serving()
	code, _ = e.get(t, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "a shutdown is final")

	code, body = e.get(t, "/livez")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ok"}`, body)
}

func TestOpenFilesReadsThisProcess(t *testing.T) {
	open, max, err := openFiles()
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	assert.Positive(t, open)
	assert.GreaterOrEqual(t, max, open)
}

func TestProbesReportTheStoreWithoutFailingScrapesOrReadiness(t *testing.T) {
	gw := httptest.NewServer(http.NotFoundHandler()) // any answer: reachable
	defer gw.Close()
	e := newAdminEnv(t, gw.URL)
	e.ready.serving()
	ctx := context.Background()
	e.p.probeGateway(ctx)
	e.p.probeStore(ctx)
	code, text := e.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, text, `soapbridge_dependency_up{dependency="store"} 1`)
	assert.Contains(t, text, `soapbridge_dependency_up{dependency="gateway"} 1`)
	assert.Contains(t, text, `soapbridge_outbox_notifications{state="pending"} 1`)
	code, body := e.get(t, "/outbox")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"pending":1,"delivered":0,"dead":0}`, body)

	e.st.down.Store(true)
	e.p.probeStore(ctx)
	code, text = e.get(t, "/metrics")
	require.Equal(t, http.StatusOK, code, "a scrape never fails with the store")
	assert.Contains(t, text, `soapbridge_dependency_up{dependency="store"} 0`)
	assert.Contains(t, text, `soapbridge_outbox_notifications{state="pending"} 1`, "the last value is kept")
	assert.Contains(t, text, "soapbridge_store_counts_age_seconds ")
	code, body = e.get(t, "/readyz")
	assert.Equal(t, http.StatusOK, code, "the store is every replica's: not a readiness matter")
	assert.Contains(t, body, `"error":"dial tcp 127.0.0.1:5432: connection refused"`)
	code, body = e.get(t, "/outbox")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.JSONEq(t, `{"error":"store not available"}`, body)
	code, page := e.get(t, "/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, "unreachable: dial tcp 127.0.0.1:5432: connection refused")

	e.st.down.Store(false)
	e.p.probeStore(ctx)
	_, text = e.get(t, "/metrics")
	assert.Contains(t, text, `soapbridge_dependency_up{dependency="store"} 1`)
}

func TestGatewayProbe(t *testing.T) {
	status := atomic.Int32{}
	status.Store(http.StatusUnauthorized)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Empty(t, r.Header.Get("Authorization"), "no credentials in a probe")
		w.WriteHeader(int(status.Load()))
	}))
	defer gw.Close()
	e := newAdminEnv(t, gw.URL+"/api")
	up := func() bool {
		e.p.probeGateway(context.Background())
		g, _ := e.p.results()
		return g.Up
	}
	assert.True(t, up(), "401: the gateway answers")
	status.Store(http.StatusServiceUnavailable)
	assert.False(t, up(), "503: its front says it is not available")
	g, _ := e.p.results()
	assert.Equal(t, "HTTP 503", g.Error)
	status.Store(http.StatusInternalServerError)
	assert.True(t, up())
	gw.Close()
	assert.False(t, up())
	g, _ = e.p.results()
	assert.True(t, strings.Contains(g.Error, "connect"), g.Error)
}

// admin_hosts: names only, each a host name without scheme or port.
func TestAdminHostNames(t *testing.T) {
	names, err := adminHostNames(" Admin.Example.com., soapbridge-admin  other ")
	require.NoError(t, err)
	assert.Equal(t, []string{"admin.example.com", "soapbridge-admin", "other"}, names)
	for _, bad := range []string{"admin.example.com:9090", "http://admin.example.com", "[::1]", "a/b"} {
		_, err := adminHostNames(bad)
		assert.ErrorContains(t, err, "not a host name", bad)
	}
	h := newAdminHosts("admin.internal:9090", names)
	for host, want := range map[string]bool{
		"admin.internal:9090": true, "admin.internal": true, "localhost": true, "127.0.0.1:1": true, "[::1]": true,
		"192.0.2.7:9090": true, "other:80": true, "": true, // HTTP/1.0 without Host: HAProxy's default check
		"evil.example:9090": false, "admin.internal.evil.example": false,
		"localhost.evil.example": false, "[evil.example]:9090": false,
	} {
		assert.Equal(t, want, h.allows(host), host)
	}
}
