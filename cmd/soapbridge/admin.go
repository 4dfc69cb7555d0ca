package main

// The admin listener: Prometheus metrics, liveness and readiness probes,
// the outbox counts, pprof and an HTML status page, on an address of its
// own (loopback by default) so that none of it is reachable where the
// e-shops call.
//
// Readiness is the pod's, not the world's: /readyz fails only for what
// another replica would not share (start-up not finished, shutting down,
// this process's connections or file descriptors nearly used up). The
// gateway and the store are shared by every replica: when they fail,
// taking every pod out of the Service only turns SOAP faults, pending pages
// and callbacks into ingress errors. They are probed in the background and
// reported (soapbridge_dependency_up, the status page, /readyz's body) for
// the alerts, never used to decide readiness.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage/report"
	"github.com/legacybridge/soapbridge/store"
)

// Background probes of the shared dependencies: every probeEvery, each
// bounded by probeTimeout (a stalled gateway or database shows as down
// after at most probeEvery + probeTimeout). One probe of each at a time,
// whatever the number of scrapes and kubelet probes.
const (
	probeEvery   = 10 * time.Second
	probeTimeout = 5 * time.Second
)

// resourceHighWater is the share of a local resource (connection cap,
// file descriptor limit) in use from which the replica is not ready: new
// connections should go to another replica before this one refuses them.
const resourceHighWater = 0.95

// Phases of the process, for readiness.
const (
	phaseStarting int32 = iota
	phaseServing
	phaseDraining
)

// readiness decides /readyz and soapbridge_ready from this process's state
// only.
type readiness struct {
	phase atomic.Int32
	conns func() metrics.ConnStats // nil: connections not capped
	files func() (open, max int, err error)
}

func newReadiness(conns func() metrics.ConnStats) *readiness {
	return &readiness{conns: conns, files: openFiles}
}

// serving marks the start-up done: the public listener serves.
func (r *readiness) serving() { r.phase.CompareAndSwap(phaseStarting, phaseServing) }

// draining marks the shutdown: the replica must leave the Services.
func (r *readiness) draining() { r.phase.Store(phaseDraining) }

// isDraining reports whether the shutdown has begun.
func (r *readiness) isDraining() bool { return r.phase.Load() == phaseDraining }

// resourceUse is one local resource as /readyz shows it.
type resourceUse struct {
	Open int `json:"open"`
	Max  int `json:"max"`
}

func (u *resourceUse) full() bool {
	return u != nil && u.Max > 0 && float64(u.Open) >= resourceHighWater*float64(u.Max)
}

type readyState struct {
	Ready       bool         `json:"-"`
	Reason      string       `json:"reason,omitempty"` // why not ready
	Connections *resourceUse `json:"connections,omitempty"`
	OpenFiles   *resourceUse `json:"open_files,omitempty"`
}

func (r *readiness) state() readyState {
	var s readyState
	if r.conns != nil {
		c := r.conns()
		s.Connections = &resourceUse{Open: c.Open, Max: c.Max}
	}
	if open, max, err := r.files(); err == nil {
		s.OpenFiles = &resourceUse{Open: open, Max: max}
	}
	switch {
	case r.phase.Load() == phaseStarting:
		s.Reason = "starting"
	case r.phase.Load() == phaseDraining:
		s.Reason = "shutting down"
	case s.Connections.full():
		s.Reason = fmt.Sprintf("connections: %d open of max_connections %d", s.Connections.Open, s.Connections.Max)
	case s.OpenFiles.full():
		s.Reason = fmt.Sprintf("file descriptors: %d open of a limit of %d", s.OpenFiles.Open, s.OpenFiles.Max)
	default:
		s.Ready = true
	}
	return s
}

func (r *readiness) ready() bool { return r.state().Ready }

// openFiles counts this process's open file descriptors and reads their
// soft limit (Linux /proc; elsewhere an error, and the check is skipped).
func openFiles() (open, max int, err error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, err
	}
	limits, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(limits), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if n, err := strconv.Atoi(f[0]); err == nil { // "unlimited" is no limit
					max = n
				}
			}
		}
	}
	return len(fds), max, nil
}

