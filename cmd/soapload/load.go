package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
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

// do sends one request; ok says the reply was good, err a transport
// error; a bad reply is described in why.
func (t target) do(ctx context.Context, client *http.Client) (ok bool, why string, err error) {
	req, err := t.request(ctx)
	if err != nil {
		return false, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, "", err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return false, "", err
	}
	if resp.StatusCode == http.StatusOK && bytes.Contains(raw, t.want) {
		return true, "", nil
	}
	return false, fmt.Sprintf("status %d: %.300s", resp.StatusCode, raw), nil
}

// result is what one load phase measured.
type result struct {
	ok, bad, errs int
	firstBad      string          // a bad reply or transport error, for the report
	lat           []time.Duration // of every reply, good or bad, sorted
	elapsed       time.Duration
}

func (r *result) add(o result) {
	r.ok, r.bad, r.errs = r.ok+o.ok, r.bad+o.bad, r.errs+o.errs
	if r.firstBad == "" {
		r.firstBad = o.firstBad
	}
	r.lat = append(r.lat, o.lat...)
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
	return fmt.Sprintf("%d ok, %d bad, %d errors, %.0f req/s, p50 %v, p99 %v, max %v",
		r.ok, r.bad, r.errs, r.rps(), r.pct(0.5).Round(time.Microsecond), r.pct(0.99).Round(time.Microsecond), r.pct(1).Round(time.Microsecond))
}

// newClient is a keep-alive client for up to conns concurrent requests.
func newClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxIdleConns: conns, IdleConnTimeout: time.Minute},
		Timeout:   timeout,
	}
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
				ok, why, err := t.do(context.WithoutCancel(ctx), client)
				switch {
				case err != nil:
					mine.errs++
					mine.noteBad(err.Error())
					time.Sleep(10 * time.Millisecond) // no busy loop on a dead server
					continue
				case ok:
					mine.ok++
				default:
					mine.bad++
					mine.noteBad(why)
				}
				mine.lat = append(mine.lat, time.Since(t0))
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
// was due (so a stalled server cannot hide its queue). At most maxInFlight
// are outstanding; a request due beyond that counts as an error.
func openLoop(client *http.Client, t target, rate int, d time.Duration, maxInFlight int) result {
	var mu sync.Mutex
	var total result
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxInFlight)
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	n := int(d / interval)
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		select {
		case sem <- struct{}{}:
		default:
			mu.Lock()
			total.errs++
			total.noteBad("over the in-flight bound: not sent")
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			ok, why, err := t.do(context.Background(), client)
			lat := time.Since(due)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				total.errs++
				total.noteBad(err.Error())
				return
			case ok:
				total.ok++
			default:
				total.bad++
				total.noteBad(why)
			}
			total.lat = append(total.lat, lat)
		})
	}
	wg.Wait()
	// Throughput over the sending window: the replies of the last requests
	// arrive after it but were sent within it.
	total.elapsed = max(time.Duration(n)*interval, time.Millisecond)
	slices.Sort(total.lat)
	return total
}
