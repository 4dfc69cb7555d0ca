// Command soapload is a bounded load generator for a running bridge: it
// posts one SOAP request from many goroutines for a fixed time and reports
// throughput and latency, next to a baseline of GET /healthz measured in the
// same run, so figures are read as ratios rather than absolute numbers of
// one machine. It only targets loopback addresses.
//
//	go run ./cmd/soapload -url http://127.0.0.1:8080/axis/EPaymentServiceV2 \
//	    -body testdata/soapenc/captures/php-soapclient/touch.xml -want touchReturn
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "soapload:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("soapload", flag.ContinueOnError)
	target := fs.String("url", "http://127.0.0.1:8080/axis/EPaymentServiceV2", "SOAP endpoint (loopback only)")
	bodyFile := fs.String("body", "", "file with the SOAP request to post")
	want := fs.String("want", "", "text every good reply contains (e.g. touchReturn)")
	workers := fs.Int("c", 64, "concurrent clients")
	dur := fs.Duration("d", 10*time.Second, "duration of each phase (at most 5m)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("bad -url %q", *target)
	}
	if !loopback(u.Hostname()) {
		return fmt.Errorf("refusing %s: only loopback targets are allowed", u.Hostname())
	}
	if *bodyFile == "" {
		return errors.New("-body is required")
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	if *workers < 1 || *workers > 2000 || *dur <= 0 || *dur > 5*time.Minute {
		return errors.New("-c must be 1..2000 and -d within (0, 5m]")
	}
	client := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: *workers, MaxIdleConns: *workers},
		Timeout:   30 * time.Second,
	}
	health := u.Scheme + "://" + u.Host + "/healthz"
	base := phase(client, *workers, *dur, func() (*http.Request, error) {
		return http.NewRequest(http.MethodGet, health, nil)
	}, "")
	soap := phase(client, *workers, *dur, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, *target, bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "text/xml; charset=utf-8")
			req.Header.Set("SOAPAction", `""`)
		}
		return req, err
	}, *want)
	fmt.Fprintf(out, "baseline GET /healthz: %s\n", base)
	fmt.Fprintf(out, "SOAP %s: %s\n", *bodyFile, soap)
	if base.rps() > 0 && soap.rps() > 0 {
		fmt.Fprintf(out, "ratio: throughput %.2f× lower, p50 %.2f× higher than the baseline\n",
			base.rps()/soap.rps(), float64(soap.pct(0.5))/float64(max(base.pct(0.5), 1)))
	}
	if soap.bad > 0 || soap.errs > 0 {
		return fmt.Errorf("%d bad replies, %d transport errors", soap.bad, soap.errs)
	}
	return nil
}

// result is what one phase measured.
type result struct {
	ok, bad, errs int
	lat           []time.Duration
	elapsed       time.Duration
}

func (r result) rps() float64 { return float64(r.ok) / r.elapsed.Seconds() }

func (r result) pct(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[int(q*float64(len(r.lat)-1))]
}

func (r result) String() string {
	return fmt.Sprintf("%d ok, %d bad, %d errors, %.0f req/s, p50 %v, p99 %v, max %v",
		r.ok, r.bad, r.errs, r.rps(), r.pct(0.5).Round(time.Microsecond), r.pct(0.99).Round(time.Microsecond), r.pct(1).Round(time.Microsecond))
}

// phase runs workers clients for d, each sending newReq in a loop.
func phase(client *http.Client, workers int, d time.Duration, newReq func() (*http.Request, error), want string) result {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var total result
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			var mine result
			for ctx.Err() == nil {
				req, err := newReq()
				if err != nil {
					mine.errs++
					break
				}
				t := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					mine.errs++
					time.Sleep(10 * time.Millisecond)
					continue
				}
				raw, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				mine.lat = append(mine.lat, time.Since(t))
				if err == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(raw), want) {
					mine.ok++
				} else {
					mine.bad++
				}
			}
			mu.Lock()
			total.ok, total.bad, total.errs = total.ok+mine.ok, total.bad+mine.bad, total.errs+mine.errs
			total.lat = append(total.lat, mine.lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	total.elapsed = time.Since(start)
	slices.Sort(total.lat)
	return total
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