// connStatsOf returns the connection counts of a capped listener (nil for
// an uncapped one).
func connStatsOf(ln net.Listener) func() metrics.ConnStats {
	if c, ok := ln.(*capListener); ok {
		return c.stats
	}
	return nil
}

// dependency is the last probe of one dependency.
type dependency struct {
	Up      bool      `json:"up"`
	Error   string    `json:"error,omitempty"`
	Checked time.Time `json:"checked"`
}

// probes checks the gateway and the store in the background and feeds the
// results to the metrics; the store probe also reads the backlogs the
// store-backed gauges show.
type probes struct {
	st         store.Store
	gatewayURL string
	m          *metrics.Metrics
	log        *zap.Logger
	client     *http.Client

	// daysOf, when set, is read with the store's probe: the usage
	// record's days the status page charts.
	daysOf report.DayStore

	mu      sync.Mutex
	gateway *dependency // nil until probed
	store   *dependency
	days    []store.UsageDayCount // nil until read
}

func newProbes(st store.Store, gatewayURL string, m *metrics.Metrics, log *zap.Logger) *probes {
	return &probes{st: st, gatewayURL: gatewayURL, m: m, log: log, client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// run probes both dependencies at once and then every probeEvery, each in
// its own loop (a stalled gateway does not delay the store's probe), until
// ctx ends.
func (p *probes) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, probe := range []func(context.Context){p.probeGateway, p.probeStore} {
		wg.Go(func() {
			for {
				pctx, cancel := context.WithTimeout(ctx, probeTimeout)
				probe(pctx)
				cancel()
				select {
				case <-ctx.Done():
					return
				case <-time.After(probeEvery):
				}
			}
		})
	}
	wg.Wait()
}

// probeGateway sends a GET to the gateway's REST root, without
// credentials: any HTTP answer shows the gateway reachable, except 502,
// 503 and 504, with which a gateway's front says the service behind it is
// not available.
func (p *probes) probeGateway(ctx context.Context) {
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.gatewayURL, nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "soapbridge-probe")
		resp, err := p.client.Do(req)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) { // the URL is the operator's; the message is kept short
				err = ue.Err
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("no answer within %s", probeTimeout)
			}
			return err
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // read so the connection is kept for the next probe
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	}()
	p.record(metrics.DependencyGateway, &p.gateway, err)
}

// probeStore reads the outbox and ledger backlogs: a ping that also keeps
// the store-backed gauges fresh.
func (p *probes) probeStore(ctx context.Context) {
	outbox, err := p.st.Counts(ctx)
	var ledger store.LedgerCounts
	if err == nil {
		ledger, err = p.st.LedgerCounts(ctx)
	}
	if err == nil {
		p.m.SetStoreCounts(outbox, ledger)
	} else if ctx.Err() != nil {
		err = fmt.Errorf("no answer within %s", probeTimeout)
	}
	p.record(metrics.DependencyStore, &p.store, err)
	if err == nil && p.daysOf != nil {
		if days, err := p.daysOf.UsageDays(ctx); err == nil {
			p.mu.Lock()
			p.days = days
			p.mu.Unlock()
		}
	}
}

// lastDays are the usage record's days as last read (nil: not yet).
func (p *probes) lastDays() []store.UsageDayCount {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.days
}

// record keeps a probe's result, feeds it to the metrics and logs a change.
func (p *probes) record(name string, last **dependency, err error) {
	d := &dependency{Up: err == nil, Checked: time.Now()}
	if err != nil {
		d.Error = oneLine(err.Error())
	}
	p.mu.Lock()
	prev := *last
	*last = d
	p.mu.Unlock()
	p.m.SetDependencyUp(name, d.Up)
	switch {
	case !d.Up && (prev == nil || prev.Up):
		p.log.Warn(name+" unreachable (readiness unaffected: every replica shares it)", zap.String("error", d.Error))
	case d.Up && prev != nil && !prev.Up:
		p.log.Info(name + " reachable again")
	}
}

