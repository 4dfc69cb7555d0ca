// Command soapbridge serves the retired EPaymentServiceV2 SOAP interface to
// legacy e-shops and translates it to the payment gateway's REST interface.
// Without a gateway URL it starts an embedded sandbox gateway, so that
// `go run ./cmd/soapbridge` works offline.
//
// This package is configuration and wiring only; see config.go for the
// settings and server.go for the HTTP stack.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/internal/tracing"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/soapapi"
	"github.com/legacybridge/soapbridge/operations/web"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
	"github.com/legacybridge/soapbridge/soapenc"
	"github.com/legacybridge/soapbridge/store"
	"github.com/legacybridge/soapbridge/wsdl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default handling: a second one
	// kills the process instead of waiting for the graceful shutdown.
	context.AfterFunc(ctx, stop)
	applyGCDefaults(os.Getenv)
	err := checkEnvNames(os.Environ())
	if err == nil {
		err = run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soapbridge:", err)
		os.Exit(exitCode(err))
	}
}

// run starts the bridge and serves until ctx ends, then shuts down
// gracefully: not ready at once, still serving for the shutdown delay, then
// in-flight requests finish (within the shutdown timeout), then
// the outbox worker, the embedded sandbox and the store stop. Logs go to
// stdout. It returns nil after a clean shutdown and for -help.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if handled, err := subcommand(ctx, args, getenv, stdout); handled {
		return err
	}
	// SIGHUP reloads (reload.go); caught from here on, so that it never
	// ends the process as its default action would.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := loadConfig(args, getenv)
	if answered(err, stdout) {
		return nil
	}
	if err != nil {
		return err
	}
	sink, closeSink := logSink(stdout, cfg.LogBuffer)
	defer closeSink() // after the deferred Sync: flushes the rest and stops the timer
	log, err := newLogger(cfg, sink)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // nothing to do about a failed flush at exit

	var closers []func() // run in reverse order at the end
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()

	proxies, err := access.NewProxies(cfg.TrustedProxies)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	closers = append(closers, func() { ln.Close() })
	ln = capConnections(ln, cfg.MaxConns, cfg.MaxConnsPerIP, proxies, log.Named("http"))
	conns := connStatsOf(ln)
	ready := newReadiness(conns)
	// Bound now, served once the bridge is built: a taken address fails
	// the start before anything is written.
	adminLn, err := listenAdmin(cfg)
	if err != nil {
		return err
	}
	if adminLn != nil {
		closers = append(closers, func() { adminLn.ln.Close() })
	}

	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return err // store errors redact passwords
	}
	rawStore := st // before the metrics and tracing wrappers
	closers = append(closers, func() {
		if err := st.Close(); err != nil {
			log.Warn("closing the store", zap.Error(err))
		}
	})
	gatewayURL := cfg.GatewayURL
	var embedded *sandboxServer
	if gatewayURL == "" {
		// Its ids start above every payment the database remembers: the
		// clock seed alone repeats one when two starts fall in one tenth
		// of a second.
		above, err := highestPaymentID(ctx, rawStore)
		if err != nil {
			return err
		}
		sb, err := startSandbox(cfg, log, above)
		if err != nil {
			return err
		}
		embedded = sb
		closers = append(closers, func() { sb.stop(cfg.ShutdownTimeout) })
		gatewayURL = sb.url + "/api"
		for _, w := range cfg.sandboxWarnings() {
			log.Warn("embedded sandbox gateway: " + w)
		}
		if cfg.Demo {
			// Demo data only valid against the embedded sandbox; printed so
			// that an e-shop can be pointed at the bridge at once.
			// A value the operator set instead (SOAPBRIDGE_CLIENT_SECRET,
			// SOAPBRIDGE_SECURE_KEY) may be real: it is not shown.
			m := cfg.Merchants[0]
			log.Info("embedded sandbox demo merchant (demo credentials, not secrets)",
				zap.Int64("goid", m.GoID), zap.String("client_id", m.ClientID),
				zap.String("client_secret", demoOnly(m.ClientSecret, demoMerchant.ClientSecret)),
				zap.String("secure_key", demoOnly(m.SecureKey, demoMerchant.SecureKey)))
		}
	} else if cfg.SandboxState != "" {
		// Not an error: `make run` sets it for the demo, and a gateway URL
		// given to `make run` should still just work.
		log.Warn("sandbox_state is ignored: the bridge runs against gateway_url, not the embedded sandbox",
			zap.String("sandbox_state", cfg.SandboxState))
	}

	// The usage record flushes its last sums after the server has drained
	// and before the store closes (closers run in reverse order).
	us, err := usageOf(st)
	if err != nil {
		return err
	}
	// The one snapshot of the configuration in force (snapshot.go), put in
	// force below once its parts are built: the usage record keeps the
	// merchants of the snapshot in force, the core and the guard read the
	// merchants and rules a request pinned, the metrics their series.
	snaps := &snapshots{}
	rec, stopUsage, err := startUsage(cfg, us, snaps, log.Named("usage"))
	if err != nil {
		return err
	}
	closers = append(closers, stopUsage)

	// Metrics: the core (every call of every entry) and the REST client
	// are fed through their observer hooks; the store is timed by a
	// wrapper.
	met := metrics.New(metrics.Options{Operations: wsdl.OperationNames(), GoIDs: goidsOf(cfg.Merchants),
		MerchantLabels: cfg.MetricsMerchantLabels, Build: metrics.ReadBuild(), RefusalReasons: operations.RefusalReasons()})
	if conns != nil {
		met.SetConnections(conns)
	}
	st = met.Store(st)
	if rec != nil {
		met.LegacyLastCall(rec.LastCalls)
	}
	tr := tracing.Disabled()
	if cfg.OTLPEndpoint != "" {
		// Export failures as JSON lines, not OpenTelemetry's plain text.
		tracing.LogTo(log.Named("tracing"))
		var stopTracing func(context.Context) error
		tr, stopTracing, err = tracing.Start(cfg.OTLPEndpoint, buildVersion())
		if err != nil {
			return err
		}
		closers = append(closers, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := stopTracing(ctx); err != nil {
				log.Warn("flushing traces", zap.Error(err))
			}
		})
		log.Info("tracing to OTLP", zap.String("endpoint", cfg.OTLPEndpoint))
	}
	st = tr.Store(st)
	// Recorded in the replicas table before serving: a replica of a
	// release this one may not run beside holds its money calls.
	watch, stopWatch, err := startReplicaWatch(ctx, rawStore, met, log.Named("replicas"))
	if err != nil {
		return err
	}
	closers = append(closers, stopWatch)

	publicURL := cfg.PublicURL
	if publicURL == "" {
		publicURL = "http://" + dialAddr(ln.Addr())
	}
	goids := goidsOf(cfg.Merchants)
	// The gateway's replies pace the adaptive limit on calls in progress
	// (limitCalls, below) as well as the metrics.
	pace := &gatewayPace{}
	gw := restbackend.New(restbackend.Config{
		BaseURL:      gatewayURL,
		Logger:       log.Named("gateway"),
		UserAgent:    "soapbridge",
		MaxIdleConns: cfg.RESTMaxIdleConns,
		Timeout:      cfg.RESTTimeout,
		Observer:     gatewayObservers{met, pace},
		Tracer:       tr,
	})
	// The core's settings come from cfg.core() (config.go); the rest is wiring.
	core := cfg.core()
	core.PublicURL, core.Gateway, core.Store, core.Logger, core.Usage = publicURL, gw, st, log.Named("operations"), rec
	core.Outbox = operations.OutboxConfig{OnAttempt: met.OutboxAttempt, OnFailure: func(f operations.DeliveryFailure) {
		met.OutboxFailed(metrics.OutboxFailure(f))
	}}
	core.OnBadSignature, core.OnUnmappedChannel = met.BadSignature, met.UnmappedChannel
	core.OnRefusal = func(r operations.Refusal) { met.Refused(metrics.Refusal(r)) }
	core.Observer, core.MoneyHold = met, watch.moneyHold
	core.OverlapsLater = true // recorded below, once nothing else can fail the start
	svc, err := operations.New(core)
	if err != nil {
		return err
	}
	met.KeyOverlaps(func() []metrics.KeyOverlap { return keyOverlaps(svc.KeyOverlaps()) })
	// One Guard for the process: a reload hands it new rules, and what
	// must outlive a reload (token buckets, wrong-password counts, rate
	// demand and shares) stays in it.
	guard, err := newGuard(cfg, proxies, met, log)
	if err != nil {
		return err
	}
	sharing, stopSharing := startRateSharing(ctx, cfg, rawStore, guard, log.Named("access"))
	sharing.adopt(ctx, guard)
	met.RateShares(guard.RateShares)
	closers = append(closers, stopSharing)
	api, err := soapapi.New(soapapi.Config{
		Guard:            guard,
		Service:          svc,
		Logger:           log.Named("operations"),
		ServiceNamespace: cfg.ServiceNamespace,
		Limits:           soapenc.Limits{MaxBytes: cfg.MaxBodyBytes, MaxDepth: cfg.MaxDepth, MaxRefs: cfg.MaxRefs},
		Usage:            rec,
	})
	if err != nil {
		return err
	}

	// The merchants served, built as a reload builds them: their key
	// overlaps recorded (key_overlaps), the start's last step that can
	// fail, so a start that fails writes nothing.
	set, ps := svc.Merchants(nil, cfg.Merchants, cfg.DefaultGoID)
	if len(ps) > 0 {
		return coreProblems(cfg, ps)
	}
	svc.Use(set)
	snaps.swap(newSnapshot(cfg, set, guard.Rules(), met.InForce()))
	svc.Follow(snaps.merchantSet)
	met.Follow(snaps.seriesOf)
	snaps.retire = met.Retire

	e := newEcho(log, tr, proxies, snaps)
	e.GET("/healthz", healthzUnless(ready.isDraining))
	lim := newLimiter(cfg.RateLimit, cfg.RateBurst)
	soapRoute(e, cfg.SOAPPath, api.Handler(), lim, log, tr)
	rest := webRoutes(e, lim, svc.Bound)
	rest.GET(cfg.SOAPPath, soapapi.WSDLHandler(wsdl.New(wsdl.Options{ServiceNamespace: cfg.ServiceNamespace}), cfg.PublicURL, cfg.SOAPPath, ""))
	// The legacy browser flows (pay-full-v2, pay-base-v2, statement) and the
	// bridge's own gateway callbacks (return, notify).
	web.New(svc, log.Named("operations")).Register(rest)

	outboxCtx, stopOutbox := context.WithCancel(context.WithoutCancel(ctx))
	var outboxDone sync.WaitGroup
	outboxDone.Go(func() { svc.RunOutbox(outboxCtx) })
	// Stops after the server has drained (closers run in reverse), so that
	// notifications enqueued by the last requests are still picked up.
	closers = append(closers, func() { stopOutbox(); outboxDone.Wait() })

	if cfg.PurgeInterval > 0 {
		purgeCtx, stopPurge := context.WithCancel(context.WithoutCancel(ctx))
		var purgeDone sync.WaitGroup
		purgeDone.Go(func() { runPurge(purgeCtx, st, cfg.PurgeInterval, cfg.Retention(), log.Named("retention")) })
		closers = append(closers, func() { stopPurge(); purgeDone.Wait() })
	}

	// The gateway is asked for every merchant's token once the bridge
	// serves, and for the merchants a reload adds or changes (startup.go).
	// Reloads end before the probes are waited for (a reload starts one).
	probeCtx, stopProbe := context.WithCancel(ctx)
	var probeDone, reloads sync.WaitGroup
	reloadCtx, stopReloads := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopReloads(); reloads.Wait(); stopProbe(); probeDone.Wait() }()
	rl := &reloader{args: args, getenv: getenv, log: log.Named("config"), current: snaps.config, apply: func(cur, next Config) error {
		// Built and validated whole before anything changes: the guard's
		// rule set (bound to the guard's long-lived buckets), then the
		// core's merchant set (validated, then the key overlaps recorded:
		// its last step that can refuse, and the only one that writes),
		// then the metrics' series. Then one atomic store puts all of it
		// in force, with next itself (the reloader's base, the usage
		// record's and the report's merchants): a call pinned its snapshot
		// when it arrived and is judged by it alone (snaps.pin), so no
		// call meets one configuration's rules and another's merchants.
		in := snaps.load()
		rules, err := access.Compile(merchantRules(next.Merchants, nil))
		if err != nil {
			return err // validated: not expected
		}
		set, ps := svc.Merchants(in.merchants, next.Merchants, next.DefaultGoID)
		if len(ps) > 0 {
			return coreProblems(next, ps)
		}
		merchantRules(next.Merchants, log) // the warnings, of a reload that applies
		guard.Bind(rules)
		snaps.replace(func() *snapshot { return newSnapshot(next, set, rules, met.Series(goidsOf(next.Merchants))) })
		// In force. Only now the guard re-limits the buckets it keeps to
		// the new rates, and what others see of it: the embedded sandbox's
		// merchants change, and the gateway tokens of credentials no
		// merchant has any more are forgotten. The metrics drop the series
		// of merchants removed once no call in flight pinned the snapshot
		// replaced (snaps.replace). No rate demand is posted here: the next
		// regular post (within access.ShareInterval) carries this
		// replica's demand on.
		guard.Use(rules)
		if embedded != nil {
			embedded.gw.Register(sandboxMerchants(next.Merchants)...)
		}
		gw.KeepTokens(credentialsOf(next.Merchants))
		return nil
	}, counted: met.ConfigReloaded, applied: func(fresh []Merchant) {
		probeDone.Go(func() { checkGateway(probeCtx, gw, gatewayURL, fresh, "after a reload", log.Named("gateway")) })
	}}
	reloads.Go(func() {
		for {
			select {
			case <-reloadCtx.Done():
				return
			case <-hup:
				rl.reload("SIGHUP") //nolint:errcheck // logged and counted
			}
		}
	})
	if cfg.WatchConfig && cfg.ConfigFile != "" {
		reloads.Go(func() { rl.watch(reloadCtx) })
	}

	if adminLn != nil {
		pages := &reportPages{st: us, configured: snaps, log: log.Named("admin")}
		closers = append(closers, startAdmin(cfg, adminLn, snaps.merchants, met, st, gatewayURL, ready, pages, log.Named("admin")))
	}

	srv := newHTTPServer(cfg, limitCalls(ctx, cfg, conns, pace, met, log, closeWhenDraining(e, ready.isDraining)), log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ready.serving()

	log.Info("listening",
		zap.Duration("call_deadline", cfg.CallDeadline),
		zap.Duration("rest_timeout", cfg.RESTTimeout),
		zap.Duration("shutdown_timeout", cfg.ShutdownTimeout),
		zap.Duration("shutdown_delay", cfg.ShutdownDelay),
		zap.String("addr", ln.Addr().String()),
		zap.String("soap_path", cfg.SOAPPath),
		zap.String("wsdl", publicURL+cfg.SOAPPath+"?wsdl"),
		zap.String("gateway", gatewayURL),
		zap.String("database", store.Redact(cfg.Database)),
		zap.Int64s("merchants", goids),
		zap.String("config_file", cfg.ConfigFile),
	)
	// A gateway that does not answer, or refuses a merchant, is said at
	// once, not at the first shop's failed call; in the background, so
	// the listener serves meanwhile.
	probeDone.Go(func() { checkGateway(probeCtx, gw, gatewayURL, cfg.Merchants, "at start", log.Named("gateway")) })
	// Started: what only the start used of the executable need not stay
	// resident (startpages_linux.go).
	if n, err := releaseStartupPages(); err != nil {
		log.Debug("the executable's startup pages stay resident", zap.Error(err))
	} else if n > 0 {
		log.Debug("released the executable's startup pages", zap.Int64("resident_bytes", n))
	}

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Drain before closing: /readyz fails at once, and for shutdown_delay
	// the listener still accepts and serves, each reply closing its
	// connection, so that the balancer takes the replica out before a
	// request can meet a connection being closed.
	ready.draining()
	if cfg.ShutdownDelay > 0 {
		log.Info("draining: not ready, still serving", zap.Duration("shutdown_delay", cfg.ShutdownDelay))
		select {
		case err := <-served:
			return fmt.Errorf("serve: %w", err)
		case <-time.After(cfg.ShutdownDelay):
		}
	}
	log.Info("shutting down", zap.Duration("timeout", cfg.ShutdownTimeout))
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: in-flight requests did not finish within %s: %w", cfg.ShutdownTimeout, err)
	}
	log.Info("stopped")
	return nil
}

