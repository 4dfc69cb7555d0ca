package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// FaultKind is what an injected fault does to a matching call. Kinds that
// end in "_after" let the gateway act first (a POST is performed: money
// moves, state changes) and then lose or spoil the reply; the others fail
// before the gateway acts. Acts tells which, for a money-safety matrix.
type FaultKind string

const (
	FaultSlow           FaultKind = "slow"            // wait Delay, then act and answer normally
	FaultFail           FaultKind = "fail"            // answer Status (5xx, default 500) with an error list; no act
	FaultReset          FaultKind = "reset"           // close the connection (TCP reset) at once; no act
	FaultResetAfter     FaultKind = "reset_after"     // act, then reset without a reply
	FaultTruncateAfter  FaultKind = "truncate_after"  // act, then send half the reply under the full Content-Length and close
	FaultMalformedAfter FaultKind = "malformed_after" // act, then answer 200 with a body that is not JSON
	Fault502After       FaultKind = "502_after"       // act, then answer 502 with a proxy's HTML page
	FaultDelayAfter     FaultKind = "delay_after"     // act, then wait Delay before the (normal) reply
	FaultWrongIDAfter   FaultKind = "wrong_id_after"  // act, then answer with "id" of another payment (id+1)
)

var faultKinds = map[FaultKind]bool{FaultSlow: true, FaultFail: true, FaultReset: true, FaultResetAfter: true, FaultTruncateAfter: true,
	FaultMalformedAfter: true, Fault502After: true, FaultDelayAfter: true, FaultWrongIDAfter: true}

// Acts reports whether the gateway performs the call before the fault
// shows: true for slow and every *_after kind.
func (k FaultKind) Acts() bool { return k == FaultSlow || strings.HasSuffix(string(k), "_after") }

// Fault makes the next Times calls that match Method and Path misbehave.
type Fault struct {
	Method string    `json:"method,omitempty"` // GET, POST, …; empty: any
	Path   string    `json:"path"`             // path.Match pattern on the URL path, e.g. /api/payments/payment/*/refund
	Kind   FaultKind `json:"kind"`
	Times  int       `json:"times,omitempty"`  // matching calls affected; 0 means 1
	Delay  Duration  `json:"delay,omitempty"`  // slow, delay_after: "2s", "1500ms"
	Status int       `json:"status,omitempty"` // fail: the 5xx status
}

// Duration is a time.Duration written as "1.5s" in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("delay must be a duration string such as \"2s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("delay %q is not a non-negative duration", s)
	}
	*d = Duration(v)
	return nil
}

// check validates f and fills defaults.
func (f *Fault) check() error {
	if !faultKinds[f.Kind] {
		return fmt.Errorf("kind %q is not one of slow, fail, reset, reset_after, truncate_after, malformed_after, 502_after, delay_after, wrong_id_after", f.Kind)
	}
	if f.Path == "" || !strings.HasPrefix(f.Path, "/") {
		return fmt.Errorf("path must be an absolute path pattern such as /api/payments/payment/*/refund")
	}
	if _, err := path.Match(f.Path, "/"); err != nil {
		return fmt.Errorf("path: %w", err)
	}
	if strings.HasPrefix(f.Path, "/sandbox/") {
		return fmt.Errorf("the /sandbox/ helpers cannot be made to fail")
	}
	f.Method = strings.ToUpper(f.Method)
	if f.Times <= 0 {
		f.Times = 1
	}
	if f.Kind == FaultFail {
		if f.Status == 0 {
			f.Status = http.StatusInternalServerError
		}
		if f.Status < 500 || f.Status > 599 {
			return fmt.Errorf("status must be a 5xx code")
		}
	}
	return nil
}

// InjectFault arms f; faults are matched in the order they were added.
func (g *Gateway) InjectFault(f Fault) error {
	if err := f.check(); err != nil {
		return err
	}
	g.mu.Lock()
	g.faults = append(g.faults, &f)
	g.mu.Unlock()
	return nil
}

// ClearFaults disarms every fault.
func (g *Gateway) ClearFaults() {
	g.mu.Lock()
	g.faults = nil
	g.mu.Unlock()
}

