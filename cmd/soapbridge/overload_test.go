package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/metrics"
)

// heldHandler answers 200 "done" once release is closed, and tells of each
// request it holds on held.
type heldHandler struct {
	held    chan string
	release chan struct{}
}

func newHeldHandler() *heldHandler {
	return &heldHandler{held: make(chan string, 100), release: make(chan struct{})}
}

func (h *heldHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.held <- r.URL.Path
	<-h.release
	_, _ = io.WriteString(w, "done")
}

// The limit of 2: two calls held, the third (a SOAP POST) waits
// overload_wait and gets a 503 Server fault with Retry-After and
// Connection: close, a GET a 503 page, a callback too, /healthz passes;
// each refusal is counted by route; once the two are answered, calls pass
// again. The order is set by the held handler, not by timing.
func TestOverloadRefusesBeyondTheLimit(t *testing.T) {
	h := newHeldHandler()
	o := newOverloadLimiter(2, 10*time.Millisecond, soapPath, zap.NewNop(), h)
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for range 2 {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			o.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, soapPath, strings.NewReader("<x/>")))
			codes <- rec.Code
		})
	}
	<-h.held
	<-h.held
	assert.Equal(t, int64(2), o.stats().InProgress)

	rec := httptest.NewRecorder()
	o.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, soapPath, strings.NewReader("<x/>")))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Equal(t, "close", rec.Header().Get("Connection"))
	assert.Equal(t, "text/xml; charset=utf-8", rec.Header().Get("Content-Type"))
	assert.Contains(t, rec.Body.String(), "<faultcode>soapenv:Server</faultcode>")
	assert.Contains(t, rec.Body.String(), "server busy: the bridge's limit on calls in progress is reached")
	assert.Equal(t, rec.Header().Get("Content-Length"), strconv.Itoa(rec.Body.Len()))

	rec = httptest.NewRecorder()
	o.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, soapPath+"?wsdl", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "text/plain; charset=utf-8", rec.Header().Get("Content-Type"))
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Contains(t, rec.Body.String(), "server busy")

	rec = httptest.NewRecorder()
	o.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/callback/notify?id=1", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)

	// /healthz is never refused: it reaches the handler while the slots
	// are full.
	hz := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		hz <- rec.Code
	}()
	assert.Equal(t, "/healthz", <-h.held)
	close(h.release)
	assert.Equal(t, http.StatusOK, <-hz)

	wg.Wait()
	assert.Equal(t, http.StatusOK, <-codes)
	assert.Equal(t, http.StatusOK, <-codes)
	s := o.stats()
	assert.Equal(t, metrics.OverloadStats{InProgress: 0, Max: 2, Refused: [3]int64{1, 1, 1}}, s)

	// Free again: calls pass.
	go func() {
		for range h.held {
		}
	}()
	for range 3 {
		rec = httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, soapPath, strings.NewReader("<x/>")))
		assert.Equal(t, http.StatusOK, rec.Code)
	}
}

// A call that waits for a slot gets the one freed within overload_wait.
func TestOverloadWaitTakesAFreedSlot(t *testing.T) {
	h := newHeldHandler()
	o := newOverloadLimiter(1, time.Minute, soapPath, zap.NewNop(), h)
	first := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, soapPath, nil))
		first <- rec.Code
	}()
	<-h.held
	second := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, soapPath, nil))
		second <- rec.Code
	}()
	close(h.release) // the first answers; the second, waiting or not yet, gets its slot
	assert.Equal(t, http.StatusOK, <-first)
	<-h.held
	assert.Equal(t, http.StatusOK, <-second)
	assert.Equal(t, [3]int64{}, o.stats().Refused)
}

// reusedWriter is a ResponseWriter that keeps its header map and discards
// the body: what the refusal itself allocates is measured, not a recorder's.
type reusedWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *reusedWriter) Header() http.Header         { return w.h }
func (w *reusedWriter) WriteHeader(code int)        { w.code = code }
func (w *reusedWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// A refusal allocates nothing, at once (overload_wait 0) or after the wait
// (its waiter, with its timer, and its body read ahead come from pools;
// on the server, the request's context makes its done channel for the
// wait, its one allocation): under overload, the
// refused calls must not take the CPU the admitted ones need. Allocations are exact on any
// machine: this cannot flake.
func TestOverloadRefusalAllocatesNothing(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's instrumentation allocates")
	}
	for _, wait := range []time.Duration{0, 50 * time.Microsecond} {
		o := newOverloadLimiter(1, wait, soapPath, zap.NewNop(), http.NotFoundHandler())
		require.True(t, o.adm.tryAcquire()) // the one slot is taken
		o.loggedAt.Store(time.Now().Add(time.Hour).UnixNano())
		w := &reusedWriter{h: http.Header{}}
		soap := httptest.NewRequest(http.MethodPost, soapPath, nil)
		page := httptest.NewRequest(http.MethodGet, "/gw/pay-full-v2", nil)
		// With a body, read ahead when it waits (from a pool).
		body := strings.NewReader("<x/>")
		soapBody := httptest.NewRequest(http.MethodPost, soapPath, body)
		allocs := testing.AllocsPerRun(200, func() {
			o.ServeHTTP(w, soap)
			o.ServeHTTP(w, page)
			body.Reset("<x/>")
			o.ServeHTTP(w, soapBody)
		})
		assert.Zero(t, allocs, "allocations per three refusals, overload_wait %v", wait)
		assert.Equal(t, http.StatusServiceUnavailable, w.code)
		assert.Equal(t, int64(3*201), o.totalRefused())
		if wait > 0 {
			assert.Zero(t, body.Len(), "the body was read ahead of the wait")
		} else {
			assert.Equal(t, 4, body.Len(), "refused at once: the body is left unread")
		}
		_, isHeld := soapBody.Body.(*heldBody)
		assert.False(t, isHeld, "the request has its own body back")
	}
}

