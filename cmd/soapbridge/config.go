package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
	"github.com/legacybridge/soapbridge/store"
	"github.com/legacybridge/soapbridge/wsdl"
)

// Config is the bridge's configuration: the config file, the SOAPBRIDGE_
// variables and the flags, in that order, decoded over defaultConfig() with
// known keys only (configload.go). Each setting is one field: its yaml tag is the file key,
// from which its variable (SOAPBRIDGE_READ_TIMEOUT) and flag
// (-read-timeout) follow, and its help tag is what -h says. Merchants come
// from the file or the environment only: their secrets do not belong on a
// command line, which ps shows.
type Config struct {
	Listen    string `yaml:"listen" help:"address the bridge listens on"`
	PublicURL string `yaml:"public_url" help:"the bridge's public base URL: the WSDL's soap:address and the return and notification URLs given to the gateway; required with a real gateway. When empty (embedded sandbox only), the WSDL address follows each request's Host and the gateway is given http://<listen address>"`
	SOAPPath  string `yaml:"soap_path" help:"path of the SOAP endpoint (WSDL at ?wsdl)"`

	ServiceNamespace string `yaml:"service_namespace" help:"WSDL target namespace and reply body namespace"`

	MaxBodyBytes  int64   `yaml:"max_body_bytes" help:"largest SOAP request body accepted (real requests are under 4 KiB; the browser flows have their own limits)"`
	MaxDepth      int     `yaml:"max_depth" help:"deepest XML nesting of a SOAP request"`
	MaxRefs       int     `yaml:"max_refs" help:"most multi-reference (id=) elements of a SOAP request"`
	MaxConns      int     `yaml:"max_connections" help:"most open client connections; more are closed at once (0: no cap)"`
	MaxConnsPerIP int     `yaml:"max_connections_per_ip" help:"most open connections from one client address; raise it behind a proxy or load balancer (0: no cap)"`
	RateLimit     float64 `yaml:"rate_limit" help:"most requests per second the bridge accepts in all (SOAP calls get a fault, the rest 429); 0: no limit"`
	RateBurst     int     `yaml:"rate_burst" help:"requests accepted at once above the rate limit; twice the rate when 0"`

	MaxCallsInProgress   int           `yaml:"max_calls_in_progress" help:"most requests in progress on the public listener (/healthz aside); one more waits up to overload_wait for a slot, then gets 503 (a SOAP call: a Server fault) with Retry-After: 1 (0: no limit)"`
	OverloadWait         time.Duration `yaml:"overload_wait" help:"how long a request may wait for a slot when max_calls_in_progress are in progress before it is refused (0: refused at once); the waiting get freed slots in order of arrival"`
	OverloadSchedLatency time.Duration `yaml:"overload_sched_latency" help:"the limit on calls in progress adapts: each 100 ms that runnable goroutines waited longer than this for a CPU (p99), it drops by a fifth (not under 100, nor under three times what the best recent throughput needs), and grows back while reached and under it, up to max_calls_in_progress (0: the limit is max_calls_in_progress, fixed)"`
	OverloadCloseAbove   int           `yaml:"overload_close_above" help:"a refused request's connection is closed (Connection: close) only while more than this many client connections are open; below, the client keeps it for its retry (0: always closed)"`

	AuthFailures int `yaml:"basic_auth_failures_per_minute" help:"wrong HTTP Basic credentials one caller address (behind trusted_proxies: the client they name) may send per minute, per bridge process; past them its calls for merchants with basic_user are refused without checking (0: no limit)"`

	ReadTimeout     time.Duration `yaml:"read_timeout" help:"time to read a whole request"`
	WriteTimeout    time.Duration `yaml:"write_timeout" help:"time to handle a request and write its reply"`
	IdleTimeout     time.Duration `yaml:"idle_timeout" help:"keep-alive time of an idle connection"`
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout" help:"time in-flight requests get to finish on SIGTERM/SIGINT; at least the call deadline plus the REST timeout. Default: their sum + 5s"`
	ShutdownDelay   time.Duration `yaml:"shutdown_delay" help:"on SIGTERM/SIGINT, how long the bridge goes on accepting and serving, /readyz failing and every reply closing its connection, before it stops accepting: the balancer's health check must see it leave first (1s checks with fall 2: 3s); 0 where the platform waits already (Kubernetes preStop)"`
	CallDeadline    time.Duration `yaml:"call_deadline" help:"deadline of a whole SOAP call or browser flow; under the write timeout, over the REST timeout"`
	RESTTimeout     time.Duration `yaml:"rest_timeout" help:"timeout of one REST gateway call; a money-moving POST starts only with this much of the call deadline left"`

	PurgeInterval   time.Duration `yaml:"purge_interval" help:"how often delivered/dead notifications, ledger entries and sessions past retention are purged (0: never)"`
	RetainDelivered time.Duration `yaml:"retain_delivered" help:"retention of delivered notifications (the dedupe horizon of the gateway's repeats; at least 168h)"`
	RetainDead      time.Duration `yaml:"retain_dead" help:"retention of notifications given up on (at least 168h)"`
	RetainLedger    time.Duration `yaml:"retain_ledger" help:"retention of ledger entries of money-moving calls (at least the longest replay window)"`
	RetainSessions  time.Duration `yaml:"retain_sessions" help:"retention of payment sessions (at least 366 days: refunds of old payments need them)"`

	GatewayURL       string `yaml:"gateway_url" help:"REST gateway base URL (e.g. https://gw.sandbox.gopay.com/api); required once a merchant is configured, unless -sandbox. Without it and without any merchant setting, the demo runs on the embedded sandbox"`
	Sandbox          *bool  `yaml:"sandbox" help:"run on the embedded sandbox gateway (fake payments, for tests and demos) with the configured merchants; without any merchant setting and gateway URL the demo runs on it anyway"` // nil: not set (sandbox.go)
	SandboxListen    string `yaml:"sandbox_listen" help:"address of the embedded sandbox gateway"`
	SandboxPublicURL string `yaml:"sandbox_public_url" help:"public base URL of the embedded sandbox (payment page links); derived from the request when empty"`
	SandboxState     string `yaml:"sandbox_state" help:"JSON file the embedded sandbox keeps its payments in across restarts (empty: memory only); payment ids never repeat either way"`

	Database         string `yaml:"database" help:"SQLite file path, or a postgres:// DSN"`
	DatabaseMaxConns int    `yaml:"database_max_conns" help:"PostgreSQL connections one replica opens at most, a quarter of them (at least one) for refund locks; max_replicas × this must fit the server's max_connections (checked at start)"`
	MaxReplicas      int    `yaml:"max_replicas" help:"most bridge processes that share the database at once (the autoscaler's maximum plus the rollout surge); max_replicas × database_max_conns must fit the server's max_connections, checked at start; a replica enforces 1/max_replicas of each merchant's rate_limit until it has heard from the others"`
	MigrateOnStart   bool   `yaml:"migrate_on_start" help:"apply pending schema migrations at start; false: refuse to start on a schema that lacks one (run soapbridge migrate first)"`
	LogLevel         string `yaml:"log_level" help:"debug, info, warn or error"`
	LogFormat        string `yaml:"log_format" help:"json or console"`
	LogBuffer        int    `yaml:"log_buffer" help:"bytes of log lines buffered, flushed every second, at exit and after every warn or error line (0: each line written at once, none lost when the process is killed)"`
	RESTMaxIdleConns int    `yaml:"rest_max_idle_conns" help:"idle keep-alive connections kept to the REST gateway (about the expected concurrent calls)"`

	ReturnStatusTimeout time.Duration `yaml:"return_status_timeout" help:"time the status read gets when a customer returns from the gateway; past it a page says the payment may have gone through, with a reload link"`

	DefaultGoID    int64  `yaml:"default_goid" help:"merchant paymentMethodList answers for (it has no input); the first merchant when 0"`
	TrustedProxies string `yaml:"trusted_proxies" help:"CIDRs of the proxies and load balancers whose X-Forwarded-For is believed for merchants' allowed_networks"`
	AdminListen    string `yaml:"admin_listen" help:"address of the admin listener (/metrics, /livez, /readyz, /debug/pprof, status page at /); off: none"`
	AdminHosts     string `yaml:"admin_hosts" help:"host names, separated by commas or spaces, the admin listener answers under besides its own address, localhost and IP addresses (421 for any other Host header: a DNS-rebinding page gets nothing)"`
	OTLPEndpoint   string `yaml:"otlp_endpoint" help:"OTLP/HTTP endpoint traces are sent to (e.g. http://127.0.0.1:4318); none when empty"`
	WatchConfig    bool   `yaml:"watch_config" help:"reload the merchants when the config file changes (read every 2s), as SIGHUP does"`

	UsageFlushInterval time.Duration `yaml:"usage_flush_interval" help:"how often each replica adds its usage record (what each merchant still uses, for soapbridge report) to the database; a crash loses at most one interval (0: no usage record)"`

	MetricsMerchantLabels bool `yaml:"metrics_merchant_labels" help:"per-merchant metric series (label goid, at most 8 per merchant, 9 with a rate_limit); false: none, whatever the number of merchants"`

	Merchants []Merchant `yaml:"merchants"`

	// ConfigFile is where the settings above were read from ("" if none).
	ConfigFile string `yaml:"-"`
	// Demo is set when the embedded sandbox's demo merchant was configured
	// from the built-in defaults and the SOAPBRIDGE_ merchant variables.
	Demo bool `yaml:"-"`
	// merchantSources names where merchant settings were given (config
	// file, SOAPBRIDGE_ variables): without a gateway URL they make the
	// bridge refuse to start unless the sandbox was asked for.
	merchantSources []string
}

