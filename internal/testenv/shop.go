package testenv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// Shop is a test e-shop: it records the legacy notifications it gets (their
// query) and can be made to fail them. Lock Mu to read or set its fields
// while the bridge may be calling it.
type Shop struct {
	Srv   *httptest.Server
	Mu    sync.Mutex
	Raw   map[string]string // request URI by paymentSessionId
	Fail  int               // answer 503 to this many more calls
	Calls int               // calls received, failed ones included
	C     chan url.Values   // each accepted notification (buffered)
	got   []url.Values
}

// NewShop starts a Shop, closed when t ends.
func NewShop(t testing.TB) *Shop {
	s := &Shop{C: make(chan url.Values, 100), Raw: map[string]string{}}
	s.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Mu.Lock()
		s.Calls++
		if s.Fail > 0 {
			s.Fail--
			s.Mu.Unlock()
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		q := r.URL.Query()
		s.got = append(s.got, q)
		s.Raw[q.Get("paymentSessionId")] = r.URL.RequestURI()
		s.Mu.Unlock()
		s.C <- q
		_, _ = io.WriteString(w, "OK")
	}))
	t.Cleanup(s.Srv.Close)
	return s
}

// Received is every notification accepted so far.
func (s *Shop) Received() []url.Values {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return append([]url.Values(nil), s.got...)
}
