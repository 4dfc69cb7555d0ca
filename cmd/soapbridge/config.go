package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
	"github.com/legacybridge/soapbridge/wsdl"
)

// envPrefix prefixes every environment variable of the bridge.
const envPrefix = "SOAPBRIDGE_"

// Config is the bridge's configuration. Precedence, lowest first: built-in
// defaults, the config file, environment variables, command-line flags.
type Config struct {
	Listen           string        `yaml:"listen"`
	PublicURL        string        `yaml:"public_url"`
	SOAPPath         string        `yaml:"soap_path"`
	ServiceNamespace string        `yaml:"service_namespace"`
	MaxBodyBytes     int64         `yaml:"max_body_bytes"`
	MaxDepth         int           `yaml:"max_depth"`
	MaxRefs          int           `yaml:"max_refs"`
	MaxConns         int           `yaml:"max_connections"`
	MaxConnsPerIP    int           `yaml:"max_connections_per_ip"`
	RateLimit        float64       `yaml:"rate_limit"`
	RateBurst        int           `yaml:"rate_burst"`
	ReadTimeout      time.Duration `yaml:"read_timeout"`
	WriteTimeout     time.Duration `yaml:"write_timeout"`
	IdleTimeout      time.Duration `yaml:"idle_timeout"`
	ShutdownTimeout  time.Duration `yaml:"shutdown_timeout"` // 0: CallDeadline + shutdownMargin
	CallDeadline     time.Duration `yaml:"call_deadline"`    // whole SOAP call or browser flow
	RESTTimeout      time.Duration `yaml:"rest_timeout"`     // one gateway call
	PurgeInterval    time.Duration `yaml:"purge_interval"`   // how often old rows are purged; 0 never
	// Retention of finished rows (store.Retention); 0 keeps the default.
	RetainDelivered  time.Duration `yaml:"retain_delivered"`
	RetainDead       time.Duration `yaml:"retain_dead"`
	RetainLedger     time.Duration `yaml:"retain_ledger"`
	RetainSessions   time.Duration `yaml:"retain_sessions"`
	GatewayURL       string        `yaml:"gateway_url"`
	Sandbox          *bool         `yaml:"sandbox"` // nil: not set, the sandbox only for the demo (sandbox.go)
	SandboxListen    string        `yaml:"sandbox_listen"`
	SandboxPublicURL string        `yaml:"sandbox_public_url"`
	SandboxState     string        `yaml:"sandbox_state"` // JSON file of the embedded sandbox's payments; "": memory only
	Database         string        `yaml:"database"`
	LogLevel         string        `yaml:"log_level"`
	LogFormat        string        `yaml:"log_format"`
	LogBuffer        int           `yaml:"log_buffer"`          // bytes of log lines buffered (flushed every second and at exit); 0 writes each line at once
	RESTMaxIdleConns int           `yaml:"rest_max_idle_conns"` // idle keep-alive connections kept to the gateway
	DefaultGoID      int64         `yaml:"default_goid"`
	TrustedProxies   string        `yaml:"trusted_proxies"` // CIDRs whose X-Forwarded-For is believed
	AdminListen      string        `yaml:"admin_listen"`    // metrics, probes, pprof, status page; "" or "off": none
	OTLPEndpoint     string        `yaml:"otlp_endpoint"`   // OTLP/HTTP traces endpoint; "" none
	Merchants        []Merchant    `yaml:"merchants"`

	// ReturnStatusTimeout bounds the status read when a customer returns
	// from the gateway; past it the customer sees a "may have gone through,
	// do not pay again" page with a reload link.
	ReturnStatusTimeout time.Duration `yaml:"return_status_timeout"`

	// UsageFlushInterval is how often the usage record is added to the
	// store (a crash loses at most one); 0: no usage record.
	UsageFlushInterval time.Duration `yaml:"usage_flush_interval"`

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

// Merchant is one e-shop as configured; the type, its validation and its
// secret-masking String are the core's.
type Merchant = operations.Merchant

// The embedded sandbox's demo merchant, used when no merchant is configured.
var demoMerchant = Merchant{
	Account:   restbackend.Account{GoID: 8123456789, ClientID: "sandbox-client", ClientSecret: "sandbox-secret"},
	SecureKey: "DemoSecureKey-0123456789",
	Currency:  "CZK",
	Lang:      "CS",
}

// Deadlines. A legacy client waits for a reply about 60 s at most (PHP's
// default_socket_timeout, the bridge's own write timeout), and a shop page
// that calls the bridge often runs under PHP's max_execution_time of 30 s:
// 25 s answers before both give up. A gateway call gets 10 s (its replies
// take well under a second), so a POST still fits after the reads that
// precede it, and a lost reply leaves time to reconcile before answering.
const (
	defaultCallDeadline = 25 * time.Second
	defaultRESTTimeout  = 10 * time.Second
	// shutdownMargin is added to the call deadline for the default
	// shutdown timeout: a call that started just before SIGTERM ends by its
	// deadline, and its reply still has to be written.
	shutdownMargin = 5 * time.Second
)

func defaultConfig() Config {
	return Config{
		Listen:           ":8080",
		SOAPPath:         "/axis/EPaymentServiceV2",
		ServiceNamespace: wsdl.DefaultServiceNamespace,
		MaxBodyBytes:     64 << 10,
		MaxConns:         4096,
		MaxConnsPerIP:    256,
		MaxDepth:         64,
		MaxRefs:          1000,
		ReadTimeout:      30 * time.Second,
		WriteTimeout:     60 * time.Second,
		IdleTimeout:      120 * time.Second,
		CallDeadline:     defaultCallDeadline,
		RESTTimeout:      defaultRESTTimeout,
		PurgeInterval:    time.Hour,
		SandboxListen:    "127.0.0.1:8090",
		AdminListen:      "127.0.0.1:9090",
		Database:         "soapbridge.db",
		LogLevel:         "info",
		LogFormat:        "json",
		LogBuffer:        defaultLogBuffer,
		RESTMaxIdleConns: restbackend.DefaultMaxIdleConns,

		ReturnStatusTimeout: operations.DefaultReturnStatusTimeout,
		UsageFlushInterval:  usage.DefaultFlushInterval,
	}
}

// setting is one server setting settable by file, environment and flag.
type setting struct {
	flag   string // flag name; the variable is SOAPBRIDGE_ + upper-cased, '-' → '_'
	help   string
	isBool bool // -flag alone means true
	set    func(c *Config, v string) error
	get    func(c *Config) string
}

func (s setting) env() string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(s.flag, "-", "_"))
}

