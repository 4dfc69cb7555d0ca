package main

// The usage record and its migration report: the recorder's wiring, the
// `report` subcommand and the admin listener's /report pages.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/operations/usage/report"
	"github.com/legacybridge/soapbridge/store"
)

const cmdReport = "report"

// usageStore is the store as the usage record and its report use it.
type usageStore interface {
	usage.Store
	report.Store
}

// usageOf is the usage part of the store Open returned (before any
// wrapper), or an error when the store keeps none.
func usageOf(st store.Store) (usageStore, error) {
	us, ok := st.(usageStore)
	if !ok {
		return nil, errors.New("the store keeps no usage record")
	}
	return us, nil
}

// noUsage is the usage record of a database that has none yet.
type noUsage struct{}

func (noUsage) Usage(context.Context, ...int64) ([]store.UsageCount, error)   { return nil, nil }
func (noUsage) UsageMerchants(context.Context) ([]store.UsageMerchant, error) { return nil, nil }

// startUsage starts the usage record of cfg on us: nil (recording
// nothing) when usage_flush_interval is 0. stop flushes the last sums; it
// must run after the server has drained and before the store closes.
func startUsage(cfg Config, us usageStore, known goids, log *zap.Logger) (rec *usage.Recorder, stop func(), err error) {
	if cfg.UsageFlushInterval == 0 {
		log.Info("usage record off (usage_flush_interval 0): soapbridge report shows nothing new")
		return nil, func() {}, nil
	}
	rec, err = usage.New(usage.Config{Store: us, Every: cfg.UsageFlushInterval, Logger: log, Known: known.has})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rec.Run(ctx); close(done) }()
	return rec, func() { cancel(); <-done }, nil
}

func configuredGoIDs(cfg Config) []int64 { return goidsOf(cfg.Merchants) }

// goids are the goids of the configured merchants: what the usage record
// keeps and the report lists. The bridge's are the snapshot's in force
// (snapshots), replaced whole with it by a reload.
type goids interface {
	list() []int64
	has(ctx context.Context, goid int64) bool
}

// goidSet is a fixed set of goids.
type goidSet []int64

func newGoidSet(goids []int64) goidSet { return goidSet(goids) }

func (s goidSet) list() []int64                       { return s }
func (s goidSet) has(_ context.Context, g int64) bool { return slices.Contains(s, g) }

// exitUsage marks an error of the report's input (exit status 2).
type exitUsage struct{ error }

func (e exitUsage) Unwrap() error { return e.error }

// exitCode is the process's exit status for an error of run.
func exitCode(err error) int {
	var eu exitUsage
	if errors.As(err, &eu) {
		return 2
	}
	return 1
}

// runReport prints the migration report from the store of the
// configuration args (after the report's own flags) describe.
func runReport(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("soapbridge report", flag.ContinueOnError)
	fs.SetOutput(stdout)
	goid := fs.Int64("goid", 0, "report this merchant only (exit 2 when it is neither configured nor recorded)")
	since := fs.Duration("since", 0, "leave out what was last used longer ago than this (e.g. 720h); counts stay totals")
	format := fs.String("format", report.FormatText, "text, json or html")
	own, rest := splitArgs(args, "goid", "since", "format")
	if err := fs.Parse(own); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "Usage: soapbridge report [-goid N] [-since DURATION] [-format text|json|html] [configuration flags]")
			return nil
		}
		return exitUsage{fmt.Errorf("report: %w", err)}
	}
	switch *format {
	case report.FormatText, report.FormatJSON, report.FormatHTML:
	default:
		return exitUsage{fmt.Errorf("report: -format %q: text, json or html", *format)}
	}
	if *since < 0 || *goid < 0 {
		return exitUsage{errors.New("report: -since and -goid must not be negative")}
	}
	cfg, err := loadConfig(rest, getenv)
	if answered(err, stdout) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Read-only, like check: the schema is as it is (migrate applies), and
	// a database the bridge never ran on (or a missing SQLite file) has no
	// record yet: the configured merchants, with nothing used.
	state, _, err := store.Inspect(ctx, cfg.Database)
	if err != nil {
		return fmt.Errorf("report: cannot read the usage record: %s", oneLine(err.Error()))
	}
	var us report.Store = noUsage{}
	if state.Version >= store.UsageSchemaVersion {
		st, err := store.OpenWith(ctx, cfg.Database, store.Options{NoMigrate: true})
		if err != nil {
			return fmt.Errorf("report: cannot read the usage record: %s", oneLine(err.Error()))
		}
		defer st.Close()
		if us, err = usageOf(st); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if state.Version < store.UsageDaysSchemaVersion {
			us = struct{ report.Store }{us} // no days recorded yet: no charts
		}
	} else if *format == report.FormatText {
		fmt.Fprintf(stdout, "No usage record in %s yet (schema: %s): the bridge keeps one once it runs on this database.\n",
			store.Redact(cfg.Database), state)
	}
	r, err := report.Build(ctx, us, report.Options{Configured: configuredGoIDs(cfg), GoID: *goid, Since: *since})
	if errors.Is(err, report.ErrUnknownMerchant) {
		return exitUsage{fmt.Errorf("report: %w", err)}
	}
	if err != nil {
		return fmt.Errorf("report: cannot read the usage record from %s: %w", store.Redact(cfg.Database), err)
	}
	return r.Write(stdout, *format, false)
}