// results returns the last probes (nil: not probed yet).
func (p *probes) results() (gateway, store *dependency) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gateway, p.store
}

// adminMerchant is what the status page shows of a merchant: never a
// secret (no client secret, secure key or Basic password).
type adminMerchant struct {
	GoID            int64
	ClientID        string
	Currency        string
	Notifications   string // host of the notification URL, or "none"
	AllowedNetworks string
	BasicAuth       bool
	RateLimit       string
	Open            bool
	Usage           []metrics.OperationUse
	Refusals        []metrics.Refusal // the last, this replica
	Chart           template.HTML     // the last 30 days (all replicas), as last read from the store
}

type adminServer struct {
	// merchants are those in force (a reload changes them).
	merchants func() []Merchant
	m         *metrics.Metrics
	st        store.Store
	p         *probes
	ready     *readiness
	started   time.Time
	log       *zap.Logger
}

func newAdminHandler(merchants func() []Merchant, m *metrics.Metrics, st store.Store, p *probes, rd *readiness, log *zap.Logger) http.Handler {
	a := &adminServer{merchants: merchants, m: m, st: st, p: p, ready: rd, started: time.Now(), log: log}
	m.SetReadiness(rd.ready)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{ErrorLog: zap.NewStdLog(log)}))
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`)) //nolint:errcheck // the prober is gone
	})
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.HandleFunc("GET /outbox", a.outbox)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /{$}", a.status)
	return mux
}

func (a *adminServer) readyz(w http.ResponseWriter, _ *http.Request) {
	s := a.ready.state()
	gw, st := a.p.results()
	w.Header().Set("Content-Type", "application/json")
	status := "ready"
	if !s.Ready {
		status = "not ready"
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(struct { //nolint:errcheck // the prober is gone
		Status string `json:"status"`
		readyState
		// Reported, not required: every replica shares them.
		Gateway *dependency `json:"gateway"`
		Store   *dependency `json:"store"`
	}{status, s, gw, st})
}

// outboxTimeout bounds the store read of GET /outbox.
const outboxTimeout = 3 * time.Second

// outbox shows the shared outbox by state as JSON (business volume, so
// on the admin listener only); dead notifications are those the e-shop
// never took within the retry period.
func (a *adminServer) outbox(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), outboxTimeout)
	defer cancel()
	n, err := a.st.Counts(ctx)
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		a.log.Warn("outbox counts failed", zap.Error(err))
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"store not available"}` + "\n")) //nolint:errcheck // the client is gone
		return
	}
	json.NewEncoder(w).Encode(map[string]int{"pending": n.Pending, "delivered": n.Delivered, "dead": n.Dead}) //nolint:errcheck // the client is gone
}

