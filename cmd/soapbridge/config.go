package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"gopkg.in/yaml.v3"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
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
	ReadTimeout      time.Duration `yaml:"read_timeout"`
	WriteTimeout     time.Duration `yaml:"write_timeout"`
	IdleTimeout      time.Duration `yaml:"idle_timeout"`
	ShutdownTimeout  time.Duration `yaml:"shutdown_timeout"`
	GatewayURL       string        `yaml:"gateway_url"`
	SandboxListen    string        `yaml:"sandbox_listen"`
	SandboxPublicURL string        `yaml:"sandbox_public_url"`
	Database         string        `yaml:"database"`
	LogLevel         string        `yaml:"log_level"`
	LogFormat        string        `yaml:"log_format"`
	LogBuffer        int           `yaml:"log_buffer"`          // bytes of log lines buffered (flushed every second and at exit); 0 writes each line at once
	RESTMaxIdleConns int           `yaml:"rest_max_idle_conns"` // idle keep-alive connections kept to the gateway
	DefaultGoID      int64         `yaml:"default_goid"`
	Merchants        []Merchant    `yaml:"merchants"`

	// ConfigFile is where the settings above were read from ("" if none).
	ConfigFile string `yaml:"-"`
	// Demo is set when the embedded sandbox's demo merchant was configured
	// from the built-in defaults and the SOAPBRIDGE_ merchant variables.
	Demo bool `yaml:"-"`
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

func defaultConfig() Config {
	return Config{
		Listen:           ":8080",
		SOAPPath:         "/axis/EPaymentServiceV2",
		ServiceNamespace: wsdl.DefaultServiceNamespace,
		MaxBodyBytes:     1 << 20,
		MaxDepth:         64,
		MaxRefs:          1000,
		ReadTimeout:      30 * time.Second,
		WriteTimeout:     60 * time.Second,
		IdleTimeout:      120 * time.Second,
		ShutdownTimeout:  20 * time.Second,
		SandboxListen:    "127.0.0.1:8090",
		Database:         "soapbridge.db",
		LogLevel:         "info",
		LogFormat:        "json",
		LogBuffer:        defaultLogBuffer,
		RESTMaxIdleConns: restbackend.DefaultMaxIdleConns,
	}
}

// setting is one server setting settable by file, environment and flag.
type setting struct {
	flag string // flag name; the variable is SOAPBRIDGE_ + upper-cased, '-' → '_'
	help string
	set  func(c *Config, v string) error
	get  func(c *Config) string
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
			d, err := time.ParseDuration(strings.TrimSpace(v))
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
	strOpt("public-url", "the bridge's public base URL (WSDL address, gateway callbacks); derived from the request when empty", func(c *Config) *string { return &c.PublicURL }),
	strOpt("soap-path", "path of the SOAP endpoint (WSDL at ?wsdl)", func(c *Config) *string { return &c.SOAPPath }),
	strOpt("service-namespace", "WSDL target namespace and reply body namespace", func(c *Config) *string { return &c.ServiceNamespace }),
	intOpt("max-body-bytes", "largest request body accepted", func(c *Config) *int64 { return &c.MaxBodyBytes }),
	intOpt("max-depth", "deepest XML nesting of a SOAP request", func(c *Config) *int { return &c.MaxDepth }),
	intOpt("max-refs", "most multi-reference (id=) elements of a SOAP request", func(c *Config) *int { return &c.MaxRefs }),
	durOpt("read-timeout", "time to read a whole request", func(c *Config) *time.Duration { return &c.ReadTimeout }),
	durOpt("write-timeout", "time to handle a request and write its reply", func(c *Config) *time.Duration { return &c.WriteTimeout }),
	durOpt("idle-timeout", "keep-alive time of an idle connection", func(c *Config) *time.Duration { return &c.IdleTimeout }),
	durOpt("shutdown-timeout", "time in-flight requests get to finish on SIGTERM/SIGINT", func(c *Config) *time.Duration { return &c.ShutdownTimeout }),
	strOpt("gateway-url", "REST gateway base URL (e.g. https://gw.sandbox.gopay.com/api); empty starts the embedded sandbox", func(c *Config) *string { return &c.GatewayURL }),
	strOpt("sandbox-listen", "address of the embedded sandbox gateway", func(c *Config) *string { return &c.SandboxListen }),
	strOpt("sandbox-public-url", "public base URL of the embedded sandbox (payment page links); derived from the request when empty", func(c *Config) *string { return &c.SandboxPublicURL }),
	strOpt("database", "SQLite file path, or a postgres:// DSN", func(c *Config) *string { return &c.Database }),
	strOpt("log-level", "debug, info, warn or error", func(c *Config) *string { return &c.LogLevel }),
	strOpt("log-format", "json or console", func(c *Config) *string { return &c.LogFormat }),
	intOpt("log-buffer", "bytes of log lines buffered, flushed every second and at exit (0: each line written at once)", func(c *Config) *int { return &c.LogBuffer }),
	intOpt("rest-max-idle-conns", "idle keep-alive connections kept to the REST gateway (about the expected concurrent calls)", func(c *Config) *int { return &c.RESTMaxIdleConns }),
	intOpt("default-goid", "merchant paymentMethodList answers for (it has no input); the first merchant when 0", func(c *Config) *int64 { return &c.DefaultGoID }),
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
		fs.Func(s.flag, usage, func(v string) error { flags[s.flag] = v; return nil })
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: soapbridge [flags]\n\nServes the legacy EPaymentServiceV2 SOAP interface over the payment gateway's REST interface.\n"+
			"Precedence: defaults < config file < environment < flags. Merchants come from the config file or from\n"+
			"%s, %s, %s, %s, %s, %s, %s, %s.\n\nFlags:\n",
			envGoID, envClientID, envClientSecret, envSecureKey, envNotificationURL, envCurrency, envLang, envVoidRecurrent)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
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

