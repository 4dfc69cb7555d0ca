package main

// The admin listener: Prometheus metrics, liveness and readiness probes,
// pprof and an HTML status page, on an address of its own (loopback by
// default) so that none of it is reachable where the e-shops call.

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/http/pprof"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/store"
)

// probeTTL is how long a readiness result is reused: a probe every second
// from several kubelets must not turn into as many gateway requests.
const probeTTL = 3 * time.Second

// prober checks the store and the gateway, caching the result.
type prober struct {
	st         store.Store
	gatewayURL string

	mu      sync.Mutex
	at      time.Time
	last    probeResult
	probing chan struct{} // closed when the probe in flight ends
}

type probeResult struct {
	Store   string              `json:"store"`   // "ok" or the error
	Gateway string              `json:"gateway"` // "ok" or the error
	Outbox  *store.OutboxCounts `json:"outbox,omitempty"`
	Checked time.Time           `json:"checked"`
}

func (r probeResult) ready() bool { return r.Store == "ok" && r.Gateway == "ok" }

// result returns a probe at most probeTTL old; one probe runs at a time.
func (p *prober) result(ctx context.Context) probeResult {
	p.mu.Lock()
	if !p.at.IsZero() && time.Since(p.at) < probeTTL {
		r := p.last
		p.mu.Unlock()
		return r
	}
	if ch := p.probing; ch != nil {
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		p.mu.Lock()
		r := p.last
		p.mu.Unlock()
		return r
	}
	ch := make(chan struct{})
	p.probing = ch
	p.mu.Unlock()

	r := p.probe(ctx)
	p.mu.Lock()
	p.last, p.at, p.probing = r, time.Now(), nil
	p.mu.Unlock()
	close(ch)
	return r
}

func (p *prober) probe(ctx context.Context) probeResult {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	r := probeResult{Store: "ok", Gateway: "ok", Checked: time.Now()}
	var wg sync.WaitGroup
	wg.Go(func() {
		n, err := p.st.Counts(ctx)
		if err != nil {
			r.Store = "unreachable: " + oneLine(err.Error())
			return
		}
		r.Outbox = &n
	})
	wg.Go(func() {
		if err := pingGateway(ctx, p.gatewayURL); err != nil {
			// The URL is the operator's and carries no credentials
			// (validated), but the message is kept short.
			r.Gateway = "unreachable"
			var ue *url.Error
			if errors.As(err, &ue) {
				r.Gateway = "unreachable: " + oneLine(ue.Err.Error())
			}
		}
	})
	wg.Wait()
	return r
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
}

type adminServer struct {
	cfg     Config
	m       *metrics.Metrics
	p       *prober
	started time.Time
	log     *zap.Logger
}

func newAdminHandler(cfg Config, m *metrics.Metrics, st store.Store, gatewayURL string, log *zap.Logger) http.Handler {
	a := &adminServer{cfg: cfg, m: m, p: &prober{st: st, gatewayURL: gatewayURL}, started: time.Now(), log: log}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{ErrorLog: zap.NewStdLog(log)}))
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`)) //nolint:errcheck // the prober is gone
	})
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /{$}", a.status)
	return mux
}

func (a *adminServer) readyz(w http.ResponseWriter, r *http.Request) {
	res := a.p.result(r.Context())
	w.Header().Set("Content-Type", "application/json")
	status := "ready"
	if !res.ready() {
		status = "not ready"
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(struct { //nolint:errcheck // the prober is gone
		Status string `json:"status"`
		probeResult
	}{status, res})
}

var statusPage = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>soapbridge status</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #999;padding:.3em .6em;text-align:left}.bad{color:#b00}</style>
</head><body>
<h1>soapbridge status</h1>
<p>Up since {{.Started.Format "2006-01-02 15:04:05 MST"}}. <a href="/metrics">metrics</a> · <a href="/readyz">readyz</a> · <a href="/debug/pprof/">pprof</a> · <a href="/report">migration report</a></p>
<h2>Reachability</h2>
<table><tr><th>gateway</th><td{{if ne .Probe.Gateway "ok"}} class="bad"{{end}}>{{.Probe.Gateway}}</td></tr>
<tr><th>store</th><td{{if ne .Probe.Store "ok"}} class="bad"{{end}}>{{.Probe.Store}}</td></tr>
<tr><th>checked</th><td>{{.Probe.Checked.Format "15:04:05"}}</td></tr></table>
<h2>Notification outbox</h2>
{{with .Probe.Outbox}}<table><tr><th>pending</th><td>{{.Pending}}</td></tr><tr><th>delivered</th><td>{{.Delivered}}</td></tr>
<tr><th>dead (given up)</th><td{{if .Dead}} class="bad"{{end}}>{{.Dead}}</td></tr></table>{{else}}<p class="bad">store unreachable</p>{{end}}
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
<h2>Legacy operations called since start</h2>
<p>What each merchant still calls over SOAP (and must port before it can leave it).</p>
{{range .Merchants}}<h3>goid {{.GoID}}</h3>{{if .Usage}}<table><tr><th>operation</th><th>calls</th></tr>
{{range .Usage}}<tr><td>{{.Operation}}</td><td>{{.Calls}}</td></tr>{{end}}</table>{{else}}<p>no calls</p>{{end}}
{{end}}
</body></html>
`))

func (a *adminServer) status(w http.ResponseWriter, r *http.Request) {
	usage := a.m.Usage()
	var ms []adminMerchant
	for _, m := range a.cfg.Merchants {
		am := adminMerchant{GoID: m.GoID, ClientID: m.ClientID, Currency: m.Currency, Notifications: "none",
			AllowedNetworks: m.AllowedNetworks, BasicAuth: m.BasicUser != "", RateLimit: "none", Open: m.Open(),
			Usage: usage[strconv.FormatInt(m.GoID, 10)]}
		if u, err := url.Parse(m.NotificationURL); err == nil && u.Host != "" {
			am.Notifications = u.Scheme + "://" + u.Host // never the path or query: they may carry a token
		}
		if m.RateLimit > 0 {
			am.RateLimit = strconv.FormatFloat(m.RateLimit, 'f', -1, 64) + "/s"
		}
		ms = append(ms, am)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].GoID < ms[j].GoID })
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := statusPage.Execute(w, map[string]any{
		"Started": a.started, "Probe": a.p.result(r.Context()), "Merchants": ms, "Attempts": a.m.Attempts(),
		"Failures": a.m.RecentFailures(),
	}); err != nil {
		a.log.Warn("status page", zap.Error(err))
	}
}