func goidsOf(ms []Merchant) []int64 {
	goids := make([]int64, len(ms))
	for i, m := range ms {
		goids[i] = m.GoID
	}
	return goids
}

// newGuard compiles the merchants' caller rules and warns about every
// merchant whose SOAP calls anyone may make.
func newGuard(cfg Config, proxies *access.Proxies, met *metrics.Metrics, log *zap.Logger) (*access.Guard, error) {
	return access.NewGuard(merchantRules(cfg.Merchants, log), access.Options{Proxies: proxies, LoginFailuresPerMinute: cfg.AuthFailures,
		OnLoginRefused: met.LoginRefused})
}

// merchantRules are the caller rules of ms by goid; when log is set, it is
// warned about every merchant whose SOAP calls anyone may make.
func merchantRules(ms []Merchant, log *zap.Logger) map[int64]access.Rules {
	rules := make(map[int64]access.Rules, len(ms))
	for _, m := range ms {
		rules[m.GoID] = m.Rules
		if m.Open() && log != nil {
			log.Warn("merchant accepts SOAP calls from anyone: whoever holds a customer's pay-full-v2 link (its paymentSession "+
				"signature) can refund, void or capture that payment; set allowed_networks or basic_user/basic_password "+
				"(docs/operations.md#security)", zap.Int64("goid", m.GoID))
		}
	}
	return rules
}