// With no limit (0) nothing is refused, and calls in progress are still
// counted.
func TestOverloadOffCountsOnly(t *testing.T) {
	h := newHeldHandler()
	o := newOverloadLimiter(0, 0, soapPath, zap.NewNop(), h)
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			o.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, soapPath, nil))
			assert.Equal(t, http.StatusOK, rec.Code)
		})
	}
	for range 5 {
		<-h.held
	}
	assert.Equal(t, metrics.OverloadStats{InProgress: 5}, o.stats())
	close(h.release)
	wg.Wait()
	assert.Equal(t, int64(0), o.stats().InProgress)
}

func TestOverloadSettingsChecked(t *testing.T) {
	for _, v := range []string{"-max-calls-in-progress=-1", "-overload-wait=-1s", "-overload-wait=11s", "-overload-close-above=-1", "-overload-sched-latency=-1ms", "-overload-sched-latency=11s"} {
		_, err := loadConfig([]string{v}, envOf(nil))
		require.Error(t, err, v)
	}
	cfg, err := loadConfig(nil, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, 1000, cfg.MaxCallsInProgress)
	assert.Equal(t, 250*time.Millisecond, cfg.OverloadWait)
	assert.Equal(t, 4096, cfg.OverloadCloseAbove, "a refusal keeps its connection up to max_connections")
	assert.Equal(t, 20*time.Millisecond, cfg.OverloadSchedLatency, "the limit adapts unless set to 0")
	cfg, err = loadConfig([]string{"-overload-sched-latency=0", "-overload-close-above=2048"}, envOf(nil))
	require.NoError(t, err)
	assert.Zero(t, cfg.OverloadSchedLatency)
	assert.Equal(t, 2048, cfg.OverloadCloseAbove)
}

// A refusal keeps its connection while at most overload_close_above
// client connections are open, and closes it (Connection: close) above;
// with no count of connections (an uncapped listener) or a threshold of
// 0, every refusal closes. The count is a stand-in: no timing involved.
func TestOverloadClosesOnlyAboveTheConnectionThreshold(t *testing.T) {
	open := 0
	conns := func() metrics.ConnStats { return metrics.ConnStats{Open: open, Max: 100} }
	refusal := func(closeAbove int, conns func() metrics.ConnStats) http.Header {
		o := newOverloadLimiter(1, 0, soapPath, zap.NewNop(), http.NotFoundHandler())
		o.closeAbove, o.openConns = closeAbove, conns
		require.True(t, o.adm.tryAcquire()) // the one slot is taken
		rec := httptest.NewRecorder()
		o.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, soapPath, nil))
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		return rec.Header()
	}
	for _, c := range []struct {
		open, closeAbove int
		counted          bool
		closes           bool
	}{
		{open: 10, closeAbove: 50, counted: true, closes: false},
		{open: 50, closeAbove: 50, counted: true, closes: false},
		{open: 51, closeAbove: 50, counted: true, closes: true},
		{open: 10, closeAbove: 0, counted: true, closes: true},
		{open: 10, closeAbove: 50, counted: false, closes: true},
	} {
		open = c.open
		cs := conns
		if !c.counted {
			cs = nil
		}
		h := refusal(c.closeAbove, cs)
		if c.closes {
			assert.Equal(t, "close", h.Get("Connection"), "%+v", c)
		} else {
			assert.Empty(t, h.Values("Connection"), "%+v", c)
		}
	}
}

