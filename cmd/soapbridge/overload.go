package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/soapenc"
)

// Degrade, don't collapse: offered more than it can serve, the bridge
// keeps making calls at its capacity and refuses the rest at once and
// cheaply, instead of letting every call wait in a growing queue (and
// every waiting call cost CPU, memory and a connection) until none
// answers in time. The limit is on requests in progress on the public
// listener: max_calls_in_progress, lower while the replica is short of
// CPU (the adaptive limit, overload_sched_latency, on by default:
// adaptive.go). One that finds the limit reached waits at most
// overload_wait (250 ms) for a slot (admission.go: in order of arrival),
// then gets 503 (a SOAP call: a SOAP
// 1.1 Server fault) with Retry-After: 1, and Connection: close while more
// client connections than overload_close_above (4096, as max_connections)
// are open. One whose client leaves while it waits gives up its place at
// once (abandoned: neither made nor refused). /healthz is never refused
// (a balancer must not take a busy replica for a dead one), nor is the
// admin listener (a separate server).

// overloadLimiter is the admission limit, an http.Handler around the
// public router.
type overloadLimiter struct {
	next     http.Handler
	max      int
	wait     time.Duration
	soapPath string
	log      *zap.Logger

	adm *admission // nil: no limit (max 0), only counted
	// closeAbove: a refusal closes its connection only while more than
	// this many client connections are open (openConns); 0, or no count
	// (an uncapped listener): every refusal closes.
	closeAbove int
	openConns  func() metrics.ConnStats
	// adapt lowers the limit under max while the CPU cannot keep up
	// (adaptive.go); nil: the limit is max, fixed.
	adapt      *adaptiveLimit
	inProgress atomic.Int64
	refused    [len(metrics.OverloadRoutes)]atomic.Int64
	loggedAt   atomic.Int64 // unix nanoseconds of the last warning
	loggedN    atomic.Int64 // refusals when it was written
	fault      []byte       // the SOAP fault of a refused call, made once
	page       []byte       // the plain-text page of anything else
	faultLen   []string     // its Content-Length value
	pageLen    []string
	// abandoned: calls whose client left (closed its connection) while
	// they waited for a slot, by route; neither made nor refused.
	abandoned [len(metrics.OverloadRoutes)]atomic.Int64
}

// Route indexes of metrics.OverloadRoutes.
const (
	routeSOAP = iota
	routeCallback
	routeOther
)

// Header values of a refusal, shared (read-only) by every refused reply
// so that none allocates.
var (
	retryAfterOne = []string{"1"}
	connClose     = []string{"close"}
	textXML       = []string{"text/xml; charset=utf-8"}
	textPlain     = []string{"text/plain; charset=utf-8"}
)

// overloadLogEvery is the most often a refusal is logged: a flood of
// refusals must not flood the log (the counter has every one).
const overloadLogEvery = 10 * time.Second

// limitCalls wraps next (the public router) in the admission limit of
// cfg, and registers its metrics with met (when not nil).
// conns counts the listener's open connections (nil when uncapped). The
// adaptive limit (overload_sched_latency) adjusts until ctx ends, from the
// gateway's replies that pace counts (the REST client's observer).
func limitCalls(ctx context.Context, cfg Config, conns func() metrics.ConnStats, pace *gatewayPace, met *metrics.Metrics, log *zap.Logger, next http.Handler) http.Handler {
	o := newOverloadLimiter(cfg.MaxCallsInProgress, cfg.OverloadWait, cfg.SOAPPath, log.Named("http"), next)
	o.closeAbove, o.openConns = cfg.OverloadCloseAbove, conns
	if o.adm != nil && cfg.OverloadSchedLatency > 0 {
		o.adapt = newAdaptiveLimit(o.adm, o.max, cfg.OverloadSchedLatency, pace)
		go o.adapt.run(ctx)
		log.Named("http").Info(fmt.Sprintf("the limit on calls in progress adapts between %d and %d: lower while runnable goroutines wait over %v for a CPU (p99, overload_sched_latency)",
			o.adapt.floor, o.max, cfg.OverloadSchedLatency))
	}
	if met != nil {
		met.SetOverload(o.stats)
	}
	return o
}