// credentialsOf are the gateway credentials of ms: as calls use them (the
// previous secret included) and as the start's probe does (without).
func credentialsOf(ms []Merchant) []restbackend.Credentials {
	out := make([]restbackend.Credentials, 0, 2*len(ms))
	for _, m := range ms {
		out = append(out, m.Credentials(), restbackend.Credentials{ClientID: m.ClientID, ClientSecret: m.ClientSecret})
	}
	return out
}

// runPurge deletes rows past their retention every interval until ctx
// ends, the first time shortly after start. Every replica may run it: the
// deletes are batched and idempotent, so two replicas purging at once only
// share the work.
func runPurge(ctx context.Context, st store.Store, every time.Duration, r store.Retention, log *zap.Logger) {
	wait := min(every, time.Minute) // soon after start, so a long interval still purges at every restart
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = every
		n, err := st.Purge(ctx, time.Now(), r)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("purge failed; trying again at the next interval", zap.Error(err))
			}
			continue
		}
		log.Info("purged rows past retention", zap.Int64("delivered", n.Delivered), zap.Int64("dead", n.Dead),
			zap.Int64("ledger", n.Ledger), zap.Int64("sessions", n.Sessions))
	}
}

// sandboxServer is the embedded sandbox gateway on its own listener.
type sandboxServer struct {
	url string // http://host:port, reachable from this process
	gw  *sandbox.Gateway
	srv *http.Server
}

