package operations

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/legacybridge/soapbridge/internal/reqid"
	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/store"
)

// obClock is a clock that moves only when told.
type obClock struct {
	mu sync.Mutex
	t  time.Time
}

func newObClock() *obClock { return &obClock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)} }

func (c *obClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *obClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openObStore(t *testing.T, dsn string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

func obNotification(shop string, id int64, key string) store.Notification {
	return store.Notification{GoID: testGoID, PaymentID: id, Key: key,
		URL: shop + "/notify?paymentSessionId=" + FormatInt(id) + "&key=" + url.QueryEscape(key)}
}

// The e-shop is down for a while: the notification is retried with backoff
// and delivered once when it is back.
func TestOutboxRetriesUntilShopIsUp(t *testing.T) {
	shop := testenv.NewShop(t)
	shop.Fail = 3
	clock := newObClock()
	st := openObStore(t, filepath.Join(t.TempDir(), "o.db"))
	var backoffs []int
	ob := newOutbox(OutboxConfig{Store: st, Now: clock.Now, Backoff: func(n int) time.Duration {
		backoffs = append(backoffs, n)
		return time.Minute
	}})
	ctx := context.Background()
	added, err := ob.Enqueue(ctx, obNotification(shop.Srv.URL, 1, "k1"))
	require.NoError(t, err)
	require.True(t, added)

	for range 3 {
		n, err := ob.RunOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		n, err = ob.RunOnce(ctx) // not due yet
		require.NoError(t, err)
		require.Equal(t, 0, n)
		clock.Advance(time.Minute)
	}
	n, err := ob.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	assert.Equal(t, []int{1, 2, 3}, backoffs)
	assert.Equal(t, 4, shop.Calls)
	assert.Len(t, shop.Received(), 1)
	c, err := st.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, store.OutboxCounts{Delivered: 1}, c)
	clock.Advance(time.Hour)
	n, err = ob.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a delivered notification is not sent again")
}

// What the e-shop never takes is retried for 24 hours, then kept as dead
// with a log line.
func TestOutboxGivesUpAfterMaxAge(t *testing.T) {
	shop := testenv.NewShop(t)
	shop.Fail = 1 << 30
	clock := newObClock()
	st := openObStore(t, filepath.Join(t.TempDir(), "o.db"))
	core, logs := observer.New(zap.InfoLevel)
	ob := newOutbox(OutboxConfig{Store: st, Now: clock.Now, Logger: zap.New(core)})
	ctx := context.Background()
	_, err := ob.Enqueue(ctx, obNotification(shop.Srv.URL, 2, "k2"))
	require.NoError(t, err)

	start := clock.Now()
	for i := 0; i < 400; i++ {
		c, err := st.Counts(ctx)
		require.NoError(t, err)
		if c.Dead == 1 {
			break
		}
		_, err = ob.RunOnce(ctx)
		require.NoError(t, err)
		clock.Advance(10 * time.Minute)
	}
	c, err := st.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, store.OutboxCounts{Dead: 1}, c)
	assert.GreaterOrEqual(t, clock.Now().Sub(start), 24*time.Hour, "retried for at least 24 hours")
	assert.Less(t, clock.Now().Sub(start), 25*time.Hour, "given up soon after")
	dead := logs.FilterMessage("notification dead: e-shop did not take it").All()
	require.Len(t, dead, 1)
	assert.Equal(t, "k2", dead[0].ContextMap()["key"])
	// Backoff grows: far fewer attempts than minutes in a day.
	assert.Less(t, shop.Calls, 200)
	assert.Greater(t, shop.Calls, 10)
}

func TestDefaultBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 5: 32 * time.Second, 12: 10 * time.Minute, 100: 10 * time.Minute} {
		for range 20 {
			d := defaultBackoff(n)
			assert.GreaterOrEqual(t, d, want/2, n)
			assert.LessOrEqual(t, d, want, n)
		}
	}
}

// hungTransport never answers until released: a worker process that
// died (or hangs) in the middle of a delivery runs no more code.
type hungTransport struct{ started, release chan struct{} }

