package usage_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/store"
)

type usageStore interface {
	usage.Store
	Usage(ctx context.Context, goids ...int64) ([]store.UsageCount, error)
}

// sqliteStore is a real store in a file of its own; two recorders on the
// same file are two replicas.
func sqliteStore(t testing.TB, path string) usageStore {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "usage.db")
	}
	st, err := store.Open(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st.(usageStore)
}

var t0 = time.Date(2031, 3, 4, 10, 0, 0, 0, time.UTC)

func newRecorder(t testing.TB, st usage.Store, known ...int64) *usage.Recorder {
	t.Helper()
	cfg := usage.Config{Store: st, Every: time.Hour, Now: func() time.Time { return t0 }}
	if len(known) > 0 {
		cfg.Known = func(_ context.Context, g int64) bool {
			for _, k := range known {
				if g == k {
					return true
				}
			}
			return false
		}
	}
	r, err := usage.New(cfg)
	require.NoError(t, err)
	return r
}

// rows renders the store's usage rows of goid as "kind name detail calls".
func rows(t testing.TB, st usageStore, goid int64) []string {
	t.Helper()
	rs, err := st.Usage(context.Background(), goid)
	require.NoError(t, err)
	var out []string
	for _, r := range rs {
		f := []string{string(r.Kind), r.Name, r.Detail, fmt.Sprint(r.Calls)}
		if r.Detail == "" {
			f = slices.Delete(f, 2, 3)
		}
		out = append(out, strings.Join(f, " "))
	}
	return out
}

func TestRecordFlushesSums(t *testing.T) {
	st := sqliteStore(t, "")
	r := newRecorder(t, st, 7)
	ctx := context.Background()
	php := usage.Client{Family: usage.FamilyPHP, Version: "8.2.36"}
	cp1250 := usage.FeatureWindows1250
	for i := range 3 {
		r.Record(ctx, usage.Event{GoID: 7, Operation: "createPayment", Result: usage.ResultOK, Client: php,
			Features: []usage.Feature{usage.FeatureParams, usage.ChannelFeature("cz_kb"), cp1250}, At: t0.Add(time.Duration(i) * time.Minute)})
	}
	r.Record(ctx, usage.Event{GoID: 7, Operation: "createBuyer", Result: usage.ResultRefused, Client: php, Features: []usage.Feature{cp1250},
		Retired: []string{usage.RetiredOperation("createBuyer")}, At: t0.Add(10 * time.Minute)})
	r.Record(ctx, usage.Event{GoID: 7, Operation: usage.FlowPayFull, Result: usage.ResultOK, Client: usage.Client{Family: usage.FamilyBrowser},
		Features: []usage.Feature{cp1250}})
	// No client: unknown.
	r.Record(ctx, usage.Event{Operation: "touch", Result: usage.ResultOK})
	// The gateway's notification: no client of the shop to count.
	r.Record(ctx, usage.Event{GoID: 7, Operation: usage.FlowNotification, Result: usage.ResultOK, Client: usage.Client{Family: usage.FamilyNone},
		Features: []usage.Feature{cp1250}})

	require.NoError(t, r.Flush(context.Background()))
	assert.Equal(t, []string{
		"call createBuyer refused 1",
		"call createPayment ok 3",
		"call notification ok 1",
		"call pay-full-v2 ok 1",
		"client browser 1",
		"client php-soapclient 8.2.36 4",
		"feature channel cz_kb 3",
		"feature charset windows-1250 6",
		"feature p1-p4 3",
		"retired operation createBuyer 1",
	}, rows(t, st, 7))
	assert.Equal(t, []string{"call touch ok 1", "client unknown 1"}, rows(t, st, 0), "goid 0: calls naming no merchant")

	rs, err := st.Usage(context.Background(), 7)
	require.NoError(t, err)
	assert.Equal(t, t0, rs[1].First, "createPayment first seen")
	assert.Equal(t, t0.Add(2*time.Minute), rs[1].Last, "createPayment last seen")

	// A second flush adds only what came since.
	r.Record(ctx, usage.Event{GoID: 7, Operation: "createPayment", Result: usage.ResultOK})
	require.NoError(t, r.Flush(context.Background()))
	assert.Contains(t, rows(t, st, 7), "call createPayment ok 4")
	require.NoError(t, r.Flush(context.Background()))
	assert.Contains(t, rows(t, st, 7), "call createPayment ok 4", "an empty flush adds nothing")
}