var statusPage = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>soapbridge status</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #999;padding:.3em .6em;text-align:left}.bad{color:#b00}</style>
</head><body>
<h1>soapbridge status</h1>
<p>Up since {{.Started.Format "2006-01-02 15:04:05 MST"}}. <a href="/metrics">metrics</a> · <a href="/readyz">readyz</a> · <a href="/outbox">outbox</a> · <a href="/debug/pprof/">pprof</a> · <a href="/report">migration report</a></p>
<h2>This replica</h2>
<table><tr><th>ready</th><td{{if not .Ready.Ready}} class="bad"{{end}}>{{if .Ready.Ready}}yes{{else}}no: {{.Ready.Reason}}{{end}}</td></tr>
{{with .Ready.Connections}}<tr><th>connections</th><td>{{.Open}} of {{.Max}}</td></tr>{{end}}
{{with .Ready.OpenFiles}}<tr><th>file descriptors</th><td>{{.Open}} of {{.Max}}</td></tr>{{end}}</table>
<h2>Dependencies (shared by every replica: reported, not used for readiness)</h2>
<table>{{range .Dependencies}}<tr><th>{{.Name}}</th>{{with .D}}<td{{if not .Up}} class="bad"{{end}}>{{if .Up}}ok{{else}}unreachable: {{.Error}}{{end}}</td>
<td>checked {{.Checked.Format "15:04:05"}}</td>{{else}}<td>not probed yet</td><td></td>{{end}}</tr>
{{end}}</table>
<h2>Notification outbox</h2>
{{if .OutboxRead}}{{with .Outbox}}<table><tr><th>pending</th><td>{{.Pending}}</td></tr><tr><th>delivered</th><td>{{.Delivered}}</td></tr>
<tr><th>dead (given up)</th><td{{if .Dead}} class="bad"{{end}}>{{.Dead}}</td></tr></table>{{end}}
<p>As read from the store at {{.OutboxAt.Format "15:04:05"}}.</p>{{else}}<p class="bad">not read from the store yet</p>{{end}}
<p>Delivery attempts since start: {{range .Attempts}}{{.Operation}} {{.Calls}} · {{end}}</p>
<h3>Recent failed deliveries (this replica)</h3>
{{if .Failures}}<table><tr><th>time</th><th>goid</th><th>payment</th><th>target</th><th>status</th><th>request id</th></tr>
{{range .Failures}}<tr><td>{{.At.Format "2006-01-02 15:04:05"}}</td><td>{{.GoID}}</td><td>{{.PaymentID}}</td><td>{{.Target}}</td>
<td{{if .Dead}} class="bad"{{end}}>{{.Status}}{{if .Dead}} (given up){{end}}</td><td>{{.RequestID}}</td></tr>
{{end}}</table>{{else}}<p>none since start</p>{{end}}
<h2>Merchants</h2>
<table><tr><th>goid</th><th>client id</th><th>currency</th><th>notifications to</th><th>allowed networks</th><th>Basic auth</th><th>rate limit</th></tr>
{{range .Merchants}}<tr><td>{{.GoID}}</td><td>{{.ClientID}}</td><td>{{.Currency}}</td><td>{{.Notifications}}</td>
<td{{if .Open}} class="bad"{{end}}>{{if .AllowedNetworks}}{{.AllowedNetworks}}{{else}}anyone{{end}}</td><td>{{if .BasicAuth}}required{{else}}no{{end}}</td><td>{{.RateLimit}}</td></tr>
{{end}}</table>
<h2>Key rotations under way</h2>
{{if .Overlaps}}<p>Merchants whose previous secure key or client secret is still accepted beside the current one.</p>
<table><tr><th>goid</th><th>previous</th><th>accepted until</th><th>previous key last accepted (this replica)</th></tr>
{{range .Overlaps}}<tr><td>{{.GoID}}</td><td>{{if .SecureKey}}secure key{{end}}{{if and .SecureKey .ClientSecret}}, {{end}}{{if .ClientSecret}}client secret{{end}}</td>
<td>{{.EndsAt.UTC.Format "2006-01-02 15:04:05 UTC"}}{{if .Default}} <span class="bad">(previous_until not set: the default bound)</span>{{end}}</td>
<td>{{if .PreviousKeyUsed.IsZero}}not since start{{else}}{{.PreviousKeyUsed.UTC.Format "2006-01-02 15:04:05 UTC"}}{{end}}</td></tr>
{{end}}</table>{{else}}<p>none: every merchant accepts its current key and secret only</p>{{end}}
<h2>Legacy operations called since start</h2>
<p>What each merchant still calls over SOAP and the legacy browser flows (and must port before it can leave them), every result counted, as the migration report counts them.</p>
{{range .Merchants}}<h3>goid {{.GoID}}</h3>{{with .Chart}}<p>Last 30 days, every replica (grey: legacy calls answered, red: refused): {{.}}</p>{{end}}{{if .Usage}}<table><tr><th>operation</th><th>calls</th></tr>
{{range .Usage}}<tr><td>{{.Operation}}</td><td>{{.Calls}}</td></tr>{{end}}</table>{{else}}<p>no calls</p>{{end}}
{{end}}
<h2>Last refusals (this replica)</h2>
<p>Why each merchant's last calls were refused, most recent first; the log line of the request id says more (docs/operations.md, "Why was it refused").</p>
{{range .Merchants}}<h3>goid {{.GoID}}</h3>{{if .Refusals}}<table><tr><th>time</th><th>operation</th><th>reason</th><th>field</th><th>request id</th></tr>
{{range .Refusals}}<tr><td>{{.At.Format "2006-01-02 15:04:05"}}</td><td>{{.Operation}}</td><td class="bad">{{.Reason}}</td><td>{{.Field}}</td><td>{{.RequestID}}</td></tr>
{{end}}</table>{{else}}<p>none since start</p>{{end}}
{{end}}
</body></html>
`))

// status renders the status page from memory only (the probes' last
// results), so that it answers at once whatever the dependencies do.
func (a *adminServer) status(w http.ResponseWriter, _ *http.Request) {
	calls := a.m.Usage()
	days := a.p.lastDays()
	var ms []adminMerchant
	for _, m := range a.merchants() {
		am := adminMerchant{GoID: m.GoID, ClientID: m.ClientID, Currency: m.Currency, Notifications: "none",
			AllowedNetworks: m.AllowedNetworks, BasicAuth: m.BasicUser != "", RateLimit: "none", Open: m.Open(),
			Usage: calls[strconv.FormatInt(m.GoID, 10)], Refusals: a.m.LastRefusals(m.GoID)}
		if days != nil {
			am.Chart = report.Chart(report.LastDays(days, m.GoID, time.Now()))
		}
		if u, err := url.Parse(m.NotificationURL); err == nil && u.Host != "" {
			am.Notifications = u.Scheme + "://" + u.Host // never the path or query: they may carry a token
		}
		if m.RateLimit > 0 {
			am.RateLimit = strconv.FormatFloat(m.RateLimit, 'f', -1, 64) + "/s"
		}
		ms = append(ms, am)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].GoID < ms[j].GoID })
	gw, st := a.p.results()
	outbox, at, read := a.m.StoreCounts()
	type dep struct {
		Name string
		D    *dependency
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := statusPage.Execute(w, map[string]any{
		"Started": a.started, "Ready": a.ready.state(),
		"Dependencies": []dep{{"gateway", gw}, {"store", st}},
		"Outbox":       outbox, "OutboxAt": at, "OutboxRead": read,
		"Merchants": ms, "Attempts": a.m.Attempts(), "Failures": a.m.RecentFailures(),
		"Overlaps": a.m.KeyOverlapList(),
	}); err != nil {
		a.log.Warn("status page", zap.Error(err))
	}
}

// The admin listener answers only under its own names, against DNS
// rebinding: a page an operator opens in a browser that can reach the
// listener may point a name of its own (evil.example) at the listener's
// address and then read /report, the status page (client ids, notification
// hosts, allowed networks) and /debug/pprof as same-origin responses. Such
// a request carries the page's name in its Host header, so the listener
// answers only Host headers that are
//   - an IP address, any (with any port): no DNS name, nothing to rebind; a
//     page whose origin is an IP address is another origin than the
//     rebinding page's. This keeps what reaches a pod by its address
//     working: the kubelet's probes and Prometheus's scrapes send the pod IP
//     as Host, kubectl port-forward 127.0.0.1, Docker's published ports the
//     host's address;
//   - localhost (any port: port-forwards map other ports);
//   - the host name of admin_listen, if it is one;
//   - a name listed in admin_hosts (an operator's DNS name or Service name
//     for the listener).
// Anything else is 421 Misdirected Request with a message naming the
// setting, before any handler runs.

// adminHostNames parses admin_hosts: host names without scheme or port,
// separated by commas or spaces, lower-cased.
func adminHostNames(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		h := strings.TrimSuffix(strings.ToLower(f), ".")
		if h == "" || strings.ContainsAny(h, ":/[]@?#%") {
			return nil, fmt.Errorf("%q is not a host name (give names only: no scheme, port or path; IP addresses are always accepted)", f)
		}
		out = append(out, h)
	}
	return out, nil
}

// adminHosts decides which Host headers the admin listener answers.
type adminHosts map[string]bool

// newAdminHosts accepts localhost, the host name of listen (when it is a
// name) and names (parsed by adminHostNames), besides every IP address.
func newAdminHosts(listen string, names []string) adminHosts {
	h := adminHosts{"localhost": true}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		h[strings.TrimSuffix(strings.ToLower(host), ".")] = true
	}
	for _, n := range names {
		h[n] = true
	}
	return h
}

// allows reports whether the admin listener answers a request whose Host
// header is host.
func (h adminHosts) allows(host string) bool {
	if host == "" {
		// HTTP/1.0 without Host (HAProxy's default httpchk): no name, so
		// nothing a browser page could have rebound.
		return true
	}
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
	}
	if name == "" {
		return false
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	return h[strings.TrimSuffix(strings.ToLower(name), ".")]
}

// guard answers 421 to a request under any other Host than h allows.
func (h adminHosts) guard(next http.Handler, log *zap.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.allows(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		host := r.Host
		if len(host) > 100 {
			host = host[:100] + "…"
		}
		log.Debug("admin request refused: Host not the listener's", zap.String("host", host))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusMisdirectedRequest)
		fmt.Fprintf(w, "admin listener: Host %q is not one of this listener's names; it answers under an IP address, localhost, "+
			"the host of admin_listen or a name listed in admin_hosts (SOAPBRIDGE_ADMIN_HOSTS), so that no other web page can read it\n", host)
	})
}

// keyOverlaps are the core's merchants in key overlap, for the metrics and
// the status page.
func keyOverlaps(os []operations.KeyOverlap) []metrics.KeyOverlap {
	out := make([]metrics.KeyOverlap, len(os))
	for i, o := range os {
		out[i] = metrics.KeyOverlap(o)
	}
	return out
}

// adminListener is the admin listener, bound early in the start (a
// taken address fails the start before anything is written) and served
// by startAdmin once the bridge is built.
type adminListener struct {
	ln    net.Listener
	names []string // admin_hosts
}

// listenAdmin binds the admin listener of cfg; nil when it is off.
func listenAdmin(cfg Config) (*adminListener, error) {
	if cfg.AdminListen == "" || cfg.AdminListen == "off" {
		return nil, nil
	}
	names, err := adminHostNames(cfg.AdminHosts)
	if err != nil { // validate refused it already
		return nil, fmt.Errorf("admin hosts: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		return nil, fmt.Errorf("admin listener: listen %s: %w (set admin_listen / SOAPBRIDGE_ADMIN_LISTEN, or off)", cfg.AdminListen, err)
	}
	return &adminListener{ln: ln, names: names}, nil
}

// startAdmin serves the admin listener and runs the dependency probes
// until the returned stop is called.
func startAdmin(cfg Config, al *adminListener, merchants func() []Merchant, met *metrics.Metrics, st store.Store, gatewayURL string, rd *readiness, pages *reportPages, log *zap.Logger) func() {
	ln, names := al.ln, al.names
	p := newProbes(st, gatewayURL, met, log)
	if pages != nil {
		p.daysOf, _ = pages.st.(report.DayStore)
	}
	ctx, stopProbes := context.WithCancel(context.Background())
	var probing sync.WaitGroup
	probing.Go(func() { p.run(ctx) })
	srv := &http.Server{
		Handler:           newAdminHosts(cfg.AdminListen, names).guard(withReportPages(newAdminHandler(merchants, met, st, p, rd, log), pages), log),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          zap.NewStdLog(log),
	}
	go srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed at stop
	log.Info("admin listening", zap.String("addr", ln.Addr().String()))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx) //nolint:errcheck // best effort at exit
		stopProbes()
		probing.Wait()
	}
}