func strOpt(name, help string, p func(*Config) *string) setting {
	return setting{flag: name, help: help,
		set: func(c *Config, v string) error { *p(c) = v; return nil },
		get: func(c *Config) string { return *p(c) },
	}
}

func intOpt[T int | int64](name, help string, p func(*Config) *T) setting {
	return setting{flag: name, help: help,
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("not an integer: %q", v)
			}
			*p(c) = T(n)
			return nil
		},
		get: func(c *Config) string { return strconv.FormatInt(int64(*p(c)), 10) },
	}
}

func durOpt(name, help string, p func(*Config) *time.Duration) setting {
	return setting{flag: name, help: help,
		set: func(c *Config, v string) error {
			v = strings.TrimSpace(v)
			d, err := time.ParseDuration(v)
			if _, nerr := strconv.ParseFloat(v, 64); err != nil && nerr == nil {
				// A bare number has no unit: seconds? milliseconds? Say so.
				return fmt.Errorf("`%s` is not a duration, write `%ss` (or another unit: 500ms, 2m, 1h)", v, v)
			}
			if err != nil {
				return fmt.Errorf("not a duration (e.g. 30s, 2m): %q", v)
			}
			*p(c) = d
			return nil
		},
		get: func(c *Config) string { return p(c).String() },
	}
}

