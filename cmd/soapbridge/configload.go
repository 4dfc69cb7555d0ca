package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/v2"
	"go.yaml.in/yaml/v3"
)

// How a setting is read: the config file, the SOAPBRIDGE_ variables and the
// flags each give a map of file keys to text (the file's YAML scalars as
// written); koanf merges the three in that order, and mapstructure decodes
// the result over the defaults through decodeHook, whose messages are the
// bridge's own. A decoding error names its key (mapstructure.DecodeError),
// so it is told in the notation of the layer that gave the value.

// envPrefix prefixes every environment variable of the bridge.
const envPrefix = "SOAPBRIDGE_"

// envName and flagName derive a setting's variable and flag from its file
// key: read_timeout is SOAPBRIDGE_READ_TIMEOUT and -read-timeout.
func envName(key string) string  { return envPrefix + strings.ToUpper(key) }
func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// fileOnlyMerchantKeys have no variable: rate_limit and rate_burst are the
// bridge-wide settings' variables, and replay_window never had one.
var fileOnlyMerchantKeys = []string{"replay_window", "rate_limit", "rate_burst"}

// setting is one configuration key bound to its field.
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

// flagValue is a setting as a flag: Set keeps the text, decoded with the
// file's and the variables' values.
type flagValue struct {
	key, typ, def string
	set           map[string]any
}

func (f *flagValue) String() string     { return f.def }
func (f *flagValue) Set(s string) error { f.set[f.key] = s; return nil }
func (f *flagValue) IsBoolFlag() bool   { return f.typ == "" }

var durationType = reflect.TypeFor[time.Duration]()

// typeWord names a value of t in -h (short) or in errors.
func typeWord(t reflect.Type, short bool) string {
	k := map[bool]string{true: "duration", false: t.Kind().String()}[t == durationType]
	w := map[string][2]string{"string": {"string", "a string"}, "int": {"int", "an integer"}, "int64": {"int", "an integer"},
		"float64": {"float", "a number"}, "bool": {"", "true or false"}, "ptr": {"", "true or false"}, // sandbox, *bool: nil when not set
		"duration": {"duration", "a duration (e.g. 30s, 2m)"}, "slice": {"list", "a list"}, "struct": {"mapping", "a mapping (key: value)"}}[k]
	return w[map[bool]int{true: 0, false: 1}[short]]
}