// highestPaymentID is the highest payment id st remembers (0 for a store
// that cannot tell).
func highestPaymentID(ctx context.Context, st store.Store) (int64, error) {
	h, ok := st.(interface {
		HighestPaymentID(context.Context) (int64, error)
	})
	if !ok {
		return 0, nil
	}
	return h.HighestPaymentID(ctx)
}

// startSandbox starts the embedded sandbox; its payment ids are above
// idsAbove.
func startSandbox(cfg Config, log *zap.Logger, idsAbove int64) (*sandboxServer, error) {
	ln, err := net.Listen("tcp", cfg.SandboxListen)
	if err != nil {
		return nil, fmt.Errorf("embedded sandbox: listen %s: %w", cfg.SandboxListen, err)
	}
	ms := sandboxMerchants(cfg.Merchants)
	slog := log.Named("sandbox")
	if err := checkStateDir(cfg.SandboxState); err != nil {
		ln.Close()
		return nil, err
	}
	gw, err := sandbox.Open(sandbox.Options{
		Merchants: ms, BaseURL: cfg.SandboxPublicURL, Logger: slog,
		StateFile: cfg.SandboxState,
		// A database kept across restarts must never see a payment id
		// twice, with or without a state file: a repeated id would merge
		// two payments' sessions and notifications.
		SeedIDsFromClock: true,
		IDsAbove:         idsAbove,
		StatementFormats: sandbox.AllStatementFormats,
	})
	if err != nil {
		gw.Close()
		ln.Close()
		return nil, fmt.Errorf("embedded sandbox: %w; repair or move the file away, or unset sandbox_state%s to run in memory",
			err, names("sandbox_state"))
	}
	srv := &http.Server{
		Handler:           gw,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          zap.NewStdLog(slog),
	}
	go srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed at stop
	sb := &sandboxServer{url: "http://" + dialAddr(ln.Addr()), gw: gw, srv: srv}
	slog.Info("embedded sandbox gateway started", zap.String("addr", ln.Addr().String()), zap.String("url", sb.url),
		zap.String("state_file", cfg.SandboxState))
	return sb, nil
}