// settings are the server settings, in the order -help lists them. The
// merchants are not among them: their secrets do not belong on a command
// line (visible in ps); they come from the file or the environment.
var settings = []setting{
	strOpt("config", "YAML (or JSON) file with settings and merchants", func(c *Config) *string { return &c.ConfigFile }),
	strOpt("listen", "address the bridge listens on", func(c *Config) *string { return &c.Listen }),
	strOpt("public-url", "the bridge's public base URL: the WSDL's soap:address and the return and notification URLs given to the gateway; "+
		"required with a real gateway. When empty (embedded sandbox only), the WSDL address follows each request's Host and the gateway "+
		"is given http://<listen address>", func(c *Config) *string { return &c.PublicURL }),
	strOpt("soap-path", "path of the SOAP endpoint (WSDL at ?wsdl)", func(c *Config) *string { return &c.SOAPPath }),
	strOpt("service-namespace", "WSDL target namespace and reply body namespace", func(c *Config) *string { return &c.ServiceNamespace }),
	intOpt("max-body-bytes", "largest SOAP request body accepted (real requests are under 4 KiB; the browser flows have their own limits)", func(c *Config) *int64 { return &c.MaxBodyBytes }),
	intOpt("max-connections", "most open client connections; more are closed at once (0: no cap)", func(c *Config) *int { return &c.MaxConns }),
	intOpt("max-connections-per-ip", "most open connections from one client address; raise it behind a proxy or load balancer (0: no cap)",
		func(c *Config) *int { return &c.MaxConnsPerIP }),
	{flag: "rate-limit", help: "most requests per second the bridge accepts in all (SOAP calls get a fault, the rest 429); 0: no limit",
		set: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return fmt.Errorf("`%s` is not a number of requests per second", v)
			}
			c.RateLimit = f
			return nil
		},
		get: func(c *Config) string { return strconv.FormatFloat(c.RateLimit, 'f', -1, 64) },
	},
	intOpt("rate-burst", "requests accepted at once above the rate limit; twice the rate when 0", func(c *Config) *int { return &c.RateBurst }),
	intOpt("max-depth", "deepest XML nesting of a SOAP request", func(c *Config) *int { return &c.MaxDepth }),
	intOpt("max-refs", "most multi-reference (id=) elements of a SOAP request", func(c *Config) *int { return &c.MaxRefs }),
	durOpt("read-timeout", "time to read a whole request", func(c *Config) *time.Duration { return &c.ReadTimeout }),
	durOpt("write-timeout", "time to handle a request and write its reply", func(c *Config) *time.Duration { return &c.WriteTimeout }),
	durOpt("idle-timeout", "keep-alive time of an idle connection", func(c *Config) *time.Duration { return &c.IdleTimeout }),
	durOpt("shutdown-timeout", "time in-flight requests get to finish on SIGTERM/SIGINT; at least the call deadline (default: call deadline + 5s)", func(c *Config) *time.Duration { return &c.ShutdownTimeout }),
	durOpt("call-deadline", "deadline of a whole SOAP call or browser flow; under the write timeout, over the REST timeout", func(c *Config) *time.Duration { return &c.CallDeadline }),
	durOpt("rest-timeout", "timeout of one REST gateway call; a money-moving POST starts only with this much of the call deadline left", func(c *Config) *time.Duration { return &c.RESTTimeout }),
	durOpt("purge-interval", "how often delivered/dead notifications, ledger entries and sessions past retention are purged (0: never)", func(c *Config) *time.Duration { return &c.PurgeInterval }),
	durOpt("usage-flush-interval", "how often each replica adds its usage record (what each merchant still uses, for `soapbridge report`) "+
		"to the database; a crash loses at most one interval (0: no usage record)", func(c *Config) *time.Duration { return &c.UsageFlushInterval }),
	durOpt("retain-delivered", "retention of delivered notifications (dedupe horizon; default 720h, at least 168h)", func(c *Config) *time.Duration { return &c.RetainDelivered }),
	durOpt("retain-dead", "retention of notifications given up on (default 2160h, at least 168h)", func(c *Config) *time.Duration { return &c.RetainDead }),
	durOpt("retain-ledger", "retention of ledger entries of money-moving calls (default 720h, at least the longest replay window)", func(c *Config) *time.Duration { return &c.RetainLedger }),
	durOpt("retain-sessions", "retention of payment sessions (default 9600h = 400 days, at least 366 days: refunds of old payments need them)", func(c *Config) *time.Duration { return &c.RetainSessions }),
	strOpt("gateway-url", "REST gateway base URL (e.g. https://gw.sandbox.gopay.com/api); required once a merchant is configured, "+
		"unless -sandbox. Without it and without any merchant setting, the demo runs on the embedded sandbox", func(c *Config) *string { return &c.GatewayURL }),
	{flag: "sandbox", isBool: true,
		help: "run on the embedded sandbox gateway (fake payments, for tests and demos) with the configured merchants; " +
			"without any merchant setting and gateway URL the demo runs on it anyway",
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("`%s` is not true or false", v)
			}
			c.Sandbox = &b
			return nil
		},
		get: func(c *Config) string {
			if c.Sandbox == nil {
				return ""
			}
			return strconv.FormatBool(*c.Sandbox)
		},
	},
	strOpt("sandbox-listen", "address of the embedded sandbox gateway", func(c *Config) *string { return &c.SandboxListen }),
	strOpt("sandbox-public-url", "public base URL of the embedded sandbox (payment page links); derived from the request when empty", func(c *Config) *string { return &c.SandboxPublicURL }),
	strOpt("sandbox-state", "JSON file the embedded sandbox keeps its payments in across restarts (empty: memory only); "+
		"payment ids never repeat either way", func(c *Config) *string { return &c.SandboxState }),
	strOpt("database", "SQLite file path, or a postgres:// DSN", func(c *Config) *string { return &c.Database }),
	strOpt("log-level", "debug, info, warn or error", func(c *Config) *string { return &c.LogLevel }),
	strOpt("log-format", "json or console", func(c *Config) *string { return &c.LogFormat }),
	intOpt("log-buffer", "bytes of log lines buffered, flushed every second and at exit (0: each line written at once)", func(c *Config) *int { return &c.LogBuffer }),
	intOpt("rest-max-idle-conns", "idle keep-alive connections kept to the REST gateway (about the expected concurrent calls)", func(c *Config) *int { return &c.RESTMaxIdleConns }),
	durOpt("return-status-timeout", "time the status read gets when a customer returns from the gateway; past it a page says the payment may have gone through, with a reload link", func(c *Config) *time.Duration { return &c.ReturnStatusTimeout }),
	intOpt("default-goid", "merchant paymentMethodList answers for (it has no input); the first merchant when 0", func(c *Config) *int64 { return &c.DefaultGoID }),
	strOpt("trusted-proxies", "CIDRs of the proxies and load balancers whose X-Forwarded-For is believed for merchants' allowed_networks", func(c *Config) *string { return &c.TrustedProxies }),
	strOpt("admin-listen", "address of the admin listener (/metrics, /livez, /readyz, /debug/pprof, status page at /); off: none", func(c *Config) *string { return &c.AdminListen }),
	strOpt("otlp-endpoint", "OTLP/HTTP endpoint traces are sent to (e.g. http://127.0.0.1:4318); none when empty", func(c *Config) *string { return &c.OTLPEndpoint }),
}

