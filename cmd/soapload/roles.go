package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
)

// The harness runs its helper servers as child processes of its own binary
// (`soapload -role …`), so that each one's CPU and memory are read apart
// from the client's.

// ceilingReply is what the original service answers to touch: the bare
// ceiling server returns it for every POST.
const ceilingReply = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
 <soapenv:Body>
  <ns1:touchResponse soapenv:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/" xmlns:ns1="https://testgw.gopay.cz/axis/EPaymentServiceV2" xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/">
   <touchReturn xsi:type="soapenc:string">OK</touchReturn>
  </ns1:touchResponse>
 </soapenv:Body>
</soapenv:Envelope>
`

// runRole serves one helper role until SIGTERM. It prints "listening
// <addr>" on out once it accepts connections.
func runRole(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("soapload -role", flag.ContinueOnError)
	role := fs.String("role", "", "ceiling or delay")
	listen := fs.String("listen", "127.0.0.1:0", "listen address (loopback)")
	upstream := fs.String("upstream", "", "delay: the server to forward to")
	delay := fs.Duration("delay", 100*time.Millisecond, "delay: added before each forwarded request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var h http.Handler
	switch *role {
	case "ceiling":
		h = ceilingHandler()
	case "delay":
		u, err := url.Parse(*upstream)
		if err != nil || u.Host == "" || !loopback(u.Hostname()) {
			return fmt.Errorf("-upstream %q: a loopback http URL is required", *upstream)
		}
		h = delayProxy(u, *delay)
	default:
		return fmt.Errorf("unknown -role %q", *role)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		ln.Close()
		return errors.New("-listen must be a loopback address")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(out, "listening %s\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// ceilingHandler is a bare echo server answering every POST with the
// stored touch reply: what any Go HTTP service costs before doing work.
func ceilingHandler() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	reply := []byte(ceilingReply)
	e.POST("/*", func(c echo.Context) error {
		if _, err := io.Copy(io.Discard, c.Request().Body); err != nil {
			return err
		}
		return c.Blob(http.StatusOK, "text/xml; charset=utf-8", reply)
	})
	return e
}

// delayProxy forwards every request to upstream after d: a gateway that
// answers slowly, without the upstream holding the request meanwhile. With
// d ≤ 0 it is a bare reverse proxy (the relay of the slow-gateway
// scenarios).
func delayProxy(upstream *url.URL, d time.Duration) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(upstream)
	// Large enough that the proxy itself never dials per request.
	rp.Transport = &http.Transport{MaxIdleConns: 8192, MaxIdleConnsPerHost: 8192, IdleConnTimeout: time.Minute}
	rp.ErrorLog = nil
	if d <= 0 {
		return rp // a bare relay
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
		rp.ServeHTTP(w, r)
	})
}
