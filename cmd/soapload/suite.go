package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
)

// suiteConfig are the settings of a whole harness run.
type suiteConfig struct {
	dur         time.Duration
	rounds      int
	clients     int
	slowClients []int
	slowDelay   time.Duration
	rate        int
	php         string // auto, off
	phpWorkers  int
	jsonPath    string
	binDir      string
	quick       bool
	keep        bool
	only        *regexp.Regexp // nil: every scenario
	maxConns    int            // the client's own cap on open connections per server
	coldRates   []int          // open-loop rates of the cold-start scenarios
	coldLimits  []int          // max_calls_in_progress of the cold-start scenarios with a limit
	slowAdmin   string         // admin listener of bridge-slowgw (pprof, /metrics); empty: off
	// idleFor: when > 0, each cold-start scenario with a limit has an
	// after-idle twin (slowgw-idle-R-limitN): its fresh bridge is first
	// loaded warm, then left idle this long, then flooded.
	idleFor time.Duration
}

// The demo merchant of the sandbox and the bridge.
type merchantCreds struct {
	goid                              int64
	clientID, clientSecret, secureKey string
}

var demo = merchantCreds{goid: sandbox.DemoAccount.GoID, clientID: sandbox.DemoAccount.ClientID,
	clientSecret: sandbox.DemoAccount.ClientSecret, secureKey: sandbox.DemoSecureKey}

const soapPath = "/axis/EPaymentServiceV2"

// runSuite parses the suite's flags and runs every scenario.
func runSuite(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("soapload", flag.ContinueOnError)
	fs.SetOutput(out)
	var c suiteConfig
	fs.DurationVar(&c.dur, "d", 10*time.Second, "duration of each scenario in each round (at most 5m)")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds; baselines and subjects alternate, figures are medians")
	fs.IntVar(&c.clients, "c", 32, "concurrent clients of the fast scenarios")
	slow := fs.String("slow-clients", "200,1000,2000", "client counts of the slow-gateway scenarios")
	fs.DurationVar(&c.slowDelay, "slow-delay", 100*time.Millisecond, "delay of the slow gateway")
	fs.IntVar(&c.rate, "rate", 2000, "calls per second of the open-loop scenario")
	fs.StringVar(&c.php, "php", "auto", "auto: run the PHP peer when php-fpm and nginx are there; off: skip it")
	fs.IntVar(&c.phpWorkers, "php-workers", 50, "static php-fpm pool size")
	fs.StringVar(&c.jsonPath, "json", "", "also write the report as JSON to this file")
	fs.StringVar(&c.binDir, "bin", "", "directory with prebuilt soapbridge and gatewaysandbox (default: go build them)")
	fs.BoolVar(&c.quick, "quick", false, "smoke run: tiny durations and client counts (CI); explicit flags still apply")
	only := fs.String("only", "", "run only the scenarios whose name matches this regular expression, unanchored as go test -run (e.g. '^slowgw-.*-2000$')")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (servers' logs and configurations) for a look afterwards")
	fs.IntVar(&c.maxConns, "max-conns", 4000, "most connections the load client opens to one server (a request over it waits in the client, counted from when it was due)")
	coldRates := fs.String("cold-rates", "2000,4000", "open-loop rates (calls/s) of the cold-start scenarios slowgw-cold-R: a bridge started fresh on the slow gateway, loaded at once; empty: none")
	fs.StringVar(&c.slowAdmin, "slowgw-admin", "", "loopback address for bridge-slowgw's admin listener (pprof, /metrics) to profile it during a run, e.g. 127.0.0.1:6061; default: off, as in every other bridge")
	fs.DurationVar(&c.idleFor, "idle-for", 0, "when > 0, also run slowgw-idle-R-limitN: a fresh bridge loaded at -rate for 5 s, left idle this long, then loaded at R calls/s as its cold twin (e.g. 60s: a retry storm after an outage); default: off")
	coldLimits := fs.String("cold-limits", "1000", "max_calls_in_progress of the cold-start scenarios slowgw-cold-R-limitN (slowgw-cold-R itself runs without a limit); empty: none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := map[string]func(){
			"d": func() { c.dur = 300 * time.Millisecond }, "rounds": func() { c.rounds = 1 },
			"c": func() { c.clients = 4 }, "slow-clients": func() { *slow = "20" },
			"rate": func() { c.rate = 50 }, "php-workers": func() { c.phpWorkers = 4 },
		}
		for name, apply := range quick {
			if !set[name] {
				apply()
			}
		}
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return fmt.Errorf("-only: %w", err)
		}
		c.only = re
	}
	if c.slowAdmin != "" {
		host, _, err := net.SplitHostPort(c.slowAdmin)
		if err != nil || !loopback(host) {
			return fmt.Errorf("-slowgw-admin %q: a loopback host:port", c.slowAdmin)
		}
	}
	var err error
	if c.coldRates, err = intList("-cold-rates", *coldRates, 1, 50000); err != nil {
		return err
	}
	if c.coldLimits, err = intList("-cold-limits", *coldLimits, 1, 100000); err != nil {
		return err
	}
	if c.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["cold-rates"] {
			c.coldRates = []int{50}
		}
		if !set["cold-limits"] {
			c.coldLimits = []int{20}
		}
	}
	for f := range strings.SplitSeq(*slow, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 5000 {
			return fmt.Errorf("-slow-clients: %q is not a count within 1..5000", f)
		}
		c.slowClients = append(c.slowClients, n)
	}
	switch {
	case c.dur <= 0 || c.dur > 5*time.Minute:
		return errors.New("-d must be within (0, 5m]")
	case c.rounds < 1 || c.rounds > 20:
		return errors.New("-rounds must be 1..20")
	case c.clients < 1 || c.clients > 5000:
		return errors.New("-c must be 1..5000")
	case c.rate < 1 || c.rate > 50000:
		return errors.New("-rate must be 1..50000")
	case c.php != "auto" && c.php != "off":
		return errors.New("-php must be auto or off")
	case c.phpWorkers < 1 || c.phpWorkers > 500:
		return errors.New("-php-workers must be 1..500")
	case c.slowDelay < 0 || c.slowDelay > 10*time.Second:
		return errors.New("-slow-delay must be within [0, 10s]")
	case c.maxConns < 1 || c.maxConns > 60000:
		return errors.New("-max-conns must be 1..60000")
	}
	rep, err := c.run(out)
	if err != nil {
		return err
	}
	rep.writeTable(out)
	if c.jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.jsonPath, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "JSON report: %s\n", c.jsonPath)
	}
	return nil
}