func newOverloadLimiter(max int, wait time.Duration, soapPath string, log *zap.Logger, next http.Handler) *overloadLimiter {
	o := &overloadLimiter{next: next, max: max, wait: wait, soapPath: soapPath, log: log}
	if max <= 0 {
		log.Info("no limit on calls in progress (max_calls_in_progress 0)")
		return o
	}
	o.adm = newAdmission(max, wait)
	// No number: under the adaptive limit the one in force moves, and the
	// body is made once (a refusal allocates nothing).
	const text = "server busy: the bridge's limit on calls in progress is reached; nothing was done, retry in a second"
	rec := httptest.NewRecorder()
	_ = soapenc.WriteFault(rec, &soapenc.Fault{Code: soapenc.FaultServer, String: text})
	o.fault = rec.Body.Bytes()
	o.page = []byte(text + "\n")
	o.faultLen, o.pageLen = []string{strconv.Itoa(len(o.fault))}, []string{strconv.Itoa(len(o.page))}
	log.Info(fmt.Sprintf("at most %d calls in progress (max_calls_in_progress); one more waits up to %v (overload_wait), then gets 503",
		max, wait))
	return o
}

func (o *overloadLimiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		o.next.ServeHTTP(w, r)
		return
	}
	var held *heldBody
	if o.adm != nil && !o.adm.tryAcquire() {
		var ok bool
		if ok, held = o.await(w, r); !ok {
			return
		}
	}
	o.inProgress.Add(1)
	defer o.done(r, held)
	o.next.ServeHTTP(w, r)
}

func (o *overloadLimiter) done(r *http.Request, held *heldBody) {
	o.inProgress.Add(-1)
	if o.adm != nil {
		o.adm.release()
	}
	held.free(r)
}

// await waits at most o.wait for a slot (admission.go: in order of
// arrival) once none was free, and answers the call itself when it gets
// none: refused, or abandoned when its client leaves while it waits.
// Admitted, it returns the body it read ahead (nil when none), which the
// call frees once answered.
//
// net/http cancels the request's context when the client closes its
// connection, but only once it reads from the connection again: after
// the request's body was read to its end (a request without a body: at
// once). Until then a close is not seen: a SOAP call, a POST whose body
// the limiter (the outermost handler) has not read, would wait out
// overload_wait, and if granted a slot be made for nobody. So a call
// that must wait reads its body first (readAhead), and joins the queue
// once it has it; a body over readAheadMax (read in part when its
// length is not declared), or one the client sends only on "Expect:
// 100-continue", is not read to its end, and such a call waits as before,
// not seeing its client leave.
func (o *overloadLimiter) await(w http.ResponseWriter, r *http.Request) (bool, *heldBody) {
	if o.adapt != nil {
		o.adapt.busy.Add(1)
	}
	if o.wait > 0 {
		held, err := readAhead(r)
		if err != nil { // the client left while sending it, or was too slow (read_timeout)
			o.abandon(w, r)
			return false, nil
		}
		done := r.Context().Done() // on the server, its one allocation: the channel
		if o.adm.acquire(done) {
			return true, held
		}
		held.free(r)
		if isClosed(done) {
			o.abandon(w, r)
			return false, nil
		}
	}
	o.refuse(w, r)
	return false, nil
}

// readAheadMax is the largest request body a call that must wait for a
// slot reads before it waits (bytes). A SOAP call's is a few kilobytes;
// the bodies read ahead are held while their calls wait, at most
// max_connections of them.
const readAheadMax = 16 << 10

// heldBody is a request body read ahead, in place of r.Body until the
// call is answered, from a pool: a wait allocates nothing for it.
type heldBody struct {
	data bytes.Buffer
	lr   io.LimitedReader // over the request's body, readAheadMax+1 bytes
	orig io.ReadCloser    // the request's body
	more bool             // orig goes on past data (no end within readAheadMax)
}

var heldBodies = sync.Pool{New: func() any { return new(heldBody) }}

// readAhead reads r's body, when it has one of at most readAheadMax bytes
// (declared, or found by reading), so that net/http, which then reads
// ahead on the connection, sees a close and ends r's context; r.Body then
// reads from it. A longer one is read up to readAheadMax+1 bytes and the
// rest is left on the connection. An error is the client's: it left
// while sending the body, or sent it slower than read_timeout.
func readAhead(r *http.Request) (*heldBody, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 || r.ContentLength > readAheadMax ||
		r.ProtoMajor != 1 || r.Header["Expect"] != nil {
		return nil, nil
	}
	b := heldBodies.Get().(*heldBody)
	b.orig = r.Body
	b.lr = io.LimitedReader{R: r.Body, N: readAheadMax + 1}
	if _, err := b.data.ReadFrom(&b.lr); err != nil {
		b.free(nil)
		return nil, err
	}
	b.more = b.lr.N == 0
	b.lr.R = nil
	r.Body = b
	return b, nil
}

