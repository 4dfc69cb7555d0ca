package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/operations/usage/report"
	"github.com/legacybridge/soapbridge/store"
)

// recordMix writes a small usage record of goid into the SQLite file db,
// as a running bridge would have.
func recordMix(t *testing.T, db string, goid int64) {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	require.NoError(t, err)
	defer st.Close()
	us, err := usageOf(st)
	require.NoError(t, err)
	rec, err := usage.New(usage.Config{Store: us})
	require.NoError(t, err)
	ctx, axis := context.Background(), usage.Client{Family: usage.FamilyAxis, Version: "1.4"}
	for range 3 {
		rec.Record(ctx, usage.Event{GoID: goid, Operation: "paymentStatus", Result: usage.ResultOK, Client: axis})
	}
	rec.Record(ctx, usage.Event{GoID: goid, Operation: "createPayment", Result: usage.ResultRefused, Client: axis,
		Features: []usage.Feature{usage.FeatureParams}, Retired: []string{usage.RetiredChannel("cz_vb")}})
	require.NoError(t, rec.Flush(context.Background()))
}

// `soapbridge report` reads the record of the configured database: text by
// default, JSON and HTML on request, report flags and configuration flags
// in any order; a goid nobody knows, a bad format and a database that
// cannot be read each say so, with exit status 2, 2 and 1.
func TestReportCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bridge.db")
	recordMix(t, db, 8123456789)
	env := []string{"SOAPBRIDGE_DATABASE=" + db}

	out, code := runBinary(t, env, "report")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "goid 8123456789")
	assert.Contains(t, out, "4 legacy calls since")
	assert.Contains(t, out, "paymentStatus  3 calls")
	assert.Contains(t, out, "→ GET /payments/payment/{id}")
	assert.Contains(t, out, "Java:", "examples in the language of the Axis stubs")
	assert.Contains(t, out, "channel cz_vb: 1 call")

	out, code = runBinary(t, nil, "report", "-database", db, "-format", "json", "-goid", "8123456789")
	require.Equal(t, 0, code, out)
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Len(t, r.Merchants, 1)
	assert.Equal(t, 1, r.Version)
	assert.Equal(t, int64(4), r.Merchants[0].Calls)
	assert.Equal(t, 0, *r.Merchants[0].DaysSinceLastCall)
	assert.Equal(t, "POST /payments/payment", r.Merchants[0].Operations[0].REST)

	out, code = runBinary(t, env, "report", "-format=html")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, `<a href="#goid-8123456789">`)

	out, code = runBinary(t, env, "report", "-goid", "42")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "goid 42: unknown merchant: it is not configured and has no usage recorded")

	out, code = runBinary(t, env, "report", "-format", "xml")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, `-format "xml": text, json or html`)

	// A database the bridge never ran on: the configured merchant, nothing
	// used, and no file created (the report only reads).
	fresh := filepath.Join(t.TempDir(), "none.db")
	out, code = runBinary(t, []string{"SOAPBRIDGE_DATABASE=" + fresh}, "report")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "No usage record in "+fresh+" yet")
	assert.Contains(t, out, "goid 8123456789\n  no legacy call recorded")
	assert.NoFileExists(t, fresh)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := closed.Addr().String()
	closed.Close()
	out, code = runBinary(t, nil, "report", "-database", "postgres://bridge:"+cfgSecret+"@"+addr+"/nodb?connect_timeout=5")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "report: cannot read the usage record: store: connect postgres")
	assert.NotContains(t, out, cfgSecret)
}

func TestSplitArgs(t *testing.T) {
	mine, rest := splitArgs([]string{"-config", "x.yaml", "-goid", "7", "--format=json", "-listen", ":0", "-since", "1h"}, "goid", "since", "format")
	assert.Equal(t, []string{"-goid", "7", "--format=json", "-since", "1h"}, mine)
	assert.Equal(t, []string{"-config", "x.yaml", "-listen", ":0"}, rest)
}

// flakyStore reads the usage record of a real store until it is told the
// database is down.
type flakyStore struct {
	report.Store
	down atomic.Bool
}

var errReportDown = errors.New("dial tcp 10.0.0.5:5432: connection refused")

func (f *flakyStore) UsageMerchants(ctx context.Context) ([]store.UsageMerchant, error) {
	if f.down.Load() {
		return nil, errReportDown
	}
	return f.Store.UsageMerchants(ctx)
}