// flags is the bridge's flag set: -config (configFile by default),
// -version and every setting of cfg, whose values show as the defaults.
// The flags given are collected in set, by file key.
func flags(cfg *Config, configFile string) (fs *flag.FlagSet, path *string, version *bool, set map[string]any) {
	fs, set = flag.NewFlagSet("soapbridge", flag.ContinueOnError), map[string]any{}
	fs.SetOutput(io.Discard)
	path = fs.String("config", configFile, "YAML (or JSON) file with settings and merchants (env SOAPBRIDGE_CONFIG; not a file key)")
	version = fs.Bool("version", false, "print the version, the VCS revision and the Go version")
	for _, s := range fieldsOf(cfg) {
		v := reflect.ValueOf(s.ptr).Elem()
		def := fmt.Sprint(reflect.Indirect(v))
		if v.Kind() == reflect.Pointer && v.IsNil() { // sandbox: not set
			def = ""
		}
		fs.Var(&flagValue{s.key, typeWord(v.Type(), true), def, set}, flagName(s.key),
			fmt.Sprintf("%s (file %s, env %s)", s.help, s.key, envName(s.key)))
	}
	return fs, path, version, set
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
	fs, path, version, flagged := flags(&cfg, getenv(envPrefix+"CONFIG"))
	if err := fs.Parse(args); err != nil {
		return cfg, unknownFlag(fs, args, err)
	}
	switch {
	case *version:
		return cfg, errVersion
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected argument %q (settings are flags: -listen=:8080)", fs.Arg(0))
	}
	env, file, lines := fromEnv(fieldsOf(&cfg), getenv), map[string]any(nil), map[string]int{}
	if *path != "" {
		var err error
		if file, err = readFile(*path, lines); err != nil {
			return cfg, err
		}
		cfg.ConfigFile = *path
	}
	err := decode(&cfg, func(key string, unknown bool) string {
		top := key[:strings.IndexAny(key+".", ".[")]
		switch {
		case flagged[top] != nil:
			return "flag -" + flagName(top) + ": "
		case env[top] != nil:
			return envName(top) + ": "
		case unknown:
			return fmt.Sprintf("config file %s, line %d: ", *path, lines[key])
		}
		return fmt.Sprintf("config file %s, line %d: %s: ", *path, lines[key], key)
	}, file, env, flagged)
	if err == nil {
		err = mergeMerchantEnv(&cfg, getenv)
	}
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

// layer is one source of settings for koanf: a map of file keys.
type layer map[string]any

func (l layer) Read() (map[string]any, error) { return l, nil }
func (l layer) ReadBytes() ([]byte, error)    { return nil, errors.New("not bytes") }

// fromEnv maps the key of each of settings whose variable getenv gives to
// its value.
func fromEnv(settings []setting, getenv func(string) string) map[string]any {
	env := map[string]any{}
	for _, s := range settings {
		if v := getenv(envName(s.key)); v != "" {
			env[s.key] = v
		}
	}
	return env
}

// decode merges layers (later ones win) with koanf, decodes them over dst
// and restates each problem in the notation of where its value came from
// (where gives the prefix of a key's message). A key that is no setting
// gets the closest one as a suggestion.
func decode(dst any, where func(key string, unknown bool) string, layers ...map[string]any) error {
	k, md := koanf.New("."), mapstructure.Metadata{}
	for _, l := range layers {
		k.Load(layer(l), nil) //nolint:errcheck // a map cannot fail to load
	}
	err := k.UnmarshalWithConf("", dst, koanf.UnmarshalConf{Tag: "yaml", DecoderConfig: &mapstructure.DecoderConfig{
		DecodeHook: decodeHook, Metadata: &md, Squash: true, MatchName: func(a, b string) bool { return a == b }}})
	var errs []error
	for q := []error{err}; len(q) > 0; q = q[1:] { // mapstructure joins the errors of each struct and list
		var de *mapstructure.DecodeError
		switch j, ok := q[0].(interface{ Unwrap() []error }); {
		case ok:
			q = append(q, j.Unwrap()...)
		case errors.As(q[0], &de):
			errs = append(errs, fmt.Errorf("%s%v", where(de.Name(), false), de.Unwrap()))
		case q[0] != nil:
			errs = append(errs, q[0])
		}
	}
	slices.Sort(md.Unused)
	for _, key := range md.Unused {
		known := append(keysOf(fieldsOf(dst)), "merchants")
		if strings.Contains(key, ".") { // merchants[2].secret_key
			known = keysOf(fieldsOf(&Merchant{}))
		}
		errs = append(errs, errors.New(where(key, true)+notASetting(key[strings.LastIndex(key, ".")+1:], known, "`%s`")))
	}
	return errors.Join(errs...)
}

// decodeHook turns a value's text into the field's type, or says what it
// should have been.
func decodeHook(_, to reflect.Type, data any) (any, error) {
	s, scalar := data.(string)
	_, list := data.([]any)
	var err error
	switch kind := to.Kind(); {
	case kind == reflect.Pointer, kind == reflect.Slice && list, kind == reflect.Struct && !scalar && !list, kind == reflect.String && scalar:
		return data, nil
	case !scalar:
		return nil, fmt.Errorf("%s is not %s", map[bool]string{true: "a list", false: "a mapping"}[list], typeWord(to, false))
	case to == durationType:
		if data, err = time.ParseDuration(s); err != nil {
			if _, e := strconv.ParseFloat(s, 64); e == nil { // a bare number: seconds? milliseconds?
				return nil, fmt.Errorf("`%s` is not a duration, write `%ss` (or another unit: 500ms, 2m, 1h)", s, s)
			}
		}
	case kind == reflect.Int || kind == reflect.Int64:
		data, err = strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	case kind == reflect.Float64:
		data, err = strconv.ParseFloat(strings.TrimSpace(s), 64)
	case kind == reflect.Bool:
		data, err = strconv.ParseBool(strings.TrimSpace(s))
	default: // a scalar where a list or a mapping belongs
		err = errors.ErrUnsupported
	}
	if err != nil {
		return nil, fmt.Errorf("`%s` is not %s", s, typeWord(to, false))
	}
	return data, nil
}

// unknownFlag restates err, fs's answer to args, when a flag in args is
// none: it suggests the closest one, and the variable of a merchant setting.
func unknownFlag(fs *flag.FlagSet, args []string, err error) error {
	var known []string
	fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || slices.Contains(append(known, "h", "help", ""), name) {
			continue
		}
		hint := notASetting(name, known, "-%s")
		if env := envName(strings.ReplaceAll(name, "-", "_")); slices.Contains(knownEnv(), env) {
			hint += fmt.Sprintf(" (merchant settings are not flags, their secrets would show in ps: use %s or the config file)", env)
		}
		return errors.New(hint)
	}
	return err
}

