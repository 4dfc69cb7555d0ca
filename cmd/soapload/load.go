package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// target is one kind of request a scenario sends.
type target struct {
	method string
	url    string
	body   []byte
	header http.Header
	want   []byte // every good reply contains it (and has status 200)
}

func soapTarget(url string, body []byte, want string) target {
	return target{method: http.MethodPost, url: url, body: body, want: []byte(want),
		header: http.Header{"Content-Type": {"text/xml; charset=utf-8"}, "Soapaction": {`""`}}}
}

func (t target) request(ctx context.Context) (*http.Request, error) {
	var body io.Reader = http.NoBody
	if t.body != nil {
		body = bytes.NewReader(t.body)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, t.url, body)
	if err != nil {
		return nil, err
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	return req, nil
}

// outcome is what became of one request.
type outcome int

const (
	made    outcome = iota // a good reply
	bad                    // a reply, not the wanted one
	refused                // 503: the server refused it at once (overload), nothing done
	failed                 // a transport error
)

// do sends one request; a bad reply (and a refusal) is described in why,
// a transport error in err.
func (t target) do(ctx context.Context, client *http.Client) (o outcome, why string, err error) {
	req, err := t.request(ctx)
	if err != nil {
		return failed, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return failed, "", err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return failed, "", err
	}
	switch {
	case resp.StatusCode == http.StatusOK && bytes.Contains(raw, t.want):
		return made, "", nil
	case resp.StatusCode == http.StatusServiceUnavailable:
		return refused, fmt.Sprintf("status 503: %.300s", raw), nil
	}
	return bad, fmt.Sprintf("status %d: %.300s", resp.StatusCode, raw), nil
}

// count adds one request's outcome (latency lat from when it was due or
// sent) to r: the latencies are those of replies (good or bad), not of
// refusals or failures.
func (r *result) count(o outcome, why string, err error, lat time.Duration) {
	switch o {
	case failed:
		r.errs++
		r.noteBad(err.Error())
		return
	case refused:
		r.refused++
		r.noteRefused(why)
		return
	case made:
		r.ok++
	default:
		r.bad++
		r.noteBad(why)
	}
	r.lat = append(r.lat, lat)
}

// result is what one load phase measured.
type result struct {
	ok, bad, errs int
	refused       int             // 503 replies: refused at once by an overloaded server, counted apart from errors
	unsent        int             // open loop: due while the client's in-flight bound was full, never sent
	firstBad      string          // a bad reply or transport error, for the report
	firstRefused  string          // a refusal's reply
	lat           []time.Duration // of every reply, good or bad (not refusals), sorted
	elapsed       time.Duration
	peakConns     int64 // most client connections open at once (the client's count)
	// open loop: good replies received within the first earlyWindow of
	// the phase (or its whole duration when shorter), and that window: how
	// soon a cold server makes calls (issue 28: within 5 s of the start).
	early       int
	earlyWindow time.Duration
	// open loop: per second of when calls were due, the made and refused
	// calls and the made ones' latencies: whether a cold server's p99 is
	// its first second or every second.
	secs []second
}

// second is one second of an open loop, by when its calls were due.
type second struct {
	made, refused int
	lat           []time.Duration
}

// tick counts one outcome in the second it was due.
func (r *result) tick(sec int, o outcome, lat time.Duration) {
	for len(r.secs) <= sec {
		r.secs = append(r.secs, second{})
	}
	s := &r.secs[sec]
	switch o {
	case made:
		s.made++
		s.lat = append(s.lat, lat)
	case refused:
		s.refused++
	}
}

// timeline is the open loop's seconds as "made/refused p99" each.
func (r result) timeline() string {
	var b strings.Builder
	for i, s := range r.secs {
		if i > 0 {
			b.WriteString(" | ")
		}
		slices.Sort(s.lat)
		p99 := time.Duration(0)
		if len(s.lat) > 0 {
			p99 = s.lat[int(0.99*float64(len(s.lat)-1)+0.5)]
		}
		fmt.Fprintf(&b, "%d/%d %v", s.made, s.refused, p99.Round(time.Millisecond))
	}
	return b.String()
}

// earlyWindow is the start of an open loop whose made calls are counted
// apart (result.early).
const earlyWindow = 5 * time.Second

// earlyRate is the good replies per second within the first earlyWindow.
func (r result) earlyRate() float64 {
	if r.earlyWindow <= 0 {
		return 0
	}
	return float64(r.early) / r.earlyWindow.Seconds()
}

func (r *result) add(o result) {
	r.ok, r.bad, r.errs, r.refused, r.unsent = r.ok+o.ok, r.bad+o.bad, r.errs+o.errs, r.refused+o.refused, r.unsent+o.unsent
	if r.firstBad == "" {
		r.firstBad = o.firstBad
	}
	if r.firstRefused == "" {
		r.firstRefused = o.firstRefused
	}
	r.lat = append(r.lat, o.lat...)
}

func (r *result) noteRefused(why string) {
	if r.firstRefused == "" {
		r.firstRefused = why
	}
}

func (r *result) noteBad(why string) {
	if r.firstBad == "" {
		r.firstBad = why
	}
}

func (r result) rps() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

// pct is the q-quantile of the latencies (nearest rank).
func (r result) pct(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[int(q*float64(len(r.lat)-1)+0.5)]
}

func (r result) String() string {
	s := fmt.Sprintf("%d ok, %d bad, %d errors, %.0f req/s, p50 %v, p99 %v, max %v",
		r.ok, r.bad, r.errs, r.rps(), r.pct(0.5).Round(time.Microsecond), r.pct(0.99).Round(time.Microsecond), r.pct(1).Round(time.Microsecond))
	if r.refused > 0 || r.unsent > 0 {
		s += fmt.Sprintf(", %d refused (503), %d never sent", r.refused, r.unsent)
	}
	if len(r.secs) > 0 {
		s += "\n      per second due (made/refused p99): " + r.timeline()
	}
	return s
}

// connCounter counts the client's open connections and their peak.
type connCounter struct{ open, peak atomic.Int64 }

type countedConn struct {
	net.Conn
	c    *connCounter
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.c.open.Add(-1) })
	return c.Conn.Close()
}