func (h hungTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.started <- struct{}{}
	<-h.release
	return nil, fmt.Errorf("connection lost")
}

// cancelTransport fails when the request's context ends.
type cancelTransport struct{ started chan struct{} }

func (c cancelTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.started <- struct{}{}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// A worker claims a notification and dies before delivering it: another
// process on the same store delivers it once the lease has ended.
func TestOutboxLeaseRecoversFromDeadWorker(t *testing.T) {
	shop := testenv.NewShop(t)
	clock := newObClock()
	dsn := filepath.Join(t.TempDir(), "o.db")
	stA, stB := openObStore(t, dsn), openObStore(t, dsn)
	hung := hungTransport{started: make(chan struct{}, 1), release: make(chan struct{})}
	const lease = 2 * time.Minute
	a := newOutbox(OutboxConfig{Store: stA, Now: clock.Now, Lease: lease, HTTPClient: &http.Client{Transport: hung}})
	b := newOutbox(OutboxConfig{Store: stB, Now: clock.Now, Lease: lease})
	ctx := context.Background()
	_, err := a.Enqueue(ctx, obNotification(shop.Srv.URL, 3, "k3"))
	require.NoError(t, err)

	done := make(chan int)
	go func() {
		n, _ := a.RunOnce(ctx)
		done <- n
	}()
	<-hung.started // a has claimed the row and is "dead" from here on

	n, err := b.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "still leased to the dead worker")
	clock.Advance(lease)
	n, err = b.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Len(t, shop.Received(), 1)

	// Should the "dead" worker wake up, its late failure changes nothing.
	close(hung.release)
	require.Equal(t, 1, <-done)
	c, err := stB.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, store.OutboxCounts{Delivered: 1}, c)
	clock.Advance(time.Hour)
	n, err = b.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
}

// A worker stopped mid-delivery (graceful shutdown) hands the row back at
// once, so the next process does not wait for the lease.
func TestOutboxShutdownReleasesClaim(t *testing.T) {
	shop := testenv.NewShop(t)
	clock := newObClock()
	dsn := filepath.Join(t.TempDir(), "o.db")
	stA, stB := openObStore(t, dsn), openObStore(t, dsn)
	ct := cancelTransport{started: make(chan struct{}, 1)}
	a := newOutbox(OutboxConfig{Store: stA, Now: clock.Now, HTTPClient: &http.Client{Transport: ct}})
	b := newOutbox(OutboxConfig{Store: stB, Now: clock.Now})
	ctx := context.Background()
	_, err := a.Enqueue(ctx, obNotification(shop.Srv.URL, 5, "k5"))
	require.NoError(t, err)
	actx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.Run(actx); close(done) }()
	<-ct.started
	stop()
	<-done
	n, err := b.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Len(t, shop.Received(), 1)
}

func TestOutboxDuplicatesCollapse(t *testing.T) {
	shop := testenv.NewShop(t)
	st := openObStore(t, filepath.Join(t.TempDir(), "o.db"))
	ob := newOutbox(OutboxConfig{Store: st})
	ctx := context.Background()
	for i := range 3 {
		added, err := ob.Enqueue(ctx, obNotification(shop.Srv.URL, 4, "8123456789:4:PAID:"))
		require.NoError(t, err)
		assert.Equal(t, i == 0, added)
	}
	n, err := ob.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	// Even after delivery the same change is not announced again.
	added, err := ob.Enqueue(ctx, obNotification(shop.Srv.URL, 4, "8123456789:4:PAID:"))
	require.NoError(t, err)
	assert.False(t, added)
	n, err = ob.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	assert.Len(t, shop.Received(), 1)
}