// intList parses a comma-separated list of integers within lo..hi
// (empty: none).
func intList(flagName, v string, lo, hi int) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%s: %q is not within %d..%d", flagName, f, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}

// bench is the running set-up of one harness run.
type bench struct {
	cfg    suiteConfig
	dir    string
	kids   []*child
	php    *phpPeer
	groups []procGroup
	scen   []scenario
	notes  []string

	bin, slowGW string // for the cold-start scenarios' fresh bridges
	create      []byte
	warmed      map[string]bool // the warm scenarios warmed up
}

// scenario is one load phase, run once per round.
type scenario struct {
	name    string
	what    string
	t       target
	clients int // closed loop
	rate    int // open loop when > 0
	server  []string
	// cold: a bridge started fresh for the scenario on the slow gateway,
	// with this max_calls_in_progress (0: none); its figures are "bridge-cold".
	cold      bool
	coldLimit int
	// idle: the fresh bridge is loaded warm (-rate, 5 s) and left idle
	// this long before the flood.
	idle time.Duration
	// warm: before its first round, the scenario's bridge is warmed up
	// unmeasured (a closed loop of warmClients for warmFor), so that the
	// figure is the warm one even when -only runs it first.
	warm bool
}

const (
	warmFor     = 3 * time.Second
	warmClients = 200
)

// sample is what one scenario measured in one round.
type sample struct {
	res  result
	cpu  map[string]int64 // clock ticks by process group
	peak map[string]int64 // VmHWM bytes by process group
	// serverFDs: the cold bridge's most open descriptors (its connections
	// and a few files), sampled every 100 ms.
	serverFDs int64
}

