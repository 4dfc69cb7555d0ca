package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// envPrefix prefixes every environment variable of the bridge.
const envPrefix = "SOAPBRIDGE_"

// envName and flagName derive a setting's variable and flag from its file
// key: read_timeout is SOAPBRIDGE_READ_TIMEOUT and -read-timeout.
func envName(key string) string  { return envPrefix + strings.ToUpper(key) }
func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// fileOnlyMerchantKeys have no variable: rate_limit and rate_burst are the
// bridge-wide settings' variables, and replay_window never had one.
var fileOnlyMerchantKeys = []string{"replay_window", "rate_limit", "rate_burst"}

// setting is one field of a Config or a Merchant, found by its yaml tag.
type setting struct {
	key, help string
	ptr       any // *string, *int, *int64, *float64, *time.Duration, *bool or **bool
}

// fieldsOf lists the fields of the struct p points to that have a yaml key,
// those of inlined structs (a merchant's account and access rules)
// included, bound to p.
func fieldsOf(p any) []setting {
	v := reflect.ValueOf(p).Elem()
	var out []setting
	for _, f := range reflect.VisibleFields(v.Type()) {
		if key, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); key != "" && key != "-" && key != "merchants" {
			out = append(out, setting{key, f.Tag.Get("help"), v.FieldByIndex(f.Index).Addr().Interface()})
		}
	}
	return out
}

func keysOf(settings []setting) []string {
	keys := make([]string, len(settings))
	for i, s := range settings {
		keys[i] = s.key
	}
	return keys
}

// merchantEnv lists the merchant settings a variable can set, bound to m.
func merchantEnv(m *Merchant) []setting {
	return slices.DeleteFunc(fieldsOf(m), func(s setting) bool { return slices.Contains(fileOnlyMerchantKeys, s.key) })
}

// bind makes each setting a flag of fs bound to its field: the flag package
// parses flags and variables alike, and -h shows types and defaults.
func bind(fs *flag.FlagSet, settings []setting) {
	for _, s := range settings {
		name, help := flagName(s.key), fmt.Sprintf("%s (file %s, env %s)", s.help, s.key, envName(s.key))
		switch p := s.ptr.(type) {
		case *string:
			fs.StringVar(p, name, *p, help)
		case *time.Duration:
			fs.DurationVar(p, name, *p, help)
		case *int:
			fs.IntVar(p, name, *p, help)
		case *int64:
			fs.Int64Var(p, name, *p, help)
		case *float64:
			fs.Float64Var(p, name, *p, help)
		case *bool:
			fs.BoolVar(p, name, *p, help)
		case **bool: // nil: not set
			fs.BoolFunc(name, help, func(v string) error { b, err := strconv.ParseBool(v); *p = &b; return err })
		}
	}
}

// setEnv sets each setting of fs whose variable getenv gives.
func setEnv(fs *flag.FlagSet, getenv func(string) string) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := envName(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(name); v != "" && f.Name != "config" && f.Name != "version" && fs.Set(f.Name, v) != nil {
			errs = append(errs, fmt.Errorf("%s: %s", name, badValue(f, v)))
		}
	})
	return errors.Join(errs...)
}

// badValue says what v, given for f, should have been.
func badValue(f *flag.Flag, v string) string {
	typ, _ := flag.UnquoteUsage(f)
	if _, err := strconv.ParseFloat(v, 64); err == nil && typ == "duration" {
		return fmt.Sprintf("`%s` is not a duration, write `%ss` (or another unit: 500ms, 2m, 1h)", v, v) // seconds? milliseconds?
	}
	return fmt.Sprintf("`%s` is not %s", v, map[string]string{"duration": "a duration (e.g. 30s, 2m)", "int": "an integer",
		"float": "a number", "": "true or false"}[typ])
}

