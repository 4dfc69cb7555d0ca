package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The config file is read as a YAML tree rather than decoded into Config
// directly, so that every key goes through the same setters as the
// SOAPBRIDGE_ variables and the flags (one parser, one wording of errors),
// and errors name the key and line as the user wrote them.

// fileKey is the config file key of a setting: the flag name with '_'.
func (s setting) fileKey() string { return strings.ReplaceAll(s.flag, "-", "_") }

// fileSettings are the settings a config file may set, by key. "config"
// names the file itself and is not one of them.
func fileSettings() map[string]setting {
	m := map[string]setting{}
	for _, s := range settings {
		if s.flag != "config" {
			m[s.fileKey()] = s
		}
	}
	return m
}

const merchantsKey = "merchants"

func readFile(cfg *Config, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file sets nothing
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("config file %s, line %d: expected settings as `key: value` lines", path, root.Line)
	}
	known := fileSettings()
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range known {
			if !yield(k) {
				return
			}
		}
	})
	keys = append(keys, merchantsKey)

	var errs []error
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("config file %s, line %d: %s", path, k.Line, fmt.Sprintf(format, a...)))
		}
		if seen[k.Value] {
			bad("`%s` is set twice", k.Value)
			continue
		}
		seen[k.Value] = true
		if k.Value == merchantsKey {
			ms, err := decodeMerchants(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("config file %s: %w", path, err))
				continue
			}
			cfg.Merchants = ms
			continue
		}
		s, ok := known[k.Value]
		if !ok {
			bad("%s", notASetting(k.Value, keys, "`%s`"))
			continue
		}
		val, ok := scalar(v)
		if !ok {
			bad("`%s` takes a single value, not a list or a map", k.Value)
			continue
		}
		if err := s.set(cfg, val); err != nil {
			bad("%s: %v", k.Value, err)
		}
	}
	return errors.Join(errs...)
}

// scalar is the text of a scalar node ("" for null).
func scalar(n *yaml.Node) (string, bool) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return "", false
	}
	if n.Tag == "!!null" {
		return "", true
	}
	return n.Value, true
}

// merchantFields maps the config file keys of a merchant (the yaml tags
// of Merchant, including those of inlined structs such as the gateway
// account) to the field's index path.
func merchantFields() (map[string][]int, []string) {
	m := map[string][]int{}
	var keys []string
	var walk func(t reflect.Type, path []int)
	walk = func(t reflect.Type, path []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			idx := append(append([]int(nil), path...), i)
			if name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if name == "" || name == "-" {
				continue
			}
			m[name] = idx
			keys = append(keys, name)
		}
	}
	walk(reflect.TypeFor[Merchant](), nil)
	return m, keys
}

func decodeMerchants(n *yaml.Node) ([]Merchant, error) {
	if v, ok := scalar(n); ok && v == "" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: `merchants` is a list, one entry per merchant (- goid: ...)", n.Line)
	}
	fields, keys := merchantFields()
	var errs []error
	ms := make([]Merchant, 0, len(n.Content))
	for i, item := range n.Content {
		if item.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Errorf("line %d: merchant #%d: expected `key: value` entries (goid, client_id, ...)", item.Line, i+1))
			continue
		}
		var m Merchant
		rv := reflect.ValueOf(&m).Elem()
		for j := 0; j+1 < len(item.Content); j += 2 {
			k, v := item.Content[j], item.Content[j+1]
			bad := func(format string, a ...any) {
				errs = append(errs, fmt.Errorf("line %d: merchant #%d: %s", k.Line, i+1, fmt.Sprintf(format, a...)))
			}
			idx, ok := fields[k.Value]
			if !ok {
				bad("%s", notASetting(k.Value, keys, "`%s`"))
				continue
			}
			val, ok := scalar(v)
			if !ok {
				bad("`%s` takes a single value, not a list or a map", k.Value)
				continue
			}
			f := rv.FieldByIndex(idx)
			switch {
			case f.Type() == reflect.TypeFor[time.Duration]():
				d, err := time.ParseDuration(strings.TrimSpace(val))
				if err != nil {
					bad("%s: `%s` is not a duration, write e.g. `24h`", k.Value, val)
					continue
				}
				f.SetInt(int64(d))
			case f.Kind() == reflect.String:
				f.SetString(val)
			case f.Kind() == reflect.Float64:
				x, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
				if err != nil {
					bad("%s: `%s` is not a number", k.Value, val)
					continue
				}
				f.SetFloat(x)
			case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
				n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
				if err != nil {
					bad("%s: `%s` is not an integer", k.Value, val)
					continue
				}
				f.SetInt(n)
			default:
				bad("%s: unsupported field type %s", k.Value, f.Kind())
			}
		}
		ms = append(ms, m)
	}
	return ms, errors.Join(errs...)
}
