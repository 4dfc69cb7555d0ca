package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

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

func levenshtein(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