func (c suiteConfig) run(out io.Writer) (*report, error) {
	b := &bench{cfg: c, warmed: map[string]bool{}}
	defer b.close()
	var err error
	if b.dir, err = os.MkdirTemp("", "soapload-"); err != nil {
		return nil, err
	}
	if c.keep {
		fmt.Fprintln(out, "soapload: work directory", b.dir)
	}
	if err := b.setUp(out); err != nil {
		return nil, err
	}
	if c.only != nil {
		b.scen = slices.DeleteFunc(b.scen, func(s scenario) bool { return !c.only.MatchString(s.name) })
		if len(b.scen) == 0 {
			return nil, fmt.Errorf("-only %q matches no scenario", c.only)
		}
	}
	bound := time.Duration(len(b.scen)) * (c.dur + 200*time.Millisecond)
	fmt.Fprintf(out, "soapload: %d scenarios × %d rounds of %s (about %s of load)\n",
		len(b.scen), c.rounds, c.dur, (bound * time.Duration(c.rounds)).Round(time.Second))
	samples := map[string][]sample{}
	self := procGroup{name: "client", pid: os.Getpid()}
	groups := append(slices.Clone(b.groups), self)
	for round := range c.rounds {
		order := slices.Clone(b.scen)
		if round%2 == 1 {
			// Every baseline runs before its subject in one round and
			// after it in the next, so a drift of the machine cancels.
			slices.Reverse(order)
		}
		for _, s := range order {
			smp := b.measure(s, groups)
			samples[s.name] = append(samples[s.name], smp)
			fmt.Fprintf(out, "  round %d %-26s %s\n", round+1, s.name, smp.res)
			if smp.res.firstBad != "" {
				fmt.Fprintf(out, "    first failure: %s\n", smp.res.firstBad)
				b.notes = append(b.notes, fmt.Sprintf("%s, round %d: %d bad, %d errors; first: %s",
					s.name, round+1, smp.res.bad, smp.res.errs, smp.res.firstBad))
			}
		}
	}
	return b.report(samples, groups), nil
}

// measure runs s once, reading every process's CPU and peak memory around it.
func (b *bench) measure(s scenario, groups []procGroup) sample {
	// Warmed up before the readings: the warm-up is not measured.
	if s.warm && !b.warmed[s.name] {
		cl := newClient(warmClients, b.cfg.maxConns, 30*time.Second, nil)
		closedLoop(cl, s.t, min(warmClients, max(1, s.rate/10)), min(warmFor, b.cfg.dur))
		cl.CloseIdleConnections()
		b.warmed[s.name] = true
		time.Sleep(200 * time.Millisecond)
	}
	if s.cold {
		return b.measureCold(s, groups)
	}
	smp := sample{cpu: map[string]int64{}, peak: map[string]int64{}}
	before := map[string]int64{}
	for _, g := range groups {
		g.resetPeak()
		before[g.name] = g.cpuTicks()
	}
	if s.rate > 0 {
		cc := &connCounter{}
		cl := newClient(4096, b.cfg.maxConns, 10*time.Second, cc)
		smp.res = openLoop(cl, s.t, s.rate, b.cfg.dur, min(max(64, s.rate*4), 20000))
		smp.res.peakConns = cc.peak.Load()
		cl.CloseIdleConnections()
	} else {
		cl := newClient(s.clients, b.cfg.maxConns, 30*time.Second, nil)
		smp.res = closedLoop(cl, s.t, s.clients, b.cfg.dur)
		cl.CloseIdleConnections()
	}
	for _, g := range groups {
		smp.cpu[g.name] = g.cpuTicks() - before[g.name]
		smp.peak[g.name] = g.peakRSS()
	}
	time.Sleep(200 * time.Millisecond) // closed connections settle before the next one
	return smp
}

func (b *bench) close() {
	b.php.stop()
	for i := len(b.kids) - 1; i >= 0; i-- {
		b.kids[i].stop()
	}
	if b.dir != "" && !b.cfg.keep {
		os.RemoveAll(b.dir)
	}
}

func (b *bench) start(name string, argv, env []string, ready *regexp.Regexp) (*child, string, error) {
	c, got, err := startChild(b.dir, name, argv, env, ready, 30*time.Second)
	if err != nil {
		return nil, "", err
	}
	b.kids = append(b.kids, c)
	return c, got, nil
}