// Merchant is one e-shop as configured; the type, its keys (yaml tags),
// its validation and its secret-masking String are the core's.
type Merchant = operations.Merchant

// demoMerchant is the embedded sandbox's demo merchant, served when no
// merchant is configured.
var demoMerchant = Merchant{Account: sandbox.DemoAccount, SecureKey: sandbox.DemoSecureKey}

// shutdownMargin is added to the call deadline and the REST timeout for the
// default shutdown timeout: a call that started just before SIGTERM ends by
// its deadline, a reconciliation after it takes up to one REST timeout, and
// the reply still has to be written.
const shutdownMargin = 5 * time.Second

// defaultShutdownDelay is how long a replica told to stop keeps serving
// with /readyz failing: a balancer checking every second and taking a
// replica out after two failed checks has stopped sending to it by then.
const defaultShutdownDelay = 3 * time.Second

// defaultConfig holds every default of the bridge's own settings; the
// core's and the gateway client's come from their packages. A legacy
// client waits about 60 s for a reply (PHP's default_socket_timeout, the
// write timeout here), a shop page often runs under PHP's
// max_execution_time of 30 s: the call deadline answers before both.
func defaultConfig() Config {
	r := store.DefaultRetention()
	return Config{
		Listen:                ":8080",
		MetricsMerchantLabels: true,
		UsageFlushInterval:    usage.DefaultFlushInterval,
		SOAPPath:              "/axis/EPaymentServiceV2",
		ServiceNamespace:      wsdl.DefaultServiceNamespace,
		MaxBodyBytes:          64 << 10,
		MaxConns:              4096,
		MaxConnsPerIP:         256,
		MaxCallsInProgress:    1000,
		OverloadWait:          250 * time.Millisecond,
		OverloadSchedLatency:  20 * time.Millisecond,
		OverloadCloseAbove:    4096, // max_connections: a refusal keeps its connection unless the cap is near
		AuthFailures:          10,
		MaxDepth:              64,
		MaxRefs:               1000,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           120 * time.Second,
		ShutdownDelay:         defaultShutdownDelay,
		CallDeadline:          operations.DefaultCallDeadline,
		RESTTimeout:           restbackend.DefaultTimeout,
		PurgeInterval:         time.Hour,
		RetainDelivered:       r.Delivered,
		RetainDead:            r.Dead,
		RetainLedger:          r.Ledger,
		RetainSessions:        r.Sessions,
		SandboxListen:         "127.0.0.1:8090",
		AdminListen:           "127.0.0.1:9090",
		Database:              "soapbridge.db",
		DatabaseMaxConns:      store.DefaultMaxConns,
		MaxReplicas:           1,
		MigrateOnStart:        true,
		LogLevel:              "info",
		LogFormat:             "json",
		LogBuffer:             defaultLogBuffer,
		RESTMaxIdleConns:      restbackend.DefaultMaxIdleConns,

		ReturnStatusTimeout: operations.DefaultReturnStatusTimeout,
	}
}