// Merchant variables (environment only).
const (
	envGoID            = envPrefix + "GOID"
	envClientID        = envPrefix + "CLIENT_ID"
	envClientSecret    = envPrefix + "CLIENT_SECRET"
	envSecureKey       = envPrefix + "SECURE_KEY"
	envNotificationURL = envPrefix + "NOTIFICATION_URL"
	envCurrency        = envPrefix + "CURRENCY"
	envLang            = envPrefix + "LANG"
	envVoidRecurrent   = envPrefix + "VOID_RECURRENT_REPLY"
	envAllowedNetworks = envPrefix + "ALLOWED_NETWORKS"
	envBasicUser       = envPrefix + "BASIC_USER"
	envBasicPassword   = envPrefix + "BASIC_PASSWORD"
)

// loadConfig reads the configuration from args, the environment and the
// config file, and validates it. Usage goes to out. Errors never contain a
// secret.
func loadConfig(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("soapbridge", flag.ContinueOnError)
	fs.SetOutput(out)
	flags := map[string]string{}
	for _, s := range settings {
		usage := fmt.Sprintf("%s (env %s)", s.help, s.env())
		if d := s.get(&cfg); d != "" && d != "0" {
			usage += fmt.Sprintf(" (default %q)", d)
		}
		if s.isBool {
			fs.BoolFunc(s.flag, usage, func(v string) error { flags[s.flag] = v; return nil })
		} else {
			fs.Func(s.flag, usage, func(v string) error { flags[s.flag] = v; return nil })
		}
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: soapbridge [flags]              serve\n"+
			"       soapbridge check [flags]        check the configuration, the store, the gateway and each merchant's credentials\n"+
			"       soapbridge healthcheck [flags]  GET /healthz of the bridge running with this configuration (exit 0 when healthy)\n"+
			"       soapbridge report [-goid N] [-since DURATION] [-format text|json|html] [flags]  the migration report from the usage record\n\nServes the legacy EPaymentServiceV2 SOAP interface over the payment gateway's REST interface.\n"+
			"Precedence: defaults < config file < environment < flags. Merchants come from the config file or from\n"+
			"%s, %s, %s, %s, %s, %s, %s, %s.\n\nFlags:\n",
			envGoID, envClientID, envClientSecret, envSecureKey, envNotificationURL, envCurrency, envLang, envVoidRecurrent)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, flagError(err)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (settings are flags: -listen=:8080)", fs.Arg(0))
	}

	path, ok := flags["config"]
	if !ok {
		path = getenv(envPrefix + "CONFIG")
	}
	if path != "" {
		if err := readFile(&cfg, path); err != nil {
			return cfg, err
		}
		cfg.ConfigFile = path
	}
	for _, s := range settings {
		if v := getenv(s.env()); v != "" {
			if err := s.set(&cfg, v); err != nil {
				return cfg, fmt.Errorf("%s: %w", s.env(), err)
			}
		}
	}
	for _, s := range settings {
		if v, ok := flags[s.flag]; ok {
			if err := s.set(&cfg, v); err != nil {
				return cfg, fmt.Errorf("flag -%s: %w", s.flag, err)
			}
		}
	}
	if err := mergeMerchantEnv(&cfg, getenv); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

