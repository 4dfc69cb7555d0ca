// Package faultproxy is an HTTP proxy for tests that sits between the bridge
// and a gateway (the sandbox) and misbehaves on request: it resets
// connections, answers errors, delays, holds, truncates or garbles replies,
// or swaps the payment id in them, before or after the request reached the
// gateway. It counts what it forwarded, so a test can tell how often the
// gateway really saw a POST, and what it holds and which held clients gave
// up, so a test can order events instead of timing them.
package faultproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault is what the proxy does to one request.
type Fault int

const (
	// Pass forwards the request and relays the reply unchanged.
	Pass Fault = iota
	// ResetBefore resets the client's connection; nothing is forwarded.
	ResetBefore
	// ResetAfter forwards, then resets the client's connection instead of
	// relaying the reply.
	ResetAfter
	// ServerErrorBefore answers 500 with a gateway error list; nothing is
	// forwarded.
	ServerErrorBefore
	// BadGatewayAfter forwards, then answers 502 with a proxy's HTML page.
	BadGatewayAfter
	// Delay forwards, then holds the reply for Rule.Delay before relaying
	// it (the client may have given up by then).
	Delay
	// Truncate forwards, then relays the status, headers and declared
	// length of the reply but only half its body, and closes.
	Truncate
	// Malformed forwards, then answers 200 with a JSON content type and a
	// body that is not JSON.
	Malformed
	// WrongID forwards, then relays the reply with its top-level "id"
	// (or "parent_id" when the reply has one: a recurrence child) replaced
	// by Rule.ID (the old value + 1000 when zero).
	WrongID
	// Hang holds the request without forwarding it until the client gives
	// up or the proxy closes.
	Hang
	// Hold forwards, then holds the reply until Release relays it, the
	// client gives up, or the proxy closes. A test that must know which
	// comes first (the reply or the client's timeout) uses Hold and
	// decides: Release after Holding reports the request, or wait for
	// GaveUp; a Delay would be a bet on the machine's speed.
	Hold
)

var faultNames = [...]string{"pass", "reset-before", "reset-after", "5xx-before", "502-after",
	"delay", "truncate", "malformed", "wrong-id", "hang", "hold"}

func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "Fault(" + strconv.Itoa(int(f)) + ")"
}

// Forwards reports whether the gateway sees the request under f.
func (f Fault) Forwards() bool { return f != ResetBefore && f != ServerErrorBefore && f != Hang }

// Rule picks requests and the fault they get.
type Rule struct {
	Method string // "" matches any
	// Path is a path.Match pattern of the URL path, e.g.
	// "/api/payments/payment/*/refund"; "" matches any.
	Path  string
	Fault Fault
	// Times is how many matching requests get the fault; 0 is every one.
	Times int
	Delay time.Duration // for Delay
	ID    int64         // for WrongID
}

func (r *Rule) matches(req *http.Request) bool {
	if r.Method != "" && r.Method != req.Method {
		return false
	}
	if r.Path == "" {
		return true
	}
	ok, _ := path.Match(r.Path, req.URL.Path)
	return ok
}

type rule struct {
	Rule
	left int // -1: unlimited
}

// Proxy is a running fault-injecting proxy on a loopback port.
type Proxy struct {
	upstream string
	hc       *http.Client
	srv      *httptest.Server
	done     chan struct{}
	once     sync.Once

	mu        sync.Mutex
	rules     []*rule
	forwarded map[string]int // "METHOD path" → count
	holding   map[string]int // held right now (Hang, Delay, Hold)
	gaveUp    map[string]int // held requests whose client went away
	release   chan struct{}  // closed by Release: the Hold replies held now go
}