func (b *heldBody) Read(p []byte) (int, error) {
	if b.data.Len() > 0 || !b.more {
		return b.data.Read(p)
	}
	return b.orig.Read(p)
}

func (b *heldBody) Close() error { return b.orig.Close() }

// free gives r its own body back, and b back to the pool (b may be nil).
func (b *heldBody) free(r *http.Request) {
	if b == nil {
		return
	}
	if r != nil && r.Body == b {
		r.Body = b.orig
	}
	b.data.Reset()
	b.lr, b.orig, b.more = io.LimitedReader{}, nil, false
	heldBodies.Put(b)
}

// route is the refusal's label: a SOAP call, a gateway callback, or other.
func (o *overloadLimiter) route(r *http.Request) int {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == o.soapPath:
		return routeSOAP
	case strings.HasPrefix(r.URL.Path, "/callback/"):
		return routeCallback
	}
	return routeOther
}

// refuse answers 503 at once: a SOAP 1.1 Server fault to a SOAP call (a
// legacy client reads nothing else; PHP's SoapClient throws it as a
// SoapFault), a short page to the rest; Retry-After: 1 on both, and
// Connection: close, which gives the descriptor back (a client that
// retries comes back on a new connection, which the listener's caps see).
// The connection stays open while no more connections than
// overload_close_above are open (the default: until max_connections): a
// refused client that retries on it costs the bridge a request, where a
// reconnect costs an accept, a goroutine and the client a dial; on a quiet
// machine that made a fifth more calls with a lower p99 under a warm
// overload (docs/performance.md). Nothing is allocated: the bodies and
// header values are made once.
func (o *overloadLimiter) refuse(w http.ResponseWriter, r *http.Request) {
	route := o.route(r)
	n := o.refused[route].Add(1)
	o.reply(w, route, o.closeOnRefusal())
	o.warn(route, n)
}

// abandon answers a call whose client left while it waited with the
// refusal and Connection: close, which reach no one unless the
// connection is still half open, and counts it apart: it was neither made
// nor refused. Not logged: a flood of clients that give up would flood
// the log (the counter has every one).
func (o *overloadLimiter) abandon(w http.ResponseWriter, r *http.Request) {
	route := o.route(r)
	o.abandoned[route].Add(1)
	o.reply(w, route, true)
}

// reply writes the refusal of a call of route.
func (o *overloadLimiter) reply(w http.ResponseWriter, route int, closeConn bool) {
	h := w.Header()
	h["Retry-After"] = retryAfterOne
	if closeConn {
		h["Connection"] = connClose
	}
	body, length, ctype := o.page, o.pageLen, textPlain
	if route == routeSOAP {
		body, length, ctype = o.fault, o.faultLen, textXML
	}
	h["Content-Type"] = ctype
	h["Content-Length"] = length
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(body)
}

// closeOnRefusal: whether a refusal closes its connection now.
func (o *overloadLimiter) closeOnRefusal() bool {
	return o.closeAbove <= 0 || o.openConns == nil || o.openConns().Open > o.closeAbove
}

// warn logs a refusal at most once per overloadLogEvery, with the count
// since the last line and the limit in force (max_calls_in_progress, or
// lower while the adaptive limit has lowered it).
func (o *overloadLimiter) warn(route int, n int64) {
	now := time.Now().UnixNano()
	last := o.loggedAt.Load()
	if now-last < int64(overloadLogEvery) || !o.loggedAt.CompareAndSwap(last, now) {
		return
	}
	total := o.totalRefused()
	since := total - o.loggedN.Swap(total)
	o.log.Warn("overloaded: refusing calls with 503 (the limit on calls in progress reached for overload_wait)",
		zap.Int("max_calls_in_progress", o.max), zap.Int("limit", o.stats().Max), zap.Int64("in_progress", o.inProgress.Load()),
		zap.Int64("refused_since_last_line", since), zap.Int64("refused_so_far", total),
		zap.String("route", metrics.OverloadRoutes[route]), zap.Int64("route_refused_so_far", n))
}

func (o *overloadLimiter) totalRefused() int64 {
	var t int64
	for i := range o.refused {
		t += o.refused[i].Load()
	}
	return t
}

// stats are the limiter's figures for the metrics.
func (o *overloadLimiter) stats() metrics.OverloadStats {
	s := metrics.OverloadStats{InProgress: o.inProgress.Load(), Max: o.max}
	if o.adapt != nil {
		s.Max = int(o.adapt.limit.Load())
	}
	for i := range o.refused {
		s.Refused[i] = o.refused[i].Load()
		s.Abandoned[i] = o.abandoned[i].Load()
	}
	return s
}