// mergeMerchantEnv applies the SOAPBRIDGE_ merchant variables: they
// override the file's merchant of the same goid, or add one. Without any
// merchant in the file they alone define it; with the embedded sandbox
// they override the demo merchant's defaults.
func mergeMerchantEnv(cfg *Config, getenv func(string) string) error {
	var m Merchant
	set := false
	if len(cfg.Merchants) > 0 {
		cfg.merchantSources = append(cfg.merchantSources, "merchants of the config file")
	}
	defer func() {
		for _, name := range merchantEnv() {
			if getenv(name) != "" {
				cfg.merchantSources = append(cfg.merchantSources, name)
			}
		}
	}()
	if v := getenv(envGoID); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("%s: goid must be a positive integer, got %q", envGoID, v)
		}
		m.GoID, set = n, true
	}
	for _, f := range []struct {
		env string
		p   *string
	}{
		{envClientID, &m.ClientID}, {envClientSecret, &m.ClientSecret}, {envSecureKey, &m.SecureKey},
		{envNotificationURL, &m.NotificationURL}, {envCurrency, &m.Currency}, {envLang, &m.Lang},
		{envVoidRecurrent, &m.VoidRecurrentReply}, {envAllowedNetworks, &m.AllowedNetworks},
		{envBasicUser, &m.BasicUser}, {envBasicPassword, &m.BasicPassword},
	} {
		if v := getenv(f.env); v != "" {
			*f.p, set = v, true
		}
	}

	switch {
	case len(cfg.Merchants) == 0 && cfg.GatewayURL == "":
		cfg.Merchants = []Merchant{overlay(demoMerchant, m)}
		cfg.Demo = true
	case len(cfg.Merchants) == 0:
		if set {
			cfg.Merchants = []Merchant{m}
		}
	case !set:
	case m.GoID == 0 && len(cfg.Merchants) == 1:
		cfg.Merchants[0] = overlay(cfg.Merchants[0], m)
	case m.GoID == 0:
		return fmt.Errorf("the %s variables are set but %s is not: set it to choose which of the %d merchants of the config file they apply to",
			envPrefix+"*", envGoID, len(cfg.Merchants))
	default:
		for i := range cfg.Merchants {
			if cfg.Merchants[i].GoID == m.GoID {
				cfg.Merchants[i] = overlay(cfg.Merchants[i], m)
				return nil
			}
		}
		cfg.Merchants = append(cfg.Merchants, m)
	}
	return nil
}