func TestRecordBounds(t *testing.T) {
	st := sqliteStore(t, "")
	r := newRecorder(t, st, 7)
	ctx := context.Background()
	// A client sending a new User-Agent version on every call.
	for i := range 100 {
		r.Record(ctx, usage.Event{GoID: 7, Operation: "paymentStatus", Result: usage.ResultOK,
			Client: usage.Client{Family: usage.FamilyAxis, Version: fmt.Sprintf("1.%d", i)}})
	}
	// Unknown channel codes of every kind, long and with markup and controls.
	for i := range 40 {
		r.Record(ctx, usage.Event{GoID: 7, Operation: "createPayment", Result: usage.ResultOK,
			Retired: []string{usage.RetiredChannel(fmt.Sprintf("<b>x%d\x00%s", i, strings.Repeat("y", 200)))}})
	}
	r.Record(ctx, usage.Event{GoID: 999, Operation: "paymentStatus", Result: usage.ResultOK}) // not a merchant
	r.Record(ctx, usage.Event{GoID: 7, Operation: "paymentStatus", Result: "exploded"})       // not a result
	require.NoError(t, r.Flush(ctx))

	got := rows(t, st, 7)
	versions, retired := 0, 0
	for _, row := range got {
		f := strings.Fields(row)
		switch f[0] {
		case "client":
			versions++
		case "retired":
			retired++
			assert.LessOrEqual(t, len(row), len("retired ")+usage.MaxRetiredText+len(" 1"), row)
			assert.NotContains(t, row, "\x00")
		}
	}
	assert.Equal(t, usage.MaxClients+2, versions, "16 versions, axis other, unknown other")
	assert.Contains(t, got, fmt.Sprintf("client axis other %d", 100-usage.MaxClients), "the calls past the bound")
	assert.Contains(t, got, "client unknown other 41", "a family past the bound keeps its name")
	assert.Equal(t, usage.MaxRetired+1, retired)
	assert.Contains(t, got, fmt.Sprintf("retired other %d", 40-usage.MaxRetired))
	assert.Contains(t, got, "call paymentStatus server_fault 1", "an unknown result counts as a server fault")
	assert.Empty(t, rows(t, st, 999), "events of goids that are not merchants are dropped")
}

// failingStore fails AddUsage until told otherwise.
type failingStore struct {
	usageStore
	mu   sync.Mutex
	fail bool
}

func (f *failingStore) AddUsage(ctx context.Context, c []store.UsageCount, l store.UsageLimits) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("database down")
	}
	return f.usageStore.AddUsage(ctx, c, l)
}

func TestFlushFailureKeepsCounts(t *testing.T) {
	real := sqliteStore(t, "")
	st := &failingStore{usageStore: real, fail: true}
	r := newRecorder(t, st, 7)
	ctx := context.Background()
	for range 5 {
		r.Record(ctx, usage.Event{GoID: 7, Operation: "paymentStatus", Result: usage.ResultOK})
	}
	require.Error(t, r.Flush(ctx))
	r.Record(ctx, usage.Event{GoID: 7, Operation: "paymentStatus", Result: usage.ResultOK})
	st.fail = false
	require.NoError(t, r.Flush(ctx))
	assert.Equal(t, []string{"call paymentStatus ok 6", "client unknown 6"}, rows(t, real, 7))
}

