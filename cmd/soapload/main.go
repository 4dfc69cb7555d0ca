// Command soapload is the bridge's load harness (`make load`). Without -url
// it builds and starts every party on loopback (the bridge, the sandbox
// gateway, a bare ceiling server, a delaying proxy that makes the gateway
// slow, the PHP SoapServer adapter of bench/peers/php under php-fpm +
// nginx), runs every scenario of docs/performance.md in rounds with the
// baselines alternated, and reports the ratios first, then throughput,
// latency percentiles, errors, CPU per 1000 calls of every process and peak
// memory, as a table and (-json) as JSON. Every run is bounded in time:
//
//	go run ./cmd/soapload [-d 10s] [-rounds 3] [-quick] [-json report.json]
//
// With -url it loads one running bridge instead: one SOAP request from many
// goroutines for a fixed time next to a baseline of GET /healthz in the
// same run:
//
//	go run ./cmd/soapload -url http://127.0.0.1:8080/axis/EPaymentServiceV2 \
//	    -body testdata/soapenc/captures/php-soapclient/touch.xml -want touchReturn
//
// It only ever targets loopback addresses.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "soapload:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	switch {
	case hasFlag(args, "role"):
		return runRole(args, out)
	case hasFlag(args, "url"):
		return runOne(args, out)
	}
	return runSuite(args, out)
}

// hasFlag reports whether args set -name (or --name).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// runOne loads one running bridge next to its /healthz baseline.
func runOne(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("soapload -url", flag.ContinueOnError)
	endpoint := fs.String("url", "http://127.0.0.1:8080/axis/EPaymentServiceV2", "SOAP endpoint (loopback only)")
	bodyFile := fs.String("body", "", "file with the SOAP request to post")
	want := fs.String("want", "", "text every good reply contains (e.g. touchReturn)")
	workers := fs.Int("c", 64, "concurrent clients")
	dur := fs.Duration("d", 10*time.Second, "duration of each phase (at most 5m)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*endpoint)
	if err != nil || u.Host == "" {
		return fmt.Errorf("bad -url %q", *endpoint)
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
	// As many connections as clients, never more (TestClientsAreConnections):
	// a bridge caps the connections of one address.
	client := newClient(*workers, *workers, 30*time.Second, nil)
	health := target{method: http.MethodGet, url: u.Scheme + "://" + u.Host + "/healthz"}
	base := closedLoop(client, health, *workers, *dur)
	soap := closedLoop(client, soapTarget(*endpoint, body, *want), *workers, *dur)
	fmt.Fprintf(out, "baseline GET /healthz: %s\n", base)
	fmt.Fprintf(out, "SOAP %s: %s\n", *bodyFile, soap)
	if base.rps() > 0 && soap.rps() > 0 {
		fmt.Fprintf(out, "ratio: throughput %.2f× lower, p50 %.2f× higher than the baseline\n",
			base.rps()/soap.rps(), float64(soap.pct(0.5))/float64(max(base.pct(0.5), 1)))
	}
	if soap.bad > 0 || soap.errs > 0 || soap.refused > 0 {
		return fmt.Errorf("%d bad replies, %d refused (503), %d transport errors; the first: %s", soap.bad, soap.refused, soap.errs,
			soap.firstBad+soap.firstRefused)
	}
	return nil
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