// mergeMerchantEnv applies the merchant variables. They override the file's
// merchant of SOAPBRIDGE_GOID (or its only one), or add one; without any
// merchant in the file they define it, and without a gateway URL either
// they override the demo merchant's values.
func mergeMerchantEnv(cfg *Config, getenv func(string) string) error {
	if len(cfg.Merchants) > 0 {
		cfg.merchantSources = append(cfg.merchantSources, "merchants of the config file")
	}
	given := fromEnv(merchantEnv(&Merchant{}), getenv)
	for _, s := range merchantEnv(&Merchant{}) {
		if given[s.key] != nil {
			cfg.merchantSources = append(cfg.merchantSources, envName(s.key))
		}
	}
	goid, err := strconv.ParseInt(strings.TrimSpace(getenv(envName("goid"))), 10, 64)
	if given["goid"] != nil && err != nil {
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
	return decode(&cfg.Merchants[t], func(key string, _ bool) string { return envName(key) + ": " }, given)
}

// readFile reads the config file (YAML or JSON) as maps, lists and the
// scalars' text, and notes the line of each value by its key path.
func readFile(path string, lines map[string]int) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &map[string]any{}); err != nil { // bad YAML, a key given twice, no mapping
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if _ = yaml.Unmarshal(b, &doc); len(doc.Content) == 0 { // an empty file sets nothing
		return nil, nil
	}
	var plain func(n *yaml.Node, path string) any
	plain = func(n *yaml.Node, path string) any {
		lines[path] = n.Line
		switch n.Kind {
		case yaml.AliasNode:
			return plain(n.Alias, path)
		case yaml.MappingNode:
			var kv map[string]yaml.Node
			n.Decode(&kv) //nolint:errcheck // decoded whole above; this resolves merge keys (<<: *defaults)
			m := map[string]any{}
			for key, v := range kv {
				m[key] = plain(&v, strings.TrimPrefix(path+"."+key, "."))
			}
			return m
		case yaml.SequenceNode:
			l := make([]any, len(n.Content))
			for i, c := range n.Content {
				l[i] = plain(c, fmt.Sprintf("%s[%d]", path, i))
			}
			return l
		}
		return map[bool]any{true: nil, false: n.Value}[n.ShortTag() == "!!null"]
	}
	m, _ := plain(doc.Content[0], "").(map[string]any)
	return m, nil
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
	fs, _, _, _ := flags(&d, "")
	fs.VisitAll(func(f *flag.Flag) { // as flag.PrintDefaults, with the settings' types
		typ, _ := flag.UnquoteUsage(f)
		if v, ok := f.Value.(*flagValue); ok {
			typ = v.typ
		}
		fmt.Fprintf(w, "  -%s\n    \t%s", strings.TrimSpace(f.Name+" "+typ), f.Usage)
		if !slices.Contains([]string{"", "0", "0s", "false"}, f.DefValue) {
			fmt.Fprintf(w, map[bool]string{true: " (default %q)", false: " (default %s)"}[typ == "string"], f.DefValue)
		}
		fmt.Fprintln(w)
	})
	vars := keysOf(merchantEnv(&Merchant{}))
	for i, k := range vars {
		vars[i] = envName(k)
	}
	fmt.Fprintf(w, "\nMerchants come from the config file (merchants: - goid: …), or for one merchant from\n%s;\n"+
		"never from flags (ps would show their secrets). Without any, the demo merchant runs on the embedded sandbox.\n", strings.Join(vars, ", "))
}

