package restbackend_test

import (
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
// transport (2 idle connections per host), the baseline. conns/op is the
// share of calls that had to open a new TCP connection.
//
//	go test ./restbackend -run '^$' -bench CreatePaymentParallel -benchtime 20000x
func BenchmarkCreatePaymentParallel(b *testing.B) {
	transports := []struct {
		name string
		hc   func() *http.Client
	}{
		{"pooled", func() *http.Client { return nil }},
		{"default-2-idle", func() *http.Client {
			return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		}},
	}
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
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
			srv.Start()
			defer srv.Close()
			hc := tr.hc()
			c := restbackend.New(restbackend.Config{BaseURL: srv.URL, HTTPClient: hc, Timeout: time.Minute})
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
			if hc != nil {
				hc.CloseIdleConnections()
			}
		})
	}
}