// sandboxMerchants are the registrations of the bridge's merchants at the
// embedded sandbox.
func sandboxMerchants(ms []Merchant) []sandbox.Merchant {
	out := make([]sandbox.Merchant, len(ms))
	for i, m := range ms {
		out[i] = sandbox.Merchant{Account: m.Account}
	}
	return out
}

// checkStateDir fails at start, rather than at the first payment, when the
// sandbox could not write its state file: the directory must exist and take
// new files (the file is replaced by renaming a temporary one beside it).
func checkStateDir(file string) error {
	if file == "" {
		return nil
	}
	probe, err := os.CreateTemp(filepath.Dir(file), ".soapbridge-sandbox-probe-*")
	if err != nil {
		return fmt.Errorf("embedded sandbox: the state file %s cannot be written: %w%s", file, err, names("sandbox_state"))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

func (s *sandboxServer) stop(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s.srv.Shutdown(ctx) //nolint:errcheck // best effort at exit
	s.gw.Close()
}

// demoOnly returns v if it is the demo value, else a mask.
func demoOnly(v, demo string) string {
	if v == demo {
		return v
	}
	return "*** (as configured)"
}

// dialAddr is a listener's address as a client on this host reaches it: an
// unspecified IP (":8080", "0.0.0.0:8080") becomes localhost.
func dialAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	host := tcp.IP.String()
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// newLogger builds the zap logger of cfg writing to w, which must be safe
// for concurrent use (logSink's is); with a buffered sink, lines from warn
// up are flushed as they are written.
func newLogger(cfg Config, w io.Writer) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	ec := zap.NewProductionEncoderConfig()
	ec.TimeKey = "time"
	ec.EncodeTime = isoTime // zapcore.ISO8601TimeEncoder's text
	ec.EncodeDuration = zapcore.StringDurationEncoder
	var enc zapcore.Encoder
	if cfg.LogFormat == "console" {
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	} else {
		enc = zapcore.NewJSONEncoder(ec)
	}
	ws := zapcore.AddSync(w)
	core := zapcore.NewCore(enc, ws, level)
	if cfg.LogBuffer > 0 {
		core = flushCore{Core: core, ws: ws, level: zapcore.WarnLevel}
	}
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(os.Stderr))), nil
}
