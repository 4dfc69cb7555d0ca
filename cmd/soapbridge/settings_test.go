package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
)

// coreWiring are the fields of operations.Config that main.go wires (or
// leaves to their defaults); every other field is a setting that core()
// copies from the Config field of the same name.
var coreWiring = []string{"Gateway", "Store", "Logger", "Outbox", "Now", "OnBadSignature", "Observer", "Usage", "OnUnmappedChannel", "OnRefusal", "MoneyHold", "OverlapsLater"}

// A core setting cannot be left out of core() (and so be silently
// ignored): each field of operations.Config is wiring, or a Config field
// of the same name and type that core() copies.
func TestEveryCoreSettingReachesTheCore(t *testing.T) {
	var cfg Config
	cv, ct := reflect.ValueOf(&cfg).Elem(), reflect.TypeFor[operations.Config]()
	var settings []string
	for f := range ct.Fields() {
		if slices.Contains(coreWiring, f.Name) {
			continue
		}
		mine, ok := reflect.TypeFor[Config]().FieldByName(f.Name)
		if !assert.True(t, ok && mine.Type == f.Type, "operations.Config.%s is neither wiring (coreWiring) nor a setting of Config (same name and type)", f.Name) {
			continue
		}
		settings = append(settings, f.Name)
		v := cv.FieldByIndex(mine.Index) // a distinct, non-zero value
		switch v.Kind() {
		case reflect.String:
			v.SetString("value-" + f.Name)
		case reflect.Int, reflect.Int64:
			v.SetInt(int64(100 + len(settings)))
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		default:
			t.Fatalf("give Config.%s (%s) a value here", f.Name, v.Kind())
		}
	}
	core := cfg.core()
	for _, name := range settings {
		assert.Equal(t, cv.FieldByName(name).Interface(), reflect.ValueOf(core).FieldByName(name).Interface(), "core() does not copy %s", name)
	}
	for _, name := range coreWiring {
		_, ok := ct.FieldByName(name)
		assert.True(t, ok, "coreWiring lists %s, which operations.Config no longer has", name)
	}
}

// Every setting is used: its field is read somewhere in the package
// besides its default and its validation (a setting read nowhere would be
// accepted and ignored).
func TestEverySettingIsRead(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	read := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		require.NoError(t, err)
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && slices.Contains([]string{"defaultConfig", "validate"}, fn.Name.Name) {
				continue
			}
			ast.Inspect(d, func(n ast.Node) bool {
				if s, ok := n.(*ast.SelectorExpr); ok {
					read[s.Sel.Name] = true
				}
				return true
			})
		}
	}
	for f := range reflect.TypeFor[Config]().Fields() {
		if key := f.Tag.Get("yaml"); key != "" && key != "-" {
			assert.True(t, read[f.Name], "setting %s (Config.%s) is read nowhere", key, f.Name)
		}
	}
}

// docs/configuration.md's tables and soapbridge.example.yaml list every
// setting: the bridge's by its flag, a merchant's by its file key.
func TestDocsListEverySetting(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	example, err := os.ReadFile("../../soapbridge.example.yaml")
	require.NoError(t, err)
	var rows []string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "|") {
			rows = append(rows, l)
		}
	}
	inTable := func(s string) bool {
		return slices.ContainsFunc(rows, func(r string) bool { return strings.Contains(r, s) })
	}
	inExample := func(key string) bool {
		return regexp.MustCompile(`(?m)^\s*#?\s*(- )?` + key + `:`).Match(example)
	}
	for _, s := range fieldsOf(&Config{}) {
		assert.True(t, inTable("`-"+flagName(s.key)+"`"), "docs/configuration.md: no table row has `-%s`", flagName(s.key))
		assert.True(t, inExample(s.key), "soapbridge.example.yaml lacks %s (commented out is fine)", s.key)
	}
	for _, s := range fieldsOf(&Merchant{}) {
		assert.True(t, inTable("`"+s.key+"`"), "docs/configuration.md: no merchant row has `%s`", s.key)
		assert.True(t, inExample(s.key), "soapbridge.example.yaml lacks the merchant key %s (commented out is fine)", s.key)
	}
}

// docs/configuration.md's default column says the real defaults: each
// setting's default (after the derived ones, as -h shows them) equals the
// row's backquoted value in the order of its flags ("`30s` / `60s`"), or
// its zero value where the row says none, not set or first merchant.
func TestDocsDefaultsAreTheDefaults(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	cfg, err := loadConfig(nil, envOf(nil))
	require.NoError(t, err)
	byFlag := map[string]setting{}
	for _, s := range fieldsOf(&cfg) {
		byFlag["-"+flagName(s.key)] = s
	}
	quoted := regexp.MustCompile("`([^`]*)`")
	checked := 0
	for _, row := range strings.Split(string(doc), "\n") {
		cells := strings.Split(row, " | ")
		if !strings.HasPrefix(row, "| `-") || len(cells) < 4 || strings.HasPrefix(row, "| `-config`") {
			continue
		}
		flags := quoted.FindAllStringSubmatch(cells[0], -1)
		def, _, _ := strings.Cut(cells[3], ";")
		var values []string
		for _, m := range quoted.FindAllStringSubmatch(def, -1) {
			values = append(values, m[1])
		}
		if len(values) == 0 {
			values = strings.Fields(def)[:1]
		}
		if !assert.Len(t, values, len(flags), "%s: one default per flag", cells[0]) {
			continue
		}
		for i, f := range flags {
			s, ok := byFlag[f[1]]
			if !assert.True(t, ok, "%s is no flag", f[1]) {
				continue
			}
			field := reflect.ValueOf(s.ptr).Elem()
			want := reflect.Zero(field.Type()).Interface()
			if !slices.Contains([]string{"none", "not", "first"}, values[i]) {
				v, err := decodeHook(nil, field.Type(), values[i])
				if !assert.NoError(t, err, "%s: default %q", f[1], values[i]) {
					continue
				}
				want = reflect.ValueOf(v).Convert(field.Type()).Interface()
			}
			assert.Equal(t, want, field.Interface(), "docs/configuration.md: the default of %s", f[1])
			checked++
		}
	}
	assert.Equal(t, len(byFlag), checked, "every setting's default is checked")
}