func TestLastCallsAcrossReplicas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := newRecorder(t, sqliteStore(t, path), 7, 8), newRecorder(t, sqliteStore(t, path), 7, 8)
	ctx := context.Background()
	a.Record(ctx, usage.Event{GoID: 7, Operation: "paymentStatus", Result: usage.ResultOK, At: t0})
	b.Record(ctx, usage.Event{GoID: 7, Operation: "paymentStatus", Result: usage.ResultOK, At: t0.Add(time.Hour)})
	b.Record(ctx, usage.Event{GoID: 8, Operation: "touch", Result: usage.ResultOK, At: t0.Add(2 * time.Hour)})
	b.Record(ctx, usage.Event{Operation: "touch", Result: usage.ResultOK, At: t0.Add(3 * time.Hour)})
	assert.Equal(t, map[int64]time.Time{7: t0}, a.LastCalls(), "before a flush: its own calls")
	require.NoError(t, b.Flush(ctx))
	require.NoError(t, a.Flush(ctx))
	assert.Equal(t, map[int64]time.Time{7: t0.Add(time.Hour), 8: t0.Add(2 * time.Hour)}, a.LastCalls(),
		"after a flush: every replica's last call; goid 0 left out")
}

// A call a stranger may have sent (refused before verification, or by the
// access rules) moves no merchant's last call, here or after a flush.
func TestStrangersCallsMoveNoLastCall(t *testing.T) {
	r := newRecorder(t, sqliteStore(t, ""), 7, 8)
	ctx := context.Background()
	r.Record(ctx, usage.Event{GoID: 7, Operation: "paymentStatus", Result: usage.ResultOK, At: t0})
	r.Record(ctx, usage.Event{GoID: 7, Operation: "paymentStatus", Result: usage.ResultDenied, At: t0.Add(time.Hour)})
	r.Record(ctx, usage.Event{GoID: 7, Operation: "paymentStatus", Result: usage.ResultUnverified, At: t0.Add(2 * time.Hour)})
	r.Record(ctx, usage.Event{GoID: 8, Operation: "refundPayment", Result: usage.ResultDenied, At: t0.Add(time.Hour)})
	want := map[int64]time.Time{7: t0}
	assert.Equal(t, want, r.LastCalls(), "before a flush")
	require.NoError(t, r.Flush(ctx))
	assert.Equal(t, want, r.LastCalls(), "after it")
}

func TestRunFlushesAtShutdown(t *testing.T) {
	st := sqliteStore(t, "")
	r := newRecorder(t, st, 7) // interval of an hour: only the shutdown flushes
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	r.Record(context.Background(), usage.Event{GoID: 7, Operation: "paymentStatus", Result: usage.ResultOK})
	cancel()
	<-done
	assert.Equal(t, []string{"call paymentStatus ok 1", "client unknown 1"}, rows(t, st, 7))
}

func TestRecordConcurrent(t *testing.T) {
	st := sqliteStore(t, "")
	r := newRecorder(t, st)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() { // flushes racing the calls
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
				assert.NoError(t, r.Flush(ctx))
			}
		}
	}()
	for g := range 8 {
		wg.Go(func() {
			for range 500 {
				r.Record(ctx, usage.Event{GoID: int64(g % 3), Operation: "paymentStatus", Result: usage.ResultOK,
					Features: []usage.Feature{usage.FeatureLang}})
			}
		})
	}
	wg.Wait()
	close(stop)
	<-flushed
	require.NoError(t, r.Flush(ctx))
	total := int64(0)
	for g := range 3 {
		rs, err := st.Usage(ctx, int64(g))
		require.NoError(t, err)
		for _, row := range rs {
			if row.Kind == store.UsageCall {
				total += row.Calls
			}
		}
	}
	assert.Equal(t, int64(8*500), total, "every call counted once")
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *usage.Recorder
	r.Record(context.Background(), usage.Event{GoID: 7, Operation: "touch"})
	assert.Nil(t, r.LastCalls())
}

// BenchmarkRecord: the hot path's cost, calls of a few merchants from
// every core at once.
func BenchmarkRecord(b *testing.B) {
	r := newRecorder(b, sqliteStore(b, ""))
	ctx := context.Background()
	ev := usage.Event{Operation: "createPayment", Result: usage.ResultOK, Client: usage.Client{Family: usage.FamilyPHP, Version: "8.2.36"},
		Features: []usage.Feature{usage.FeatureParams, usage.FeaturePaymentChannels, usage.ChannelFeature("cz_kb")}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		e := ev
		for i := int64(0); pb.Next(); i++ {
			e.GoID = 8123456780 + i%4
			r.Record(ctx, e)
		}
	})
}