// A call waiting for a slot whose client closes its connection leaves at
// once, long before overload_wait (30 s), through the real HTTP server:
// a GET, and a SOAP POST, which net/http sees leave only because its body
// was read ahead of the wait (with its length declared or chunked); one
// whose client leaves in the middle of its body leaves before it waits.
// Each is counted as abandoned, neither made nor refused, and the slot
// goes to the next call. The test waits on the counter, not on a timing
// margin.
func TestOverloadWaiterWhoseClientLeaves(t *testing.T) {
	for _, c := range []struct {
		name, request string
		route         int
		cut           bool // the client leaves while it sends the body, before the call can wait
	}{
		{"a GET", "GET /gw/pay-full-v2?id=1 HTTP/1.1\r\nHost: bridge\r\n\r\n", routeOther, false},
		{"a SOAP POST", "POST " + soapPath + " HTTP/1.1\r\nHost: bridge\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"\"\r\nContent-Length: 4\r\n\r\n<x/>", routeSOAP, false},
		{"a SOAP POST, chunked", "POST " + soapPath + " HTTP/1.1\r\nHost: bridge\r\nContent-Type: text/xml; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n<x/>\r\n0\r\n\r\n", routeSOAP, false},
		{"a SOAP POST cut short", "POST " + soapPath + " HTTP/1.1\r\nHost: bridge\r\nContent-Type: text/xml; charset=utf-8\r\nContent-Length: 100\r\n\r\n<x/>", routeSOAP, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHeldHandler()
			o := newOverloadLimiter(1, 30*time.Second, soapPath, zap.NewNop(), h)
			srv := httptest.NewServer(o)
			defer srv.Close()
			var release sync.Once
			free := func() { release.Do(func() { close(h.release) }) }
			defer free() // before srv.Close, which waits for the calls in progress
			post := func() int {
				resp, err := http.Post(srv.URL+soapPath, "text/xml", strings.NewReader("<x/>"))
				if err != nil {
					return 0
				}
				_ = resp.Body.Close()
				return resp.StatusCode
			}
			first := make(chan int, 1)
			go func() { first <- post() }()
			<-h.held // the one slot is taken

			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			require.NoError(t, err)
			_, err = io.WriteString(conn, c.request)
			require.NoError(t, err)
			if !c.cut {
				require.Eventually(t, func() bool { _, _, n := o.adm.state(); return n == 1 },
					10*time.Second, time.Millisecond, "the second call waits for the slot")
			}
			require.NoError(t, conn.Close())
			require.Eventually(t, func() bool { return o.stats().Abandoned[c.route] == 1 },
				10*time.Second, 5*time.Millisecond, "the waiting call left when its client did")
			limit, inUse, waiting := o.adm.state()
			assert.Equal(t, [3]int{1, 1, 0}, [3]int{limit, inUse, waiting}, "the slot still held by the first, nobody waits")
			s := o.stats()
			assert.Equal(t, [3]int64{}, s.Refused, "not refused")
			assert.Equal(t, int64(1), s.InProgress, "not made")

			free()
			assert.Equal(t, http.StatusOK, <-first)
			assert.Equal(t, http.StatusOK, post(), "the slot is free again")
			assert.Equal(t, soapPath, <-h.held)
			assert.Empty(t, h.held, "the call whose client left never reached the handler")
			assert.Equal(t, [3]int{1, 0, 0}, func() [3]int { l, u, w := o.adm.state(); return [3]int{l, u, w} }())
		})
	}
}

// A call that waits reads its body ahead (so that it sees its client
// leave); admitted, the handler reads the whole body as sent: short or
// over readAheadMax (read partly ahead, the rest from the connection),
// with a declared length or chunked.
func TestOverloadWaitingCallKeepsItsBody(t *testing.T) {
	held, gates := make(chan struct{}), make(chan chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			gate := <-gates
			held <- struct{}{}
			<-gate
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = w.Write(b)
	})
	o := newOverloadLimiter(1, 30*time.Second, soapPath, zap.NewNop(), h)
	srv := httptest.NewServer(o)
	defer srv.Close()
	for _, size := range []int{4, readAheadMax, readAheadMax + 1, 3 * readAheadMax} {
		for _, chunked := range []bool{false, true} {
			sent := strings.Repeat("<x/>", size/4+1)[:size]
			var body io.Reader = strings.NewReader(sent)
			if chunked {
				body = struct{ io.Reader }{body} // no length known: sent chunked
			}
			gate := make(chan struct{})
			gates <- gate
			hold := make(chan error, 1)
			go func() {
				resp, err := http.Get(srv.URL + "/hold")
				if err == nil {
					_ = resp.Body.Close()
				}
				hold <- err
			}()
			<-held
			type result struct {
				code int
				body string
				err  error
			}
			got := make(chan result, 1)
			go func() {
				resp, err := http.Post(srv.URL+soapPath, "text/xml", body)
				if err != nil {
					got <- result{err: err}
					return
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				got <- result{resp.StatusCode, string(b), err}
			}()
			require.Eventually(t, func() bool { _, _, n := o.adm.state(); return n == 1 },
				10*time.Second, time.Millisecond, "size %d chunked %v: the call waits", size, chunked)
			close(gate)
			require.NoError(t, <-hold)
			r := <-got
			require.NoError(t, r.err)
			assert.Equal(t, http.StatusOK, r.code, "size %d chunked %v", size, chunked)
			assert.True(t, r.body == sent, "size %d chunked %v: the handler read the body as sent (%d bytes of %d)", size, chunked, len(r.body), size)
		}
	}
	s := o.stats()
	assert.Equal(t, [3]int64{}, s.Refused)
	assert.Equal(t, [3]int64{}, s.Abandoned)
}