func readFile(cfg *Config, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true) // a misspelt key is an error, not a silent default
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// mergeMerchantEnv applies the SOAPBRIDGE_ merchant variables: they
// override the file's merchant of the same goid, or add one. Without any
// merchant in the file they alone define it; with the embedded sandbox
// they override the demo merchant's defaults.
func mergeMerchantEnv(cfg *Config, getenv func(string) string) error {
	var m Merchant
	set := false
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
		{envVoidRecurrent, &m.VoidRecurrentReply},
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
		{&base.VoidRecurrentReply, &o.VoidRecurrentReply},
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
		bad("listen: %q is not host:port", c.Listen)
	}
	if c.PublicURL != "" {
		if err := checkHTTPURL(c.PublicURL, false); err != nil {
			bad("public URL: %v", err)
		}
		c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	}
	if !strings.HasPrefix(c.SOAPPath, "/") || strings.ContainsAny(c.SOAPPath, "?# ") || c.SOAPPath == "/" || c.SOAPPath == "/healthz" {
		bad("SOAP path: %q must be a path like /axis/EPaymentServiceV2", c.SOAPPath)
	}
	if u, err := url.Parse(c.ServiceNamespace); err != nil || u.Scheme == "" {
		bad("service namespace: %q is not an absolute URI", c.ServiceNamespace)
	}
	if c.MaxBodyBytes <= 0 {
		bad("max body bytes must be positive")
	}
	if c.MaxDepth < 0 || c.MaxRefs < 0 {
		bad("max depth and max refs must not be negative (0 means the default)")
	}
	if c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 {
		bad("timeouts must not be negative (0 means none)")
	}
	if c.ShutdownTimeout <= 0 {
		bad("shutdown timeout must be positive")
	}
	if c.GatewayURL != "" {
		if err := checkHTTPURL(c.GatewayURL, false); err != nil {
			bad("gateway URL: %v", err)
		}
		if c.PublicURL == "" {
			bad("public URL is required with a real gateway: the gateway sends customers and notifications back to the bridge under it")
		}
	} else {
		if _, _, err := net.SplitHostPort(c.SandboxListen); err != nil {
			bad("sandbox listen: %q is not host:port", c.SandboxListen)
		}
		if c.SandboxPublicURL != "" {
			if err := checkHTTPURL(c.SandboxPublicURL, false); err != nil {
				bad("sandbox public URL: %v", err)
			}
			c.SandboxPublicURL = strings.TrimRight(c.SandboxPublicURL, "/")
		}
	}
	if strings.TrimSpace(c.Database) == "" {
		bad("database must name an SQLite file or a postgres:// DSN")
	}
	if _, err := zapcore.ParseLevel(c.LogLevel); err != nil {
		bad("log level: %q is not debug, info, warn or error", c.LogLevel)
	}
	if c.LogBuffer < 0 || c.LogBuffer > 64<<20 {
		bad("log buffer: %d is not within 0..64 MiB", c.LogBuffer)
	}
	if c.RESTMaxIdleConns < 1 || c.RESTMaxIdleConns > 1<<16 {
		bad("rest max idle conns: %d is not within 1..65536", c.RESTMaxIdleConns)
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		bad("log format: %q is not json or console", c.LogFormat)
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
			bad("%s: %s (%s / %s)", name, p.Msg, p.Field, merchantEnv[p.Field])
		}
	}
	if c.DefaultGoID != 0 && !seen[c.DefaultGoID] {
		bad("default goid %d is not a configured merchant", c.DefaultGoID)
	}
	return errors.Join(errs...)
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
var merchantEnv = map[string]string{
	"goid": envGoID, "client_id": envClientID, "client_secret": envClientSecret, "secure_key": envSecureKey,
	"currency": envCurrency, "lang": envLang, "notification_url": envNotificationURL,
	"void_recurrent_reply": envVoidRecurrent,
}