// setUp builds and starts every server and prepares the requests.
func (b *bench) setUp(out io.Writer) error {
	ctx := context.Background()
	bin := b.cfg.binDir
	if bin == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		bin = b.dir
		fmt.Fprintln(out, "soapload: building cmd/soapbridge and cmd/gatewaysandbox")
		if err := buildBinaries(ctx, root, bin); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	quiet := []string{"SOAPBRIDGE_LOG_LEVEL=warn"}

	sb, sbAddr, err := b.start("sandbox", []string{filepath.Join(bin, "gatewaysandbox"), "-listen", "127.0.0.1:0"}, quiet,
		regexp.MustCompile(`listening on (\S+)`))
	if err != nil {
		return err
	}
	sandboxURL := "http://" + sbAddr
	ceil, ceilAddr, err := b.start("ceiling", []string{self, "-role", "ceiling"}, nil, regexp.MustCompile(`listening (\S+)`))
	if err != nil {
		return err
	}
	proxy, proxyAddr, err := b.start("slowgw", []string{self, "-role", "delay", "-upstream", sandboxURL, "-delay", b.cfg.slowDelay.String()}, nil,
		regexp.MustCompile(`listening (\S+)`))
	if err != nil {
		return err
	}
	slowGW := "http://" + proxyAddr
	// A bare Go reverse proxy before the slow gateway: what any net/http
	// intermediary costs there before doing work (the bridge's ceiling in
	// the slow-gateway scenarios, as the ceiling server is for touch).
	relay, relayAddr, err := b.start("relay", []string{self, "-role", "delay", "-upstream", slowGW, "-delay", "0s"}, nil,
		regexp.MustCompile(`listening (\S+)`))
	if err != nil {
		return err
	}
	b.bin, b.slowGW = bin, slowGW
	bridge := func(name, gateway string) (*child, string, error) { return b.bridge(name, gateway) }
	fast, fastURL, err := bridge("bridge", sandboxURL)
	if err != nil {
		return err
	}
	var slowExtra []string
	if b.cfg.slowAdmin != "" {
		slowExtra = append(slowExtra, "SOAPBRIDGE_ADMIN_LISTEN="+b.cfg.slowAdmin)
	}
	slow, slowURL, err := b.bridge("bridge-slowgw", slowGW, slowExtra...)
	if err != nil {
		return err
	}
	return b.setUpScenarios(out, ctx, sb, ceil, proxy, relay, fast, slow, sandboxURL, ceilAddr, relayAddr, slowGW, fastURL, slowURL)
}

// bridge starts a bridge named name on gateway, with extra environment.
func (b *bench) bridge(name, gateway string, extra ...string) (*child, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env := []string{
		"SOAPBRIDGE_LISTEN=" + addr,
		"SOAPBRIDGE_PUBLIC_URL=http://" + addr,
		"SOAPBRIDGE_GATEWAY_URL=" + gateway + "/api",
		"SOAPBRIDGE_DATABASE=" + filepath.Join(b.dir, name+".db"),
		"SOAPBRIDGE_LOG_LEVEL=info", // production: one access-log line per call
		"SOAPBRIDGE_GOID=" + strconv.FormatInt(demo.goid, 10),
		"SOAPBRIDGE_CLIENT_ID=" + demo.clientID,
		"SOAPBRIDGE_CLIENT_SECRET=" + demo.clientSecret,
		"SOAPBRIDGE_SECURE_KEY=" + demo.secureKey,
		// Every client of the harness comes from 127.0.0.1: the
		// per-address cap (meant for the open internet) would refuse
		// the 1000- and 2000-client scenarios. The total cap stays.
		"SOAPBRIDGE_MAX_CONNECTIONS_PER_IP=0",
		"SOAPBRIDGE_ADMIN_LISTEN=off", // two bridges run; the harness reads /proc, not /metrics
	}
	env = append(env, extra...)
	c, addr, err := b.start(name, []string{filepath.Join(b.bin, "soapbridge")}, env, regexp.MustCompile(`"msg":"listening".*?"addr":"([^"]+)"`))
	return c, "http://" + addr + soapPath, err
}