// Two bridge processes share one database and a burst of notifications
// arrives at both: each notification reaches the e-shop exactly once.
func TestOutboxTwoProcessesDeliverEachOnce(t *testing.T) {
	for name, dsn := range map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "o.db") },
		"postgres": func(t *testing.T) string { return testenv.PostgresSchema(t) },
	} {
		t.Run(name, func(t *testing.T) {
			d := dsn(t)
			shop := testenv.NewShop(t)
			shop.C = make(chan url.Values, 1000)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var workers []*outbox
			for range 2 {
				ob := newOutbox(OutboxConfig{Store: openObStore(t, d), Poll: 10 * time.Millisecond, Batch: 4})
				workers = append(workers, ob)
				wg.Add(1)
				go func() { defer wg.Done(); ob.Run(ctx) }()
			}
			defer func() { cancel(); wg.Wait() }()

			const burst = 120
			var ewg sync.WaitGroup
			for i := range burst {
				ewg.Add(1)
				go func() {
					defer ewg.Done()
					key := fmt.Sprintf("%d:%d:PAID:", testGoID, i)
					n := obNotification(shop.Srv.URL, int64(i), key)
					// Each change is announced twice, once to each process.
					_, err := workers[0].Enqueue(ctx, n)
					assert.NoError(t, err)
					_, err = workers[1].Enqueue(ctx, n)
					assert.NoError(t, err)
				}()
			}
			ewg.Wait()
			st := openObStore(t, d)
			require.Eventually(t, func() bool {
				c, err := st.Counts(ctx)
				return err == nil && c.Delivered == burst
			}, 60*time.Second, 20*time.Millisecond)
			seen := map[string]int{}
			for _, q := range shop.Received() {
				seen[q.Get("key")]++
			}
			assert.Len(t, seen, burst)
			for k, n := range seen {
				assert.Equal(t, 1, n, k)
			}
			c, err := st.Counts(ctx)
			require.NoError(t, err)
			assert.Equal(t, store.OutboxCounts{Delivered: burst}, c)
		})
	}
}

// BenchmarkOutbox measures accepting and delivering one notification
// (Enqueue into SQLite, claim, GET to a local e-shop, mark delivered).
func BenchmarkOutbox(b *testing.B) {
	shop := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go shop.Serve(ln) //nolint:errcheck // closed below
	defer shop.Close()
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "o.db"))
	require.NoError(b, err)
	defer st.Close()
	ob := newOutbox(OutboxConfig{Store: st, Batch: 16})
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		_, err := ob.Enqueue(ctx, obNotification("http://"+ln.Addr().String(), int64(i), "bench:"+strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		if i%16 == 15 || i == b.N-1 {
			for {
				n, err := ob.RunOnce(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
		}
	}
}

// A notification carries the request id of the call that enqueued it, and
// every delivery attempt is logged under it.
func TestOutboxLogsTheEnqueuingRequestID(t *testing.T) {
	shop := testenv.NewShop(t)
	shop.Fail = 1
	clock := newObClock()
	st := openObStore(t, filepath.Join(t.TempDir(), "o.db"))
	core, logs := observer.New(zap.InfoLevel)
	var failures []DeliveryFailure
	ob := newOutbox(OutboxConfig{Store: st, Now: clock.Now, Logger: zap.New(core),
		Backoff:   func(int) time.Duration { return time.Minute },
		OnFailure: func(f DeliveryFailure) { failures = append(failures, f) }})
	ctx := reqid.With(context.Background(), "call-42")
	_, err := ob.Enqueue(ctx, obNotification(shop.Srv.URL, 1, "k1"))
	require.NoError(t, err)
	for range 2 {
		_, err = ob.RunOnce(context.Background()) // the worker's context knows no call
		require.NoError(t, err)
		clock.Advance(time.Minute)
	}
	var msgs []string
	for _, e := range logs.All() {
		if e.ContextMap()["key"] == "k1" {
			assert.Equal(t, "call-42", e.ContextMap()["request_id"], e.Message)
			msgs = append(msgs, e.Message)
		}
	}
	assert.Equal(t, []string{"notification not delivered; will retry", "notification delivered"}, msgs)
	// The status page's record: host and status only, never the URL's
	// path or query (they carry the e-shop's parameters and signature).
	require.Len(t, failures, 1)
	f := failures[0]
	assert.Equal(t, shop.Srv.URL, f.Target)
	assert.Regexp(t, `^HTTP 5\d\d$`, f.Status)
	assert.Equal(t, "call-42", f.RequestID)
	assert.False(t, f.Dead)
	assert.Equal(t, int64(1), f.PaymentID)
}