// overlay returns base with the non-empty fields of o.
func overlay(base, o Merchant) Merchant {
	if o.GoID != 0 {
		base.GoID = o.GoID
	}
	for _, f := range []struct{ dst, src *string }{
		{&base.ClientID, &o.ClientID}, {&base.ClientSecret, &o.ClientSecret}, {&base.SecureKey, &o.SecureKey},
		{&base.NotificationURL, &o.NotificationURL}, {&base.Currency, &o.Currency}, {&base.Lang, &o.Lang},
		{&base.VoidRecurrentReply, &o.VoidRecurrentReply}, {&base.AllowedNetworks, &o.AllowedNetworks},
		{&base.BasicUser, &o.BasicUser}, {&base.BasicPassword, &o.BasicPassword},
	} {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	return base
}

// validate normalizes c (merchant currency and language defaults and case,
// URL trailing slashes) and reports every problem at once. Messages name
// the setting and never show a secret.
func (c *Config) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen: %q is not host:port %s", c.Listen, keys("listen"))
	}
	if c.PublicURL != "" {
		if err := checkHTTPURL(c.PublicURL, false); err != nil {
			bad("public URL: %v %s", err, keys("public-url"))
		}
		c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	}
	if !strings.HasPrefix(c.SOAPPath, "/") || strings.ContainsAny(c.SOAPPath, "?# ") || c.SOAPPath == "/" || c.SOAPPath == "/healthz" {
		bad("SOAP path: %q must be a path like /axis/EPaymentServiceV2 %s", c.SOAPPath, keys("soap-path"))
	}
	if u, err := url.Parse(c.ServiceNamespace); err != nil || u.Scheme == "" {
		bad("service namespace: %q is not an absolute URI %s", c.ServiceNamespace, keys("service-namespace"))
	}
	if c.MaxBodyBytes <= 0 {
		bad("max body bytes must be positive %s", keys("max-body-bytes"))
	}
	if c.MaxConns < 0 || c.MaxConnsPerIP < 0 {
		bad("connection caps must not be negative (0 means no cap) %s %s", keys("max-connections"), keys("max-connections-per-ip"))
	}
	if c.RateLimit < 0 || c.RateBurst < 0 {
		bad("rate limit and burst must not be negative (0 means no limit) %s %s", keys("rate-limit"), keys("rate-burst"))
	}
	if c.MaxDepth < 0 || c.MaxRefs < 0 {
		bad("max depth and max refs must not be negative (0 means the default)")
	}
	if c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 {
		bad("timeouts must not be negative (0 means none)")
	}
	c.checkDeadlines(bad)
	errs = append(errs, c.checkSandboxChoice()...)
	if c.ReturnStatusTimeout <= 0 || c.ReturnStatusTimeout > c.WriteTimeout && c.WriteTimeout > 0 {
		bad("return status timeout: %v must be positive and within the write timeout (%v)", c.ReturnStatusTimeout, c.WriteTimeout)
	}
	if c.GatewayURL != "" {
		if err := checkHTTPURL(c.GatewayURL, false); err != nil {
			bad("gateway URL: %v %s", err, keys("gateway-url"))
		}
		if c.PublicURL == "" {
			bad("public URL is required with a real gateway: the gateway sends customers and notifications back to the bridge under it %s", keys("public-url"))
		}
	} else {
		if _, _, err := net.SplitHostPort(c.SandboxListen); err != nil {
			bad("sandbox listen: %q is not host:port %s", c.SandboxListen, keys("sandbox-listen"))
		}
		if c.SandboxPublicURL != "" {
			if err := checkHTTPURL(c.SandboxPublicURL, false); err != nil {
				bad("sandbox public URL: %v %s", err, keys("sandbox-public-url"))
			}
			c.SandboxPublicURL = strings.TrimRight(c.SandboxPublicURL, "/")
		}
	}
	if _, err := access.ParseNetworks(c.TrustedProxies); err != nil {
		bad("trusted proxies: %v %s", err, keys("trusted-proxies"))
	}
	if c.AdminListen != "" && c.AdminListen != "off" {
		if _, _, err := net.SplitHostPort(c.AdminListen); err != nil {
			bad("admin listen: %q is not host:port (or off) %s", c.AdminListen, keys("admin-listen"))
		}
	}
	if c.OTLPEndpoint != "" {
		if err := checkHTTPURL(c.OTLPEndpoint, false); err != nil {
			bad("OTLP endpoint: %v %s", err, keys("otlp-endpoint"))
		}
	}
	if strings.TrimSpace(c.Database) == "" {
		bad("database must name an SQLite file or a postgres:// DSN %s", keys("database"))
	}
	if _, err := zapcore.ParseLevel(c.LogLevel); err != nil {
		bad("log level: %q is not debug, info, warn or error %s", c.LogLevel, keys("log-level"))
	}
	if c.LogBuffer < 0 || c.LogBuffer > 64<<20 {
		bad("log buffer: %d is not within 0..64 MiB", c.LogBuffer)
	}
	if c.RESTMaxIdleConns < 1 || c.RESTMaxIdleConns > 1<<16 {
		bad("rest max idle conns: %d is not within 1..65536", c.RESTMaxIdleConns)
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		bad("log format: %q is not json or console %s", c.LogFormat, keys("log-format"))
	}

	if len(c.Merchants) == 0 {
		bad("no merchant configured: list merchants in the config file (%sCONFIG) or set %s, %s, %s and %s",
			envPrefix, envGoID, envClientID, envClientSecret, envSecureKey)
	}
	seen := map[int64]bool{}
	for i := range c.Merchants {
		m := &c.Merchants[i]
		name := fmt.Sprintf("merchant %d", m.GoID)
		if m.GoID <= 0 {
			name = fmt.Sprintf("merchant #%d", i+1)
		} else if seen[m.GoID] {
			bad("%s: listed twice", name)
		}
		seen[m.GoID] = true
		m.Normalize()
		for _, p := range m.Problems() {
			bad("%s: %s (%s / %s)", name, p.Msg, p.Field, merchantEnvByKey[p.Field])
		}
	}
	if c.DefaultGoID != 0 && !seen[c.DefaultGoID] {
		bad("default goid %d is not a configured merchant %s", c.DefaultGoID, keys("default-goid"))
	}
	var window time.Duration
	for _, m := range c.Merchants {
		window = max(window, m.ReplayWindow)
		if least := operations.MinReplayWindow(c.CallDeadline); m.ReplayWindow > 0 && m.ReplayWindow <= least {
			bad("merchant %d: replay_window %v must be longer than the call deadline plus 30s (%v): a repeat of a call still under way would act again", m.GoID, m.ReplayWindow, least)
		}
	}
	if err := c.Retention().Validate(window); err != nil {
		bad("retention: %s", strings.TrimPrefix(err.Error(), "store: "))
	}
	return errors.Join(errs...)
}