func (b *bench) setUpScenarios(out io.Writer, ctx context.Context, sb, ceil, proxy, relay, fast, slow *child,
	sandboxURL, ceilAddr, relayAddr, slowGW, fastURL, slowURL string) error {
	_ = ctx
	b.groups = []procGroup{
		{name: "bridge", pid: fast.pid()}, {name: "bridge-slowgw", pid: slow.pid()},
		{name: "sandbox", pid: sb.pid()}, {name: "ceiling", pid: ceil.pid()}, {name: "slowgw", pid: proxy.pid()},
		{name: "relay", pid: relay.pid()},
	}

	// One payment per bridge (so paymentStatus reads a stored session), a
	// token for the direct calls.
	create, err := createRequest()
	if err != nil {
		return err
	}
	b.create = create
	fastID, err := createPayment(fastURL, create)
	if err != nil {
		return fmt.Errorf("createPayment through the bridge: %w", err)
	}
	slowID, err := createPayment(slowURL, create)
	if err != nil {
		return fmt.Errorf("createPayment through the bridge on the slow gateway: %w", err)
	}
	token, err := fetchToken(sandboxURL)
	if err != nil {
		return err
	}
	fastStatus, err := statusRequest(fastID)
	if err != nil {
		return err
	}
	slowStatus, err := statusRequest(slowID)
	if err != nil {
		return err
	}
	touch := []byte(touchRequest)
	direct := target{method: http.MethodGet, url: slowGW + "/api" + restbackend.FillPath(restbackend.PathPayment, slowID), want: []byte(`"state"`),
		header: http.Header{"Authorization": {"Bearer " + token}, "Accept": {"application/json"}}}

	// The PHP peer.
	phpOK := false
	if b.cfg.php == "auto" {
		if err := b.startPHP(fastURL, sandboxURL, slowGW); err != nil {
			b.notes = append(b.notes, "PHP scenarios skipped: "+err.Error())
			fmt.Fprintln(out, "soapload: PHP scenarios skipped:", err)
		} else {
			phpOK = true
			b.groups = append(b.groups, procGroup{name: "nginx", pid: b.php.nginx.pid(), children: true},
				procGroup{name: "php-fpm", pid: b.php.fpm.pid(), children: true})
		}
	} else {
		b.notes = append(b.notes, "PHP scenarios skipped: -php off")
	}

	c := b.cfg.clients
	add := func(s scenario) { b.scen = append(b.scen, s) }
	add(scenario{name: "ceiling", what: "bare echo server answering a stored touch reply", t: soapTarget(ceilURLOf(ceilAddr), touch, ">OK<"), clients: c, server: []string{"ceiling"}})
	add(scenario{name: "touch", what: "touch through the bridge", t: soapTarget(fastURL, touch, ">OK<"), clients: c, server: []string{"bridge"}})
	add(scenario{name: "paymentStatus", what: "signed paymentStatus through the bridge (REST GET to the sandbox, session read)", t: soapTarget(fastURL, fastStatus, "CALL_COMPLETED"), clients: c, server: []string{"bridge", "sandbox"}})
	add(scenario{name: "createPayment", what: "signed createPayment through the bridge (REST POST, session write)", t: soapTarget(fastURL, create, "CALL_COMPLETED"), clients: c, server: []string{"bridge", "sandbox"}})
	if phpOK {
		add(scenario{name: "php-touch", what: "touch through the PHP SoapServer adapter (nginx + php-fpm)", t: soapTarget(b.php.url+"/fast/", touch, ">OK<"), clients: c, server: []string{"nginx", "php-fpm"}})
		add(scenario{name: "php-paymentStatus", what: "signed paymentStatus through the PHP adapter", t: soapTarget(b.php.url+"/fast/", fastStatus, "CALL_COMPLETED"), clients: c, server: []string{"nginx", "php-fpm", "sandbox"}})
	}
	for _, n := range b.cfg.slowClients {
		add(scenario{name: fmt.Sprintf("slowgw-direct-%d", n), what: fmt.Sprintf("%d clients straight at the slow gateway (REST GET)", n), t: direct, clients: n, server: []string{"slowgw", "sandbox"}})
		relayed := direct
		relayed.url = "http://" + relayAddr + "/api" + restbackend.FillPath(restbackend.PathPayment, slowID)
		add(scenario{name: fmt.Sprintf("slowgw-relay-%d", n), what: fmt.Sprintf("%d clients, the same REST GET through a bare Go reverse proxy before the slow gateway", n), t: relayed, clients: n, server: []string{"relay", "slowgw", "sandbox"}})
		add(scenario{name: fmt.Sprintf("slowgw-bridge-%d", n), what: fmt.Sprintf("%d clients, paymentStatus through the bridge on the slow gateway", n), t: soapTarget(slowURL, slowStatus, "CALL_COMPLETED"), clients: n, server: []string{"bridge-slowgw", "slowgw", "sandbox"}})
		if phpOK {
			add(scenario{name: fmt.Sprintf("slowgw-php-%d", n), what: fmt.Sprintf("%d clients, paymentStatus through the PHP adapter on the slow gateway", n), t: soapTarget(b.php.url+"/slow/", slowStatus, "CALL_COMPLETED"), clients: n, server: []string{"nginx", "php-fpm", "slowgw", "sandbox"}})
		}
	}
	add(scenario{name: fmt.Sprintf("slowgw-open-%d", b.cfg.rate), what: fmt.Sprintf("open loop, %d paymentStatus calls/s through the bridge on the slow gateway", b.cfg.rate), t: soapTarget(slowURL, slowStatus, "CALL_COMPLETED"), rate: b.cfg.rate, warm: true, server: []string{"bridge-slowgw", "slowgw", "sandbox"}})
	for _, r := range b.cfg.coldRates {
		add(scenario{name: fmt.Sprintf("slowgw-cold-%d", r), what: fmt.Sprintf("a bridge started fresh (no limit on calls in progress), at once an open loop of %d paymentStatus calls/s on the slow gateway", r),
			rate: r, cold: true, server: []string{"bridge-cold", "slowgw", "sandbox"}})
		for _, n := range b.cfg.coldLimits {
			add(scenario{name: fmt.Sprintf("slowgw-cold-%d-limit%d", r, n), what: fmt.Sprintf("a bridge started fresh with max_calls_in_progress %d, at once an open loop of %d paymentStatus calls/s on the slow gateway", n, r),
				rate: r, cold: true, coldLimit: n, server: []string{"bridge-cold", "slowgw", "sandbox"}})
			if b.cfg.idleFor > 0 {
				add(scenario{name: fmt.Sprintf("slowgw-idle-%d-limit%d", r, n), what: fmt.Sprintf("a bridge started fresh with max_calls_in_progress %d, loaded at %d/s for %s, idle for %s, then an open loop of %d paymentStatus calls/s", n, b.cfg.rate, idleWarmFor, b.cfg.idleFor, r),
					rate: r, cold: true, coldLimit: n, idle: b.cfg.idleFor, server: []string{"bridge-cold", "slowgw", "sandbox"}})
			}
		}
	}
	return nil
}