// newClient is a keep-alive client for up to conns concurrent requests,
// which never opens more than maxConns connections (0: no cap): a request
// over it waits in the client for a connection (an open loop counts that
// wait, from when the request was due). Its connections are counted in
// cc when not nil.
func newClient(conns, maxConns int, timeout time.Duration, cc *connCounter) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxIdleConns: conns, IdleConnTimeout: time.Minute, MaxConnsPerHost: maxConns}
	if cc != nil {
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			n := cc.open.Add(1)
			for p := cc.peak.Load(); n > p && !cc.peak.CompareAndSwap(p, n); p = cc.peak.Load() {
			}
			return &countedConn{Conn: c, c: cc}, nil
		}
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// closedLoop runs workers clients for d, each sending its next request as
// soon as the previous reply is in, and at least one (a worker started
// late on a loaded machine still counts).
func closedLoop(client *http.Client, t target, workers int, d time.Duration) result {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var total result
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			var mine result
			for first := true; first || ctx.Err() == nil; first = false {
				t0 := time.Now()
				// The phase's end does not cancel a request in flight: its
				// reply counts, so the bound is d plus one reply.
				o, why, err := t.do(context.WithoutCancel(ctx), client)
				mine.count(o, why, err, time.Since(t0))
				if o == failed || o == refused {
					time.Sleep(10 * time.Millisecond) // no busy loop on a dead or refusing server
				}
			}
			mu.Lock()
			total.add(mine)
			mu.Unlock()
		})
	}
	wg.Wait()
	total.elapsed = time.Since(start)
	slices.Sort(total.lat)
	return total
}

// openLoop sends rate requests per second for d whatever the replies do,
// each on its own goroutine, and measures each latency from the moment it
// was due (so a stalled server cannot hide its queue, nor the client's
// own wait for a connection). At most maxInFlight are outstanding; a
// request due beyond that is never sent, and counted so (unsent). A 503
// counts as refused, apart from errors.
func openLoop(client *http.Client, t target, rate int, d time.Duration, maxInFlight int) result {
	var mu sync.Mutex
	var total result
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxInFlight)
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	n := int(d / interval)
	window := min(earlyWindow, d)
	total.earlyWindow = window
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		select {
		case sem <- struct{}{}:
		default:
			mu.Lock()
			total.unsent++
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			o, why, err := t.do(context.Background(), client)
			now := time.Now()
			lat := now.Sub(due)
			mu.Lock()
			defer mu.Unlock()
			total.count(o, why, err, lat)
			total.tick(int(due.Sub(start)/time.Second), o, lat)
			if o == made && now.Sub(start) <= window {
				total.early++
			}
		})
	}
	wg.Wait()
	// Throughput over the sending window: the replies of the last requests
	// arrive after it but were sent within it.
	total.elapsed = max(time.Duration(n)*interval, time.Millisecond)
	slices.Sort(total.lat)
	return total
}