// splitArgs separates the flags named in own (-name value, -name=value,
// with one or two dashes) from the rest, keeping each side's order.
func splitArgs(args []string, own ...string) (mine, rest []string) {
	isOwn := func(a string) (bool, bool) {
		name := strings.TrimLeft(a, "-")
		if name == a || name == "" {
			return false, false
		}
		name, _, hasValue := strings.Cut(name, "=")
		for _, o := range own {
			if name == o {
				return true, hasValue
			}
		}
		return false, false
	}
	for i := 0; i < len(args); i++ {
		if ok, hasValue := isOwn(args[i]); ok {
			mine = append(mine, args[i])
			if !hasValue && i+1 < len(args) {
				i++
				mine = append(mine, args[i])
			}
			continue
		}
		rest = append(rest, args[i])
	}
	return mine, rest
}

// reportPages serves the report on the admin listener. When the store
// cannot be read, the last report made (of everyone, or of the merchant
// asked for) is served, marked stale.
type reportPages struct {
	st         report.Store
	configured goids
	log        *zap.Logger

	mu     sync.Mutex
	all    *report.Report           // the last full report made
	byGoID map[int64]*report.Report // the last one-merchant reports (bounded by the merchants known)
}

// reportTimeout bounds one report's reads, so that a stalled database
// shows the stale report instead of hanging the page.
const reportTimeout = 5 * time.Second

func (p *reportPages) build(ctx context.Context, goid int64) (*report.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	r, err := report.Build(ctx, p.st, report.Options{Configured: p.configured.list(), GoID: goid})
	if err != nil {
		if !errors.Is(err, report.ErrUnknownMerchant) {
			p.log.Warn("report: the usage record cannot be read", zap.Error(err))
		}
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if goid == 0 {
		p.all = r
	} else {
		if p.byGoID == nil {
			p.byGoID = map[int64]*report.Report{}
		}
		p.byGoID[goid] = r
	}
	return r, nil
}

// stale is the last report of goid (0: everyone) marked stale, or nil.
func (p *reportPages) stale(goid int64, cause error) *report.Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.all
	if goid != 0 {
		last = p.byGoID[goid]
		if last == nil && p.all != nil && p.all.Find(goid) != nil {
			one := *p.all
			one.Merchants = []report.Merchant{*p.all.Find(goid)}
			last = &one
		}
	}
	if last == nil {
		return nil
	}
	s := *last
	s.Stale, s.StaleReason = true, oneLine(cause.Error())
	return &s
}

// withReportPages adds GET /report and GET /report.json to the admin
// handler h.
func withReportPages(h http.Handler, p *reportPages) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET /report", p.serveHTML)
	mux.HandleFunc("GET /report.json", p.serveJSON)
	return mux
}

// serveHTML serves GET /report: every merchant, each linked from the index.
func (p *reportPages) serveHTML(w http.ResponseWriter, r *http.Request) {
	rep, err := p.build(r.Context(), 0)
	if err != nil {
		if rep = p.stale(0, err); rep == nil {
			http.Error(w, "the usage record cannot be read now and no earlier report was made: "+oneLine(err.Error()), http.StatusServiceUnavailable)
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := rep.WriteHTML(w, true); err != nil {
		p.log.Warn("report page", zap.Error(err))
	}
}

// serveJSON serves GET /report.json?goid=N (every merchant without goid).
func (p *reportPages) serveJSON(w http.ResponseWriter, r *http.Request) {
	jsonError := func(status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"error": msg}) //nolint:errcheck // the client is gone
	}
	var goid int64
	if s := r.URL.Query().Get("goid"); s != "" {
		g, err := strconv.ParseInt(s, 10, 64)
		if err != nil || g <= 0 {
			jsonError(http.StatusBadRequest, "goid must be a positive number")
			return
		}
		goid = g
	}
	rep, err := p.build(r.Context(), goid)
	if errors.Is(err, report.ErrUnknownMerchant) {
		jsonError(http.StatusNotFound, err.Error())
		return
	}
	if err != nil {
		if rep = p.stale(goid, err); rep == nil {
			jsonError(http.StatusServiceUnavailable, "the usage record cannot be read now and no earlier report was made: "+oneLine(err.Error()))
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := rep.WriteJSON(w); err != nil {
		p.log.Warn("report JSON", zap.Error(err))
	}
}