// Retention is the store retention of c.
func (c *Config) Retention() store.Retention {
	return store.Retention{Delivered: c.RetainDelivered, Dead: c.RetainDead, Ledger: c.RetainLedger, Sessions: c.RetainSessions}
}

// core is the core's part of c, as operations.Config.Validate checks it
// and main.go hands it to operations.New with the wiring added. It shares
// c.Merchants. A core setting is copied here, nowhere else: a test fails
// when a field of operations.Config is neither copied nor wired.
func (c *Config) core() operations.Config {
	return operations.Config{Merchants: c.Merchants, DefaultGoID: c.DefaultGoID, CallDeadline: c.CallDeadline,
		PublicURL: c.PublicURL, ReturnStatusTimeout: c.ReturnStatusTimeout}
}

// validate normalizes c (URL trailing slashes, the default shutdown timeout,
// the merchants through the core's Validate) and reports every problem at
// once. Each message names the settings to change in every notation and
// never shows a secret.
func (c *Config) validate() error {
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	c.SandboxPublicURL = strings.TrimRight(c.SandboxPublicURL, "/")
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = c.CallDeadline + c.RESTTimeout + shutdownMargin
	}
	sandbox := c.GatewayURL == ""
	_, proxiesErr := access.ParseNetworks(c.TrustedProxies)
	_, adminHostsErr := adminHostNames(c.AdminHosts)
	_, levelErr := zapcore.ParseLevel(c.LogLevel)
	ns, nsErr := url.Parse(c.ServiceNamespace)
	// The core's settings first (its Validate normalizes the merchants): the
	// merchants, the default goid, the call deadline against the REST
	// timeout, the public URL.
	var errs []error
	core := c.core()
	for _, p := range core.Validate(c.RESTTimeout) {
		if p.Key != "public_url" || c.PublicURL != "" { // the listen address stands in on the sandbox; a gateway needs it (below)
			errs = append(errs, errors.New(merchantMessage(*c, p)+names(p.Key)))
		}
	}
	window := time.Duration(0) // the longest replay window: the ledger must keep entries that long
	for _, m := range c.Merchants {
		window = max(window, m.ReplayWindow)
	}
	r, inf := c.Retention(), time.Duration(1<<62)
	// Each rule: the problem ("" when none) and the keys to change.
	for _, rule := range []struct{ problem, keys string }{
		{hostPort("listen", c.Listen), "listen"},
		{when(!strings.HasPrefix(c.SOAPPath, "/") || strings.ContainsAny(c.SOAPPath, "?# ") || c.SOAPPath == "/" || c.SOAPPath == "/healthz",
			"SOAP path: %q must be a path like /axis/EPaymentServiceV2", c.SOAPPath), "soap_path"},
		{when(nsErr != nil || ns.Scheme == "", "service namespace: %q is not an absolute URI", c.ServiceNamespace), "service_namespace"},
		{when(c.MaxBodyBytes <= 0, "max body bytes must be positive"), "max_body_bytes"},
		{when(c.MaxConns < 0, "max connections must not be negative (0: no cap)"), "max_connections"},
		{when(c.MaxConnsPerIP < 0, "max connections per IP must not be negative (0: no cap)"), "max_connections_per_ip"},
		{when(c.MaxCallsInProgress < 0, "max calls in progress must not be negative (0: no limit)"), "max_calls_in_progress"},
		{when(c.OverloadWait < 0 || c.OverloadWait > 10*time.Second, "overload wait: %v is not within 0..10s", c.OverloadWait), "overload_wait"},
		{when(c.OverloadSchedLatency < 0 || c.OverloadSchedLatency > 10*time.Second, "overload sched latency: %v is not within 0..10s", c.OverloadSchedLatency), "overload_sched_latency"},
		{when(c.OverloadCloseAbove < 0, "overload close above must not be negative (0: every refusal closes its connection)"), "overload_close_above"},
		{when(c.RateLimit < 0 || c.RateBurst < 0, "rate limit and burst must not be negative (0: no limit)"), "rate_limit rate_burst"},
		{when(c.AuthFailures < 0, "basic auth failures per minute must not be negative (0: no limit)"), "basic_auth_failures_per_minute"},
		{when(c.MaxDepth < 0 || c.MaxRefs < 0, "max depth and max refs must not be negative (0: the default)"), "max_depth max_refs"},
		{when(c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0, "timeouts must not be negative (0: none)"), "read_timeout write_timeout idle_timeout"},
		{when(c.PurgeInterval < 0, "purge interval must not be negative (0: never purge)"), "purge_interval"},
		{when(c.UsageFlushInterval < 0 || c.UsageFlushInterval > 0 && c.UsageFlushInterval < time.Second,
			"usage flush interval %v must be 0 (no usage record) or at least 1s", c.UsageFlushInterval), "usage_flush_interval"},
		{when(c.RESTTimeout <= 0, "REST timeout must be positive"), "rest_timeout"},
		// After a reply lost at the deadline, reconciliation may take one more
		// REST timeout: the answer must still be written before the write
		// timeout cuts the connection.
		{when(c.WriteTimeout > 0 && c.CallDeadline+c.RESTTimeout >= c.WriteTimeout, "call deadline %v plus the REST timeout %v must be shorter than the "+
			"write timeout %v: after a reply lost at the deadline, reconciliation takes up to one REST timeout more, and the answer must be written "+
			"before the connection is cut", c.CallDeadline, c.RESTTimeout, c.WriteTimeout), "call_deadline rest_timeout write_timeout"},
		{when(c.ShutdownTimeout < c.CallDeadline+c.RESTTimeout, "shutdown timeout %v is shorter than the call deadline %v plus the REST timeout %v: "+
			"SIGTERM would cut calls in flight or the reconciliation after a reply lost at the deadline (a capture could happen with no reply to "+
			"the e-shop)", c.ShutdownTimeout, c.CallDeadline, c.RESTTimeout), "shutdown_timeout"},
		{when(c.ShutdownDelay < 0 || c.ShutdownDelay > 5*time.Minute, "shutdown delay: %v is not within 0..5m", c.ShutdownDelay), "shutdown_delay"},
		{when(c.ReturnStatusTimeout <= 0 || c.ReturnStatusTimeout > c.WriteTimeout && c.WriteTimeout > 0,
			"return status timeout: %v must be positive and within the write timeout (%v)", c.ReturnStatusTimeout, c.WriteTimeout), "return_status_timeout"},
		{badURL("gateway URL", c.GatewayURL), "gateway_url"},
		{when(!sandbox && c.PublicURL == "", "public URL is required with a real gateway: the gateway sends customers and notifications back "+
			"to the bridge under it"), "public_url"},
		{when(sandbox, "%s", hostPort("sandbox listen", c.SandboxListen)), "sandbox_listen"},
		{when(sandbox, "%s", badURL("sandbox public URL", c.SandboxPublicURL)), "sandbox_public_url"},
		{when(proxiesErr != nil, "trusted proxies: %v", proxiesErr), "trusted_proxies"},
		{when(c.AdminListen != "" && c.AdminListen != "off", "%s", hostPort("admin listen (or off)", c.AdminListen)), "admin_listen"},
		{when(adminHostsErr != nil, "admin hosts: %v", adminHostsErr), "admin_hosts"},
		{callersUnseen(*c), "trusted_proxies max_connections_per_ip"},
		{badURL("OTLP endpoint", c.OTLPEndpoint), "otlp_endpoint"},
		{when(strings.TrimSpace(c.Database) == "", "database must name an SQLite file or a postgres:// DSN"), "database"},
		{when(c.DatabaseMaxConns < 2 || c.DatabaseMaxConns > 10000, "database max conns: %d is not within 2..10000 (one connection for refund locks, one for queries at least)",
			c.DatabaseMaxConns), "database_max_conns"},
		{when(c.MaxReplicas < 1 || c.MaxReplicas > 10000, "max replicas: %d is not within 1..10000", c.MaxReplicas), "max_replicas"},
		{when(levelErr != nil, "log level: %q is not debug, info, warn or error", c.LogLevel), "log_level"},
		{when(c.LogFormat != "json" && c.LogFormat != "console", "log format: %q is not json or console", c.LogFormat), "log_format"},
		{when(c.LogBuffer < 0 || c.LogBuffer > 64<<20, "log buffer: %d is not within 0..64 MiB", c.LogBuffer), "log_buffer"},
		{when(c.RESTMaxIdleConns < 1 || c.RESTMaxIdleConns > 1<<16, "rest max idle conns: %d is not within 1..65536", c.RESTMaxIdleConns), "rest_max_idle_conns"},
		// Each retention alone (the others unbounded), so that the message names its key.
		{retention(store.Retention{Delivered: r.Delivered, Dead: inf, Ledger: inf, Sessions: inf}, window), "retain_delivered"},
		{retention(store.Retention{Delivered: inf, Dead: r.Dead, Ledger: inf, Sessions: inf}, window), "retain_dead"},
		{retention(store.Retention{Delivered: inf, Dead: inf, Ledger: r.Ledger, Sessions: inf}, window), "retain_ledger"},
		{retention(store.Retention{Delivered: inf, Dead: inf, Ledger: inf, Sessions: r.Sessions}, window), "retain_sessions"},
	} {
		if rule.problem != "" {
			errs = append(errs, errors.New(rule.problem+names(strings.Fields(rule.keys)...)))
		}
	}
	errs = append(errs, c.checkSandboxChoice()...)
	return errors.Join(errs...)
}