// keys names a setting in every notation a user may have set it in:
// "(file key / variable / flag)".
func keys(flag string) string {
	for _, s := range settings {
		if s.flag == flag {
			return fmt.Sprintf("(%s / %s / -%s)", s.fileKey(), s.env(), s.flag)
		}
	}
	panic("keys: no setting " + flag)
}

// checkDeadlines checks the call deadline against the timeouts around it
// and fills the default shutdown timeout.
func (c *Config) checkDeadlines(bad func(string, ...any)) {
	if c.CallDeadline <= 0 || c.RESTTimeout <= 0 {
		bad("call deadline and REST timeout must be positive")
		return
	}
	// After a lost reply at the deadline, reconciliation may take one more
	// REST timeout before the answer: that too must fit before the write
	// timeout cuts the connection.
	if c.WriteTimeout > 0 && c.CallDeadline+c.RESTTimeout >= c.WriteTimeout {
		bad("call deadline %v plus the REST timeout %v must be shorter than the write timeout %v: after a reply lost at the deadline, reconciliation takes up to one REST timeout more, and the answer must be written before the connection is cut",
			c.CallDeadline, c.RESTTimeout, c.WriteTimeout)
	}
	if c.CallDeadline <= c.RESTTimeout {
		bad("call deadline %v must be longer than the REST timeout %v: a money-moving POST starts only with the REST timeout left, so no capture or refund could ever be made", c.CallDeadline, c.RESTTimeout)
	}
	switch {
	case c.ShutdownTimeout == 0:
		c.ShutdownTimeout = c.CallDeadline + shutdownMargin
	case c.ShutdownTimeout < c.CallDeadline:
		bad("shutdown timeout %v is shorter than the call deadline %v: SIGTERM would cut calls in flight (a capture could happen with no reply to the e-shop)", c.ShutdownTimeout, c.CallDeadline)
	}
	if c.PurgeInterval < 0 {
		bad("purge interval must not be negative (0: never purge)")
	}
	if c.UsageFlushInterval < 0 || c.UsageFlushInterval > 0 && c.UsageFlushInterval < time.Second {
		bad("usage flush interval %v must be 0 (no usage record) or at least 1s %s", c.UsageFlushInterval, keys("usage-flush-interval"))
	}
}