func ceilURLOf(addr string) string { return "http://" + addr + soapPath }

// startPHP fetches the bridge's WSDL for SoapServer and starts the peer.
func (b *bench) startPHP(bridgeURL, fastGW, slowGW string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	adapter := filepath.Join(root, "bench", "peers", "php", "adapter.php")
	if _, err := os.Stat(adapter); err != nil {
		return err
	}
	if _, _, err := phpTools(); err != nil {
		return err
	}
	resp, err := http.Get(bridgeURL + "?wsdl")
	if err != nil {
		return err
	}
	wsdl, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching the bridge's WSDL: status %d %v", resp.StatusCode, err)
	}
	wsdlPath := filepath.Join(b.dir, "EPaymentServiceV2.wsdl")
	if err := os.WriteFile(wsdlPath, wsdl, 0o644); err != nil {
		return err
	}
	b.php, err = startPHP(b.dir, adapter, wsdlPath, b.cfg.phpWorkers,
		[]phpGateway{{"fast", fastGW + "/api"}, {"slow", slowGW + "/api"}}, demo)
	return err
}

// touchRequest is PHP SoapClient's touch.
const touchRequest = `<?xml version="1.0" encoding="UTF-8"?>
<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><SOAP-ENV:Body><ns1:touch/></SOAP-ENV:Body></SOAP-ENV:Envelope>`

