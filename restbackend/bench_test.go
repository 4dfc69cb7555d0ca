package restbackend_test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/legacybridge/soapbridge/restbackend"
)

// BenchmarkCreatePaymentParallel creates payments from many goroutines at
// once (SetParallelism 64: 128 on 2 cores), as the bridge does under load.
// "pooled" is the Client's own transport; "default-2-idle" is Go's default
// transport (2 idle connections per host), the baseline; over plain HTTP
// and over TLS (HTTP/1.1), where every new connection costs a handshake.
// conns/op is the share of calls that had to open a new connection.
//
//	go test ./restbackend -run '^$' -bench CreatePaymentParallel -benchtime 5000x
func BenchmarkCreatePaymentParallel(b *testing.B) {
	for _, tls := range []bool{false, true} {
		scheme := "http"
		if tls {
			scheme = "https"
		}
		b.Run(scheme+"/pooled", func(b *testing.B) {
			benchCreatePayment(b, tls, func(base *http.Transport) *http.Client {
				hc := restbackend.NewPooledHTTPClient(time.Minute, 0)
				hc.Transport.(*http.Transport).TLSClientConfig = base.TLSClientConfig
				return hc
			})
		})
		// The pool size before issue 14, for the ratio.
		b.Run(scheme+"/pooled-256", func(b *testing.B) {
			benchCreatePayment(b, tls, func(base *http.Transport) *http.Client {
				hc := restbackend.NewPooledHTTPClient(time.Minute, 256)
				hc.Transport.(*http.Transport).TLSClientConfig = base.TLSClientConfig
				return hc
			})
		})
		b.Run(scheme+"/default-2-idle", func(b *testing.B) {
			benchCreatePayment(b, tls, func(base *http.Transport) *http.Client {
				tr := http.DefaultTransport.(*http.Transport).Clone()
				tr.TLSClientConfig = base.TLSClientConfig
				return &http.Client{Transport: tr}
			})
		})
	}
}

// benchCreatePayment runs the parallel calls with the client hc returns;
// base is the test server's own transport (it trusts the test CA).
func benchCreatePayment(b *testing.B, tls bool, hc func(base *http.Transport) *http.Client) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/oauth2/token" {
			writeJSON(w, http.StatusOK, `{"token_type":"bearer","access_token":"bench","expires_in":1800}`)
			return
		}
		writeJSON(w, http.StatusOK, paymentReply)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	// Handshakes the client abandons (another connection came free first) are
	// not the benchmark's business.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	defer srv.Close()
	client := hc(srv.Client().Transport.(*http.Transport))
	defer client.CloseIdleConnections()
	c := restbackend.New(restbackend.Config{BaseURL: srv.URL, HTTPClient: client, Timeout: time.Minute})
	if _, err := c.Token(bg, testCreds); err != nil {
		b.Fatal(err)
	}
	conns.Store(0)
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.CreatePayment(bg, testCreds, fullPayment); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(conns.Load())/float64(b.N), "conns/op")
}

// BenchmarkPaymentStatusDirect: one payment status after another through
// the Client's own transport (the bridge's: the exchange goes straight to
// it), the test server's work included. Issue 28: allocations per call,
//
//	go test ./restbackend -run '^$' -bench PaymentStatusDirect -benchmem -count 6
func BenchmarkPaymentStatusDirect(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/oauth2/token" {
			writeJSON(w, http.StatusOK, `{"token_type":"bearer","access_token":"bench","expires_in":1800}`)
			return
		}
		writeJSON(w, http.StatusOK, paymentReply)
	}))
	defer srv.Close()
	c := restbackend.New(restbackend.Config{BaseURL: srv.URL})
	cr := restbackend.Credentials{ClientID: "id", ClientSecret: "secret"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.PaymentStatus(ctx, cr, 3000000001); err != nil {
			b.Fatal(err)
		}
	}
}