// names gives each key in every notation the operator may have set it in:
// " (log_format / SOAPBRIDGE_LOG_FORMAT / -log-format)". A merchant's key
// (merchants[1].secure_key) has no flag, and a file-only one no variable.
func names(keys ...string) string {
	var out []string
	for _, k := range keys {
		_, field, merchant := strings.Cut(k, "].")
		switch {
		case k == "merchants":
			out = append(out, "merchants in the config file, or "+envName("goid")+" and the other merchant variables")
		case merchant && slices.Contains(fileOnlyMerchantKeys, field):
			out = append(out, k+" in the config file")
		case merchant:
			out = append(out, k+" / "+envName(field))
		default:
			out = append(out, k+" / "+envName(k)+" / -"+flagName(k))
		}
	}
	return " (" + strings.Join(out, "; ") + ")"
}

// notASetting says that name is not one of known, in the notation of the
// place it came from (quote formats a name: "`%s`", "-%s", "%s"), and
// suggests the closest known name when one is close enough to be a typo.
func notASetting(name string, known []string, quote string) string {
	msg := fmt.Sprintf(quote+" is not a setting", name)
	if s := closest(name, known); s != "" {
		msg += fmt.Sprintf("; did you mean "+quote+"?", s)
	}
	return msg
}

// closest returns the known name most likely meant by name, or "". Case
// and the '-'/'_' spelling are ignored; a name that extends or shortens a
// known one (listen_address for listen) counts as close.
func closest(name string, known []string) string {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "-", "_")) }
	best, bestD := "", 1<<30
	for _, k := range known {
		n, kn := norm(name), norm(k)
		d, limit := levenshtein(n, kn), max(2, len(kn)/3)
		if strings.HasPrefix(n, kn) || strings.HasPrefix(kn, n) {
			limit = d // a prefix relation is close at any distance
		}
		if d <= limit && d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// levenshtein is the edit distance of a and b, one row at a time.
func levenshtein(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := range len(a) {
		diag := row[0] // row[j] of the row before, for j+1
		row[0] = i + 1
		for j := range len(b) {
			sub := diag + 1
			if a[i] == b[j] {
				sub = diag
			}
			diag, row[j+1] = row[j+1], min(row[j+1]+1, row[j]+1, sub)
		}
	}
	return row[len(b)]
}

// knownEnv are the bridge's variables.
func knownEnv() []string {
	known := append(keysOf(fieldsOf(&Config{})), append(keysOf(merchantEnv(&Merchant{})), "config")...)
	for i, k := range known {
		known[i] = envName(k)
	}
	return known
}

// envNotOurs are SOAPBRIDGE_ variables the project's own tests and tools
// read; the bridge ignores them instead of calling them typos.
var envNotOurs = []string{envPrefix + "E2E_BINARY", envPrefix + "ARTIFACTS"}

// checkEnvNames refuses SOAPBRIDGE_ variables that are no setting: a
// misspelt SOAPBRIDGE_GATEWAY_ULR would otherwise be ignored in silence,
// as a misspelt file key would be.
func checkEnvNames(environ []string) error {
	known := knownEnv()
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix) && !slices.Contains(known, name) && !slices.Contains(envNotOurs, name) {
			errs = append(errs, errors.New(notASetting(name, known, "%s")))
		}
	}
	return errors.Join(errs...)
}
