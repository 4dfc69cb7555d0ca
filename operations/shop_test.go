package operations

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// flShop is a test e-shop: it records the legacy notifications it gets and
// can be made to fail them.
type flShop struct {
	srv   *httptest.Server
	mu    sync.Mutex
	got   []url.Values
	raw   map[string]string // request URI by paymentSessionId
	fail  int               // answer 503 to this many more calls
	calls int
	ch    chan url.Values
}

func newFlShop(t *testing.T) *flShop {
	s := &flShop{ch: make(chan url.Values, 100), raw: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.calls++
		if s.fail > 0 {
			s.fail--
			s.mu.Unlock()
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		q := r.URL.Query()
		s.got = append(s.got, q)
		s.raw[q.Get("paymentSessionId")] = r.URL.RequestURI()
		s.mu.Unlock()
		s.ch <- q
		_, _ = io.WriteString(w, "OK")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *flShop) received() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.got...)
}