// New starts a proxy in front of upstream (a base URL such as
// http://127.0.0.1:8080). Requests keep their path and query.
func New(upstream string) *Proxy {
	p := &Proxy{
		upstream:  strings.TrimRight(upstream, "/"),
		done:      make(chan struct{}),
		forwarded: map[string]int{},
		holding:   map[string]int{},
		gaveUp:    map[string]int{},
		release:   make(chan struct{}),
		hc: &http.Client{
			Transport:     &http.Transport{DisableCompression: true, Proxy: nil},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// URL is the proxy's base URL, to configure in place of upstream.
func (p *Proxy) URL() string { return p.srv.URL }

// Add appends r; the first rule that matches a request and has uses left
// decides its fault. A request no rule matches passes.
func (p *Proxy) Add(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	left := r.Times
	if left <= 0 {
		left = -1
	}
	p.rules = append(p.rules, &rule{Rule: r, left: left})
}

// Clear drops every rule; counts are kept.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Forwarded counts the requests with method whose path matches pattern
// (path.Match) that reached the upstream.
func (p *Proxy) Forwarded(method, pattern string) int { return p.count(p.forwarded, method, pattern) }

// Holding counts the requests with method whose path matches pattern that
// the proxy holds right now (Hang, Delay or Hold): for Delay and Hold, the
// upstream has seen them.
func (p *Proxy) Holding(method, pattern string) int { return p.count(p.holding, method, pattern) }

// GaveUp counts the held requests with method whose path matches pattern
// whose client went away before the reply was relayed: the client's
// timeout fired (or it was cancelled) while the proxy held the request.
func (p *Proxy) GaveUp(method, pattern string) int { return p.count(p.gaveUp, method, pattern) }

// Release relays every reply that Hold holds now; later Hold requests are
// held again until the next Release.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.release)
	p.release = make(chan struct{})
}

func (p *Proxy) count(m map[string]int, method, pattern string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, c := range m {
		mt, pth, _ := strings.Cut(k, " ")
		if ok, _ := path.Match(pattern, pth); ok && mt == method {
			n += c
		}
	}
	return n
}

// Close releases held requests and stops the proxy.
func (p *Proxy) Close() {
	p.once.Do(func() { close(p.done) })
	p.srv.CloseClientConnections()
	p.srv.Close()
	p.hc.CloseIdleConnections()
}

func (p *Proxy) pick(req *http.Request) Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rules {
		if r.left != 0 && r.matches(req) {
			if r.left > 0 {
				r.left--
			}
			return r.Rule
		}
	}
	return Rule{Fault: Pass}
}

func (p *Proxy) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	r := p.pick(req)
	switch r.Fault {
	case ResetBefore:
		reset(w)
		return
	case ServerErrorBefore:
		writeReply(w, http.StatusInternalServerError, "application/json",
			[]byte(`{"date_issued":"2026-01-02T10:11:12.345+0100","errors":[{"scope":"G","error_code":100,"error_name":"SYSTEM_ERROR"}]}`))
		return
	case Hang:
		p.wait(req, -1, nil)
		return
	}

	resp, rbody, err := p.forward(req, body)
	if err != nil {
		writeReply(w, http.StatusBadGateway, "text/plain", []byte("faultproxy: upstream: "+err.Error()))
		return
	}
	switch r.Fault {
	case ResetAfter:
		reset(w)
	case BadGatewayAfter:
		writeReply(w, http.StatusBadGateway, "text/html", []byte("<html><body><h1>502 Bad Gateway</h1></body></html>"))
	case Delay:
		if p.wait(req, r.Delay, nil) {
			relay(w, resp, rbody)
		}
	case Hold:
		p.mu.Lock()
		release := p.release
		p.mu.Unlock()
		if p.wait(req, -1, release) {
			relay(w, resp, rbody)
		}
	case Truncate:
		copyHeader(w.Header(), resp.Header)
		w.Header().Set("Content-Length", strconv.Itoa(len(rbody)))
		w.WriteHeader(resp.StatusCode)
		w.Write(rbody[:len(rbody)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // close without the rest
	case Malformed:
		writeReply(w, http.StatusOK, "application/json;charset=UTF-8", []byte(`{"id":,"result":"FINI`))
	case WrongID:
		relay(w, resp, swapID(rbody, r.ID))
	default:
		relay(w, resp, rbody)
	}
}

// wait holds a request for d (d < 0: until released, or until the client
// or the proxy gives up); it reports whether the reply may go.
func (p *Proxy) wait(req *http.Request, d time.Duration, release <-chan struct{}) bool {
	key := req.Method + " " + req.URL.Path
	p.mu.Lock()
	p.holding[key]++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.holding[key]--
		p.mu.Unlock()
	}()
	var tc <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-tc:
		return true
	case <-release:
		return true
	case <-req.Context().Done():
		p.mu.Lock()
		p.gaveUp[key]++
		p.mu.Unlock()
	case <-p.done:
	}
	return false
}

func (p *Proxy) forward(req *http.Request, body []byte) (*http.Response, []byte, error) {
	out, err := http.NewRequest(req.Method, p.upstream+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	copyHeader(out.Header, req.Header)
	p.mu.Lock()
	p.forwarded[req.Method+" "+req.URL.Path]++
	p.mu.Unlock()
	resp, err := p.hc.Do(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// hopHeaders are not relayed (RFC 9110 7.6.1); the lengths are set anew.
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		if !hopHeaders[k] {
			dst[k] = append([]string(nil), vs...)
		}
	}
}

func relay(w http.ResponseWriter, resp *http.Response, body []byte) {
	copyHeader(w.Header(), resp.Header)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

func writeReply(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// reset closes the client's connection with a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// swapID replaces the top-level "id" of a JSON object; anything else is
// returned unchanged.
func swapID(body []byte, id int64) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return body
	}
	field := "id"
	if _, ok := m["parent_id"]; ok {
		field = "parent_id" // a recurrence child: it belongs to another parent
	}
	if id == 0 {
		n, _ := m[field].(json.Number)
		old, _ := n.Int64()
		id = old + 1000
	}
	m[field] = id
	b, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return b
}