// Faults lists the armed faults with the calls each has left.
func (g *Gateway) Faults() []Fault {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Fault, 0, len(g.faults))
	for _, f := range g.faults {
		out = append(out, *f)
	}
	return out
}

// takeFault returns the first armed fault matching the call and uses one of
// its calls up.
func (g *Gateway) takeFault(method, p string) *Fault {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, f := range g.faults {
		if f.Method != "" && f.Method != method {
			continue
		}
		if ok, _ := path.Match(f.Path, p); !ok {
			continue
		}
		use := *f
		if f.Times--; f.Times <= 0 {
			g.faults = append(g.faults[:i:i], g.faults[i+1:]...)
		}
		return &use
	}
	return nil
}

// Stats counts the REST POSTs the gateway received and the ones it performed
// (answered 2xx), by path: "no POST seen twice" is Posts[path] == 1.
type Stats struct {
	Posts map[string]int `json:"posts"`
	Acted map[string]int `json:"acted"`
}

// Stats returns a copy of the counters.
func (g *Gateway) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := Stats{Posts: map[string]int{}, Acted: map[string]int{}}
	for k, v := range g.posts {
		s.Posts[k] = v
	}
	for k, v := range g.acted {
		s.Acted[k] = v
	}
	return s
}

// serveFault runs the call under fault f.
func (g *Gateway) serveFault(w http.ResponseWriter, r *http.Request, f *Fault) {
	switch f.Kind {
	case FaultSlow:
		time.Sleep(time.Duration(f.Delay))
		g.serve(w, r)
		return
	case FaultFail:
		g.writeError(w, refuse(f.Status, globalErr(codeSystem, "the gateway failed (sandbox fault)")))
		return
	case FaultReset:
		reset(w)
		return
	}
	rec := newRecorder()
	g.serve(rec, r)
	switch f.Kind {
	case FaultResetAfter:
		reset(w)
	case FaultTruncateAfter:
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
			rec.status, http.StatusText(rec.status), rec.header.Get("Content-Type"), rec.body.Len())
		bw.Write(rec.body.Bytes()[:rec.body.Len()/2])
		_ = bw.Flush()
		_ = conn.Close()
	case FaultMalformedAfter:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"id":` + "\n<html>"))
	case Fault502After:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html><body><h1>502 Bad Gateway</h1></body></html>\n"))
	case FaultDelayAfter:
		time.Sleep(time.Duration(f.Delay))
		rec.copyTo(w)
	case FaultWrongIDAfter:
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(rec.body.Bytes()))
		dec.UseNumber()
		if dec.Decode(&obj) == nil {
			if n, ok := obj["id"].(json.Number); ok {
				id, _ := strconv.ParseInt(n.String(), 10, 64)
				obj["id"] = id + 1
				b, _ := json.Marshal(obj)
				rec.body.Reset()
				rec.body.Write(append(b, '\n'))
				rec.header.Del("Content-Length")
			}
		}
		rec.copyTo(w)
	}
}

// reset closes the client's connection with a TCP reset, no reply.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// recorder keeps a reply so that a fault can lose or spoil it after the
// gateway acted.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
func (r *recorder) Flush() {}

func (r *recorder) copyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}

// statusWriter notes the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// --- HTTP helpers ---

// handleFaultAdd: POST /sandbox/faults, a Fault as JSON.
func (g *Gateway) handleFaultAdd(c echo.Context) error {
	var f Fault
	body, err := readBody(c)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return refuse(http.StatusBadRequest, globalErr(codeInvalidRequest, "fault: "+err.Error()))
	}
	if err := g.InjectFault(f); err != nil {
		return refuse(http.StatusBadRequest, globalErr(codeInvalidRequest, "fault: "+err.Error()))
	}
	return c.JSON(http.StatusOK, map[string]any{"faults": g.Faults()})
}

func (g *Gateway) handleFaultList(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"faults": g.Faults()})
}

func (g *Gateway) handleFaultClear(c echo.Context) error {
	g.ClearFaults()
	return c.JSON(http.StatusOK, map[string]any{"faults": []Fault{}})
}

func (g *Gateway) handleStats(c echo.Context) error { return c.JSON(http.StatusOK, g.Stats()) }
