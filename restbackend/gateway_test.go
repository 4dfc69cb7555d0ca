package restbackend_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/legacybridge/soapbridge/restbackend"
)

// Test credentials. The strings are distinctive so that the log tests can
// search for them.
var (
	testCreds  = restbackend.Credentials{ClientID: "test-client", ClientSecret: "s3cr3t-Xq9-value"}
	otherCreds = restbackend.Credentials{ClientID: "other-client", ClientSecret: "other-s3cr3t-Zk2"}
)

const tokenPrefix = "AT-w7Tq-" // access tokens are AT-w7Tq-1, AT-w7Tq-2, …

// recorded is one request as the fake gateway saw it.
type recorded struct {
	Method, Path  string
	Header        http.Header
	ContentLength int64 // -1 when unknown (chunked)
	Body          []byte
}

func (r *recorded) bearer() string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// fakeGateway is a recording REST gateway: it issues tokens itself and
// hands every other authorised request to api.
type fakeGateway struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	calls      []*recorded // every request except token requests
	tokenCalls []*recorded
	issued     int
	valid      map[string]bool
	ttl        int64 // expires_in of issued tokens
	// tokenHold, when set, holds every token request until it is closed
	// (or the client gives up): concurrent callers pile up behind the
	// first, or a caller's deadline passes while it waits.
	tokenHold chan struct{}
	api       func(w http.ResponseWriter, r *http.Request, rec *recorded)
	// closing is closed when the test ends, before the server stops:
	// whatever a handler still holds is let go.
	closing chan struct{}
}

func newFakeGateway(t *testing.T) *fakeGateway {
	g := &fakeGateway{t: t, valid: map[string]bool{}, ttl: 1800, closing: make(chan struct{})}
	g.api = func(w http.ResponseWriter, _ *http.Request, _ *recorded) {
		writeJSON(w, http.StatusOK, `{"id":3000000001,"order_number":"ORD-1","state":"CREATED","amount":1000,"currency":"CZK"}`)
	}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(func() { close(g.closing); g.srv.Close() })
	return g
}

// holdToken makes token requests wait until the returned release is
// called (or their client gives up).
func (g *fakeGateway) holdToken() (release func()) {
	ch := make(chan struct{})
	var once sync.Once
	g.mu.Lock()
	g.tokenHold = ch
	g.mu.Unlock()
	return func() { once.Do(func() { close(ch) }) }
}

func (g *fakeGateway) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := &recorded{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), ContentLength: r.ContentLength, Body: body}
	if r.URL.Path == "/api/oauth2/token" {
		g.serveToken(w, r, rec)
		return
	}
	g.mu.Lock()
	g.calls = append(g.calls, rec)
	ok := g.valid[rec.bearer()]
	api := g.api
	g.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, `{"date_issued":"2026-01-02T10:11:12.345+0100","errors":[{"scope":"G","error_code":200,"error_name":"AUTH_WRONG_TOKEN","message":"wrong token"}]}`)
		return
	}
	api(w, r, rec)
}

func (g *fakeGateway) serveToken(w http.ResponseWriter, r *http.Request, rec *recorded) {
	g.mu.Lock()
	g.tokenCalls = append(g.tokenCalls, rec)
	hold := g.tokenHold
	g.mu.Unlock()
	id, secret, _ := r.BasicAuth()
	if !(id == testCreds.ClientID && secret == testCreds.ClientSecret) && !(id == otherCreds.ClientID && secret == otherCreds.ClientSecret) {
		writeJSON(w, http.StatusUnauthorized, `{"errors":[{"scope":"G","error_code":202,"error_name":"AUTH_WRONG_CREDENTIALS","message":"wrong credentials"}]}`)
		return
	}
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		case <-g.closing:
			return
		}
	}
	g.mu.Lock()
	g.issued++
	tok := fmt.Sprintf("%s%d", tokenPrefix, g.issued)
	g.valid[tok] = true
	ttl := g.ttl
	g.mu.Unlock()
	writeJSON(w, http.StatusOK, fmt.Sprintf(`{"token_type":"bearer","access_token":%q,"refresh_token":"RT-unused","expires_in":%d}`, tok, ttl))
}

// revokeAll makes every issued token invalid, as if it expired.
func (g *fakeGateway) revokeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.valid)
}

func (g *fakeGateway) setAPI(h func(w http.ResponseWriter, r *http.Request, rec *recorded)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.api = h
}

func (g *fakeGateway) callCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.calls)
}

func (g *fakeGateway) tokenCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.tokenCalls)
}

func (g *fakeGateway) lastCall() *recorded {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.calls) == 0 {
		g.t.Fatal("the gateway saw no call")
	}
	return g.calls[len(g.calls)-1]
}

// client returns a Client of g; BaseURL is the server root, so "/api" is
// appended by the client itself.
func (g *fakeGateway) client(mod ...func(*restbackend.Config)) *restbackend.Client {
	cfg := restbackend.Config{BaseURL: g.srv.URL}
	for _, m := range mod {
		m(&cfg)
	}
	return restbackend.New(cfg)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// replyWith answers every API call with status and body.
func replyWith(status int, body string) func(http.ResponseWriter, *http.Request, *recorded) {
	return func(w http.ResponseWriter, _ *http.Request, _ *recorded) { writeJSON(w, status, body) }
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pid is the payment every canned reply is about.
const pid = 3000000001