// merchantMessage is the message of a core problem, prefixed with the
// merchant it is about ("merchant 8123456789: …", "merchant #2: …").
func merchantMessage(c Config, p operations.Problem) string {
	i := 0
	if !strings.HasPrefix(p.Key, "merchants[") {
		return p.Msg
	}
	fmt.Sscanf(p.Key, "merchants[%d]", &i) //nolint:errcheck // the core's key
	who := fmt.Sprintf("#%d", i+1)
	if i < len(c.Merchants) && c.Merchants[i].GoID > 0 {
		who = fmt.Sprint(c.Merchants[i].GoID)
	}
	return "merchant " + who + ": " + p.Msg
}

// when is the problem format describes if cond holds, else "".
func when(cond bool, format string, a ...any) string {
	if !cond {
		return ""
	}
	return fmt.Sprintf(format, a...)
}

func hostPort(what, v string) string {
	_, _, err := net.SplitHostPort(v)
	return when(err != nil, "%s: %q is not host:port", what, v)
}

func badURL(what, v string) string {
	err := restbackend.CheckURL(v, false)
	return when(v != "" && err != nil, "%s: %v", what, err)
}

func retention(r store.Retention, window time.Duration) string {
	err := r.Validate(window)
	return when(err != nil, "%s", strings.TrimPrefix(fmt.Sprint(err), "store: "))
}