// createRequest is a signed createPayment of the demo merchant.
func createRequest() ([]byte, error) {
	f := operations.PaymentCommandFields{TargetGoID: strconv.FormatInt(demo.goid, 10),
		ProductName: "Objednávka č. 42", TotalPrice: "12900", Currency: "CZK", OrderNumber: "42",
		FailedURL: "https://eshop.example/failed", SuccessURL: "https://eshop.example/success",
		PreAuthorization: "0", RecurrentPayment: "0", PaymentChannels: "cz_kb,eu_gp_u"}
	sig, err := operations.Sign(demo.secureKey, f.Fields()...)
	if err != nil {
		return nil, err
	}
	s := func(name, v string) string {
		return `<` + name + ` xsi:type="SOAP-ENC:string">` + v + `</` + name + `>`
	}
	l := func(name, v string) string {
		return `<` + name + ` xsi:type="SOAP-ENC:long">` + v + `</` + name + `>`
	}
	body := s("currency", f.Currency) + s("encryptedSignature", sig) + s("failedURL", f.FailedURL) +
		s("orderNumber", f.OrderNumber) + s("paymentChannels", f.PaymentChannels) +
		`<preAuthorization xsi:type="SOAP-ENC:boolean">false</preAuthorization>` + s("productName", f.ProductName) +
		`<recurrentPayment xsi:type="SOAP-ENC:boolean">false</recurrentPayment>` + s("successURL", f.SuccessURL) +
		l("targetGoId", f.TargetGoID) + l("totalPrice", f.TotalPrice)
	return []byte(envelope("createPayment", `<paymentCommand xsi:type="ns2:EPaymentCommand">`+body+`</paymentCommand>`)), nil
}

// statusRequest is a signed paymentStatus of payment id.
func statusRequest(id string) ([]byte, error) {
	goid := strconv.FormatInt(demo.goid, 10)
	sig, err := operations.Sign(demo.secureKey, operations.PaymentSessionFields(goid, id)...)
	if err != nil {
		return nil, err
	}
	return []byte(envelope("paymentStatus", `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">`+
		`<encryptedSignature xsi:type="SOAP-ENC:string">`+sig+`</encryptedSignature>`+
		`<paymentSessionId xsi:type="SOAP-ENC:long">`+id+`</paymentSessionId>`+
		`<targetGoId xsi:type="SOAP-ENC:long">`+goid+`</targetGoId></paymentSessionInfo>`)), nil
}

// envelope is an RPC/encoded request as PHP SoapClient writes it.
func envelope(op, part string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:ns2="urn:AxisEPaymentProvider" xmlns:xsd="http://www.w3.org/2001/XMLSchema" SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><SOAP-ENV:Body><ns1:` +
		op + `>` + part + `</ns1:` + op + `></SOAP-ENV:Body></SOAP-ENV:Envelope>`
}

var sessionIDRe = regexp.MustCompile(`<paymentSessionId[^>]*>(\d+)<`)

func createPayment(url string, body []byte) (string, error) {
	resp, err := http.Post(url, "text/xml; charset=utf-8", strings.NewReader(string(body)))
	if err != nil {
		return "", err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	m := sessionIDRe.FindSubmatch(raw)
	if m == nil || !strings.Contains(string(raw), "CALL_COMPLETED") {
		return "", fmt.Errorf("unexpected reply: %.400s", raw)
	}
	return string(m[1]), nil
}

// fetchToken gets a client-credentials token of the demo merchant.
func fetchToken(gateway string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"payment-all"}}
	req, err := http.NewRequest(http.MethodPost, gateway+"/api"+restbackend.PathToken, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(demo.clientID+":"+demo.clientSecret)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var t struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil || t.AccessToken == "" {
		return "", fmt.Errorf("sandbox token: status %d, %v", resp.StatusCode, err)
	}
	return t.AccessToken, nil
}

// machine describes where the run happened.
func machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}