// Retention is the store retention of c: store.DefaultRetention for what
// c leaves at 0.
func (c *Config) Retention() store.Retention {
	r := store.DefaultRetention()
	for _, f := range []struct{ dst, src *time.Duration }{
		{&r.Delivered, &c.RetainDelivered}, {&r.Dead, &c.RetainDead}, {&r.Ledger, &c.RetainLedger}, {&r.Sessions, &c.RetainSessions},
	} {
		if *f.src != 0 {
			*f.dst = *f.src
		}
	}
	return r
}

// checkHTTPURL accepts an absolute http(s) URL; a query only when
// withQuery. Messages never quote the URL (it may carry credentials).
func checkHTTPURL(s string, withQuery bool) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http(s) URL")
	}
	if u.Fragment != "" || u.User != nil || (u.RawQuery != "" && !withQuery) {
		return errors.New("must not carry user info, a fragment or a query")
	}
	return nil
}

// merchantEnv names the variable of each merchant setting, for messages.
var merchantEnvByKey = map[string]string{
	"goid": envGoID, "client_id": envClientID, "client_secret": envClientSecret, "secure_key": envSecureKey,
	"currency": envCurrency, "lang": envLang, "notification_url": envNotificationURL, "replay_window": "config file only",
	"void_recurrent_reply": envVoidRecurrent, "allowed_networks": envAllowedNetworks, "basic_user": envBasicUser,
	"basic_password": envBasicPassword, "rate_limit": "config file only",
	"rate_burst": "config file only",
}