// The admin listener's report: the page of every merchant, the JSON of one
// (404 for a goid nobody knows, 400 for one that is not a number); with the
// database down, the last report made, marked stale, or 503 when there is
// none.
func TestReportPages(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bridge.db")
	recordMix(t, db, 8123456789)
	st, err := store.Open(context.Background(), db)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	us, err := usageOf(st)
	require.NoError(t, err)
	flaky := &flakyStore{Store: us}
	pages := &reportPages{st: flaky, configured: newGoidSet([]int64{8123456789, 8123456790}), log: zap.NewNop()}
	h := withReportPages(http.NotFoundHandler(), pages)
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}

	flaky.down.Store(true)
	rec := get("/report")
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "no report made yet")
	assert.Contains(t, rec.Body.String(), "connection refused")
	flaky.down.Store(false)

	rec = get("/report")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), `<a href="#goid-8123456789">goid 8123456789</a>`)
	assert.Contains(t, rec.Body.String(), `<a href="#goid-8123456790">goid 8123456790</a>`)
	assert.Contains(t, rec.Body.String(), `href="report.json?goid=8123456789"`)

	rec = get("/report.json?goid=8123456789")
	require.Equal(t, http.StatusOK, rec.Code)
	var r report.Report
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &r))
	require.Len(t, r.Merchants, 1)
	assert.False(t, r.Stale)
	assert.Equal(t, int64(4), r.Merchants[0].Calls)

	rec = get("/report.json?goid=42")
	assert.Equal(t, http.StatusNotFound, rec.Code)
	assert.JSONEq(t, `{"error":"goid 42: unknown merchant: it is not configured and has no usage recorded"}`, rec.Body.String())
	rec = get("/report.json?goid=abc")
	assert.Equal(t, http.StatusBadRequest, rec.Code)

	flaky.down.Store(true)
	rec = get("/report")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), "Stale: the store cannot be read now")
	assert.Contains(t, rec.Body.String(), "connection refused")
	rec = get("/report.json?goid=8123456789")
	require.Equal(t, http.StatusOK, rec.Code)
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &r))
	assert.True(t, r.Stale)
	assert.Contains(t, r.StaleReason, "connection refused")
	assert.Equal(t, int64(4), r.Merchants[0].Calls, "the last known counts")
	rec = get("/report.json?goid=8123456790")
	require.Equal(t, http.StatusOK, rec.Code, "from the last full report")
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &r))
	assert.True(t, r.Stale)
	assert.Equal(t, int64(8123456790), r.Merchants[0].GoID)
	rec = get("/report.json")
	require.Equal(t, http.StatusOK, rec.Code)
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &r))
	assert.Len(t, r.Merchants, 2)
}

// The recorder's wiring: off with usage_flush_interval 0, and its stop
// flushes what was recorded.
func TestStartUsage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bridge.db")
	st, err := store.Open(context.Background(), db)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	us, err := usageOf(st)
	require.NoError(t, err)
	cfg := Config{UsageFlushInterval: 0, Merchants: []Merchant{demoMerchant}}
	rec, stop, err := startUsage(cfg, us, newGoidSet(goidsOf(cfg.Merchants)), zap.NewNop())
	require.NoError(t, err)
	assert.Nil(t, rec)
	stop()

	cfg.UsageFlushInterval = time.Hour
	rec, stop, err = startUsage(cfg, us, newGoidSet(goidsOf(cfg.Merchants)), zap.NewNop())
	require.NoError(t, err)
	rec.Record(context.Background(), usage.Event{GoID: demoMerchant.GoID, Operation: "touch", Result: usage.ResultOK})
	rec.Record(context.Background(), usage.Event{GoID: 42, Operation: "touch", Result: usage.ResultOK}) // not a merchant
	stop()
	rows, err := us.Usage(context.Background())
	require.NoError(t, err)
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%d %s %s", r.GoID, r.Kind, r.Name))
	}
	assert.Equal(t, []string{"8123456789 call touch", "8123456789 client unknown"}, got)
	assert.False(t, strings.Contains(strings.Join(got, ","), "42 "))
}

func TestUsageFlushIntervalSetting(t *testing.T) {
	cfg, err := loadConfig(nil, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, time.Minute, cfg.UsageFlushInterval, "default")
	cfg, err = loadConfig([]string{"-usage-flush-interval", "0"}, envOf(nil))
	require.NoError(t, err)
	assert.Zero(t, cfg.UsageFlushInterval, "0 switches the record off")
	_, err = loadConfig(nil, envOf(map[string]string{"SOAPBRIDGE_USAGE_FLUSH_INTERVAL": "500ms"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "usage flush interval 500ms must be 0 (no usage record) or at least 1s (usage_flush_interval / SOAPBRIDGE_USAGE_FLUSH_INTERVAL / -usage-flush-interval)")
}