// flags is the bridge's flag set bound to cfg: -config (configFile by
// default), -version and every setting.
func flags(cfg *Config, configFile string) (fs *flag.FlagSet, path *string, version *bool) {
	fs = flag.NewFlagSet("soapbridge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	path = fs.String("config", configFile, "YAML (or JSON) file with settings and merchants (env SOAPBRIDGE_CONFIG; not a file key)")
	version = fs.Bool("version", false, "print the version, the VCS revision and the Go version")
	bind(fs, fieldsOf(cfg))
	return fs, path, version
}

// errVersion is loadConfig's answer to -version.
var errVersion = errors.New("version asked for")

// loadConfig reads the configuration: defaults, then the config file, then
// the SOAPBRIDGE_ variables (getenv), then the flags in args, and validates
// it. It prints nothing and changes nothing but the Config it returns, so
// it can run again while the bridge serves. -h gives flag.ErrHelp, -version
// errVersion. Errors never contain a secret.
func loadConfig(args []string, getenv func(string) string) (Config, error) {
	cfg := defaultConfig()
	fs, path, version := flags(&cfg, getenv(envPrefix+"CONFIG"))
	// A first pass finds -config and refuses bad flags before anything is
	// read; the flags are applied again last, over the file and variables.
	if err := fs.Parse(args); err != nil {
		return cfg, flagError(fs, err)
	}
	switch {
	case *version:
		return cfg, errVersion
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected argument %q (settings are flags: -listen=:8080)", fs.Arg(0))
	}
	cfg = defaultConfig()
	if *path != "" {
		if err := readFile(&cfg, *path); err != nil {
			return cfg, err
		}
		cfg.ConfigFile = *path
	}
	if err := setEnv(fs, getenv); err != nil {
		return cfg, err
	}
	fs.Parse(args) //nolint:errcheck // parsed without error above
	if err := mergeMerchantEnv(&cfg, getenv); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

// mergeMerchantEnv applies the merchant variables. They override the file's
// merchant of SOAPBRIDGE_GOID (or its only one), or add one; without any
// merchant in the file they define it, and without a gateway URL either
// they override the demo merchant's values.
func mergeMerchantEnv(cfg *Config, getenv func(string) string) error {
	if len(cfg.Merchants) > 0 {
		cfg.merchantSources = append(cfg.merchantSources, "merchants of the config file")
	}
	given := map[string]string{}
	for _, s := range merchantEnv(&Merchant{}) {
		if v := getenv(envName(s.key)); v != "" {
			given[s.key] = v
			cfg.merchantSources = append(cfg.merchantSources, envName(s.key))
		}
	}
	goid, err := strconv.ParseInt(strings.TrimSpace(given["goid"]), 10, 64)
	if given["goid"] != "" && err != nil {
		return fmt.Errorf("%s: `%s` is not an integer", envName("goid"), given["goid"])
	}
	t := 0 // the merchant the variables apply to
	switch i := slices.IndexFunc(cfg.Merchants, func(m Merchant) bool { return m.GoID == goid }); {
	case len(cfg.Merchants) == 0 && cfg.GatewayURL == "":
		cfg.Merchants, cfg.Demo = []Merchant{demoMerchant}, true
	case len(given) == 0:
		return nil
	case goid == 0 && len(cfg.Merchants) > 1:
		return fmt.Errorf("the %s merchant variables are set but %s is not: set it to choose which of the %d merchants of the config file they apply to",
			envPrefix+"*", envName("goid"), len(cfg.Merchants))
	case goid == 0 && len(cfg.Merchants) == 1:
	case i >= 0:
		t = i
	default:
		cfg.Merchants, t = append(cfg.Merchants, Merchant{}), len(cfg.Merchants)
	}
	fs := flag.NewFlagSet("merchant", flag.ContinueOnError)
	bind(fs, merchantEnv(&cfg.Merchants[t]))
	return setEnv(fs, getenv)
}

// readFile decodes the config file into cfg: YAML (or JSON), known keys
// only.
func readFile(cfg *Config, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && err != io.EOF { // io.EOF: an empty file sets nothing
		return fileError(path, b, err)
	}
	return nil
}

// The decoder's messages that fileError restates in the settings' terms.
var (
	unknownKey = regexp.MustCompile("^line (\\d+): field (.+) not found in type (\\S+)$")
	wrongType  = regexp.MustCompile("^line (\\d+): (cannot unmarshal !!(\\w+)(?: `(.*)`)? into (\\S+))$")
)

// fileError names the file, the line and the key of each problem the
// decoder found in b, and suggests the setting meant for a key that is none.
func fileError(path string, b []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	errs := make([]error, len(te.Errors))
	for i, e := range te.Errors {
		if m := unknownKey.FindStringSubmatch(e); m != nil {
			fields := append(fieldsOf(&Config{}), setting{key: "merchants"})
			if m[3] == "operations.Merchant" {
				fields = fieldsOf(&Merchant{})
			}
			e = fmt.Sprintf("line %s: %s", m[1], notASetting(m[2], keysOf(fields), "`%s`"))
		} else if m := wrongType.FindStringSubmatch(e); m != nil {
			line, _ := strconv.Atoi(m[1])
			if m[5] == "time.Duration" && m[3] != "str" { // a bare number: seconds? milliseconds?
				m[2] = fmt.Sprintf("`%s` is not a duration, write `%ss`", m[4], m[4])
			}
			e = fmt.Sprintf("line %d: %s: %s", line, keyAt(b, line, strings.TrimSuffix(m[4], "...")), m[2])
		}
		errs[i] = fmt.Errorf("config file %s, %s", path, e)
	}
	return errors.Join(errs...)
}

// keyAt is the path (read_timeout, merchants[0].goid) of the first key
// whose value is on line of the YAML in b and starts with value.
func keyAt(b []byte, line int, value string) string {
	var doc yaml.Node
	yaml.Unmarshal(b, &doc) //nolint:errcheck // decoded once already
	var find func(n *yaml.Node, path string) string
	find = func(n *yaml.Node, path string) string {
		for i, c := range n.Content {
			p := path
			switch {
			case n.Kind == yaml.MappingNode && i%2 == 0:
				continue
			case n.Kind == yaml.MappingNode:
				p = strings.TrimPrefix(path+"."+n.Content[i-1].Value, ".")
			case n.Kind == yaml.SequenceNode:
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			if k := find(c, p); k != "" {
				return k
			}
			if n.Kind == yaml.MappingNode && c.Line == line && strings.HasPrefix(c.Value, value) {
				return p
			}
		}
		return ""
	}
	return find(&doc, "")
}

// printUsage writes what -h shows.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: soapbridge [flags]              serve
       soapbridge check [flags]        check the configuration, the store (read only), the gateway and each merchant's credentials
       soapbridge healthcheck [flags]  GET /healthz of the bridge running with this configuration (exit 0 when healthy)
       soapbridge migrate [flags]      apply the database schema's pending migrations and say which (check only reads)
       soapbridge version              print the version, the VCS revision and the Go version (also -version)
       soapbridge report [-goid N] [-since DURATION] [-format text|json|html] [flags]
                                       the migration report: what each merchant still uses of SOAP V2 and its REST equivalent

Serves the legacy EPaymentServiceV2 SOAP interface over the payment gateway's REST interface.
Precedence: defaults < config file < environment < flags.

Flags:
`)
	d := defaultConfig()
	fs, _, _ := flags(&d, "")
	fs.SetOutput(w)
	fs.PrintDefaults()
	vars := keysOf(merchantEnv(&Merchant{}))
	for i, k := range vars {
		vars[i] = envName(k)
	}
	fmt.Fprintf(w, "\nMerchants come from the config file (merchants: - goid: …), or for one merchant from\n%s;\n"+
		"never from flags (ps would show their secrets). Without any, the demo merchant runs on the embedded sandbox.\n", strings.Join(vars, ", "))
}
