package kubernetes_test

// The PrometheusRule: its structure (a reviewed subset of the operator's
// CRD), and that every metric its expressions name is one the bridge
// exports, with the labels they match on. A full PromQL parser would pull
// in Prometheus itself: the selectors are read by a small scanner instead,
// which knows the functions, aggregations and keywords of PromQL well
// enough to leave only metric names and their matchers.

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/store"
)

// prometheusRule is the subset of monitoring.coreos.com/v1 PrometheusRule
// this base uses, field names as in the operator's CRD.
type prometheusRule struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		Groups []struct {
			Name     string `json:"name"`
			Interval string `json:"interval,omitempty"`
			Rules    []rule `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

type rule struct {
	Alert         string            `json:"alert,omitempty"`
	Record        string            `json:"record,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// selector is a vector selector of an expression: a metric name and its
// label matchers.
type selector struct {
	name     string
	matchers []matcher
}

type matcher struct{ label, op, value string }

// promqlWords are PromQL's aggregations and keywords: never metric names,
// even when not followed by a parenthesis.
var promqlWords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
	"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true,
}

// labelLists are the keywords followed by a parenthesised list of label
// names (not matchers).
var labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

func isIdentStart(r byte) bool { return r == '_' || r == ':' || unicode.IsLetter(rune(r)) }
func isIdent(r byte) bool      { return isIdentStart(r) || unicode.IsDigit(rune(r)) }

// selectors scans a PromQL expression for its vector selectors.
func selectors(expr string) ([]selector, error) {
	var out []selector
	i := 0
	skipSpace := func() {
		for i < len(expr) && unicode.IsSpace(rune(expr[i])) {
			i++
		}
	}
	closing := func(open, close byte) error { // i at open: move past the matching close
		depth := 0
		for ; i < len(expr); i++ {
			switch expr[i] {
			case '"', '\'', '`':
				q := expr[i]
				for i++; i < len(expr) && expr[i] != q; i++ {
					if expr[i] == '\\' {
						i++
					}
				}
			case open:
				depth++
			case close:
				depth--
				if depth == 0 {
					i++
					return nil
				}
			}
		}
		return fmt.Errorf("unbalanced %c in %q", open, expr)
	}
	for i < len(expr) {
		c := expr[i]
		switch {
		case unicode.IsSpace(rune(c)):
			i++
		case c == '"' || c == '\'' || c == '`':
			start := i
			for i++; i < len(expr) && expr[i] != c; i++ {
				if expr[i] == '\\' {
					i++
				}
			}
			if i >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d in %q", start, expr)
			}
			i++
		case c == '[':
			if err := closing('[', ']'); err != nil {
				return nil, err
			}
		case unicode.IsDigit(rune(c)) || c == '.' && i+1 < len(expr) && unicode.IsDigit(rune(expr[i+1])):
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++ // a number or a duration (1h, 0.05, 1e3)
			}
		case c == '{':
			start := i
			if err := closing('{', '}'); err != nil {
				return nil, err
			}
			ms, err := matchers(expr[start+1 : i-1])
			if err != nil {
				return nil, err
			}
			sel := selector{matchers: ms}
			for _, m := range ms {
				if m.label == "__name__" && m.op == "=" {
					sel.name = m.value
				}
			}
			if sel.name == "" {
				return nil, fmt.Errorf("a selector without a metric name in %q", expr)
			}
			out = append(out, sel)
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
			word := expr[start:i]
			skipSpace()
			switch {
			case labelLists[word]:
				if i < len(expr) && expr[i] == '(' {
					if err := closing('(', ')'); err != nil {
						return nil, err
					}
				}
			case promqlWords[word], i < len(expr) && expr[i] == '(':
				// an aggregation, keyword or function
			default:
				sel := selector{name: word}
				if i < len(expr) && expr[i] == '{' {
					open := i
					if err := closing('{', '}'); err != nil {
						return nil, err
					}
					ms, err := matchers(expr[open+1 : i-1])
					if err != nil {
						return nil, err
					}
					sel.matchers = ms
				}
				out = append(out, sel)
			}
		default:
			i++ // operators, parentheses, commas
		}
	}
	return out, nil
}

var matcherRE = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)`)

// matchers parses the inside of a selector's braces.
func matchers(s string) ([]matcher, error) {
	var out []matcher
	for strings.TrimSpace(s) != "" {
		m := matcherRE.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("not label matchers: %q", s)
		}
		out = append(out, matcher{m[1], m[2], m[3]})
		s = s[len(m[0]):]
	}
	return out, nil
}

func TestSelectorScanner(t *testing.T) {
	got, err := selectors(`sum by (namespace, job) (rate(a_total{result="server_fault"}[5m])) / ignoring(x) ` +
		`sum without (pod) (rate(a_total[5m] offset 1h)) > 0.05 and on (job) max(b) unless {__name__="c", d!~"e,f"} ` +
		`or histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m]))) > bool 1e3`)
	require.NoError(t, err)
	var names []string
	for _, s := range got {
		names = append(names, s.name)
	}
	assert.Equal(t, []string{"a_total", "a_total", "b", "c", "h_bucket"}, names)
	assert.Equal(t, []matcher{{"result", "=", "server_fault"}}, got[0].matchers)
	for _, bad := range []string{`rate(x[5m)`, `x{a="b"`, `x{a=b}`, `{a="b"}`} {
		_, err := selectors(bad)
		assert.Error(t, err, bad)
	}
}

// exported gathers the series a fully used bridge exports: metric name
// (as a selector names it: histograms as _bucket, _sum, _count) → label
// name → the values seen.
func exported(t *testing.T) map[string]map[string][]string {
	t.Helper()
	m := metrics.New(metrics.Options{Operations: []string{"createPayment", "refundPayment", "paymentStatus", "touch"},
		GoIDs: []int64{8123456789}, MerchantLabels: true, Build: metrics.ReadBuild()})
	m.ObserveCall("paymentStatus", 8123456789, "ok", time.Millisecond)
	m.ObserveGateway("payment status", 200, time.Millisecond)
	m.BadSignature("refundPayment", 8123456789)
	m.SetDependencyUp(metrics.DependencyGateway, true)
	m.SetDependencyUp(metrics.DependencyStore, true)
	m.SetReadiness(func() bool { return true })
	m.SetConnections(func() metrics.ConnStats { return metrics.ConnStats{Open: 1, Max: 10} })
	m.SetOverload(func() metrics.OverloadStats { return metrics.OverloadStats{InProgress: 1, Max: 10} })
	m.SetStoreCounts(store.OutboxCounts{}, store.LedgerCounts{InDoubt: 1, InDoubtByOperation: map[string]int{"refundPayment": 1}})
	m.Store(nil) // the store histograms
	mfs, err := m.Registry.Gather()
	require.NoError(t, err)
	out := map[string]map[string][]string{}
	add := func(name string, s *dto.Metric) {
		if out[name] == nil {
			out[name] = map[string][]string{}
		}
		for _, l := range s.GetLabel() {
			if !slices.Contains(out[name][l.GetName()], l.GetValue()) {
				out[name][l.GetName()] = append(out[name][l.GetName()], l.GetValue())
			}
		}
	}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			if mf.GetType() == dto.MetricType_HISTOGRAM {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					add(mf.GetName()+suffix, s)
				}
				out[mf.GetName()+"_bucket"]["le"] = []string{}
				continue
			}
			add(mf.GetName(), s)
		}
	}
	return out
}

// prometheusSeries are the series Prometheus makes itself for every
// target (with the target's labels), not the bridge.
var prometheusSeries = map[string][]string{"up": {"container", "endpoint", "job", "namespace", "pod", "service"}}

// closedLabels are labels whose values the bridge fixes (not merchants,
// operations or endpoints): a matcher's value must be one it exports.
var closedLabels = map[string]bool{"dependency": true, "result": true, "outcome": true, "state": true, "route": true}

func TestPrometheusRule(t *testing.T) {
	b := loadBase(t)
	pr := get[*prometheusRule](t, b, "soapbridge")
	exp := exported(t)
	runbook, err := os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(runbook), -1) {
		a := strings.ToLower(strings.TrimSpace(m[1]))
		a = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(a, "")
		anchors[strings.ReplaceAll(a, " ", "-")] = true
	}

	require.NotEmpty(t, pr.Spec.Groups)
	seen := map[string]bool{}
	var alerts []string
	for _, g := range pr.Spec.Groups {
		require.NotEmpty(t, g.Name)
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "alerts only (no recording rules to keep in step)")
			assert.Regexp(t, `^Soapbridge[A-Z][A-Za-z]+$`, r.Alert)
			assert.False(t, seen[r.Alert], "%s twice", r.Alert)
			seen[r.Alert] = true
			alerts = append(alerts, r.Alert)
			if r.For != "" {
				d, err := time.ParseDuration(r.For)
				assert.NoError(t, err, "%s: for %q", r.Alert, r.For)
				assert.Positive(t, d, r.Alert)
			}
			assert.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], r.Alert)
			for _, a := range []string{"summary", "description", "runbook"} {
				assert.NotEmpty(t, r.Annotations[a], "%s: annotation %s", r.Alert, a)
			}
			doc, anchor, ok := strings.Cut(r.Annotations["runbook"], "#")
			assert.True(t, ok && doc == "docs/operations.md" && anchors[anchor], "%s: runbook %q is a section of docs/operations.md",
				r.Alert, r.Annotations["runbook"])

			problems, err := checkExpr(exp, r.Expr)
			require.NoError(t, err, r.Alert)
			assert.Empty(t, problems, r.Alert)
		}
	}
	// What the operator must hear of (issue 20): the shared dependencies,
	// money calls in doubt, given-up notifications, replicas out of the
	// Service.
	for _, a := range []string{"SoapbridgeGatewayDown", "SoapbridgeStoreDown", "SoapbridgeMoneyCallInDoubt",
		"SoapbridgeNotificationsDead", "SoapbridgeReplicaNotReady"} {
		assert.Contains(t, alerts, a)
	}
}

// checkExpr lists what in expr the bridge does not export: metrics, their
// labels, and values of the labels the bridge fixes.
func checkExpr(exp map[string]map[string][]string, expr string) ([]string, error) {
	sels, err := selectors(expr)
	if err != nil {
		return nil, err
	}
	if len(sels) == 0 {
		return []string{"no metric"}, nil
	}
	var problems []string
	for _, s := range sels {
		if labels, ok := prometheusSeries[s.name]; ok {
			for _, m := range s.matchers {
				if !slices.Contains(labels, m.label) {
					problems = append(problems, fmt.Sprintf("%s has no label %s", s.name, m.label))
				}
			}
			continue
		}
		labels, ok := exp[s.name]
		if !ok {
			problems = append(problems, "the bridge exports no metric "+s.name)
			continue
		}
		for _, m := range s.matchers {
			values, ok := labels[m.label]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s has no label %s", s.name, m.label))
			case m.op == "=" && closedLabels[m.label] && !slices.Contains(values, m.value):
				problems = append(problems, fmt.Sprintf("%s{%s} is never %q", s.name, m.label, m.value))
			}
		}
	}
	return problems, nil
}

// TestRuleCheckCatchesMistakes: the checks above fail on a misspelt
// metric, a label the metric does not have, and a value it never takes.
func TestRuleCheckCatchesMistakes(t *testing.T) {
	exp := exported(t)
	for expr, want := range map[string]string{
		`soapbridge_dependency_upp{dependency="gateway"} == 0`:                                               "the bridge exports no metric soapbridge_dependency_upp",
		`soapbridge_dependency_up{dependancy="gateway"} == 0`:                                                "soapbridge_dependency_up has no label dependancy",
		`rate(soapbridge_outbox_attempts_total{outcome="died"}[1h]) > 0`:                                     `soapbridge_outbox_attempts_total{outcome} is never "died"`,
		`up{instance_name="x"} == 0`:                                                                         "up has no label instance_name",
		`histogram_quantile(0.9, rate(soapbridge_soap_call_duration_seconds_bucket{operation="touch"}[5m]))`: "",
	} {
		problems, err := checkExpr(exp, expr)
		require.NoError(t, err)
		if want == "" {
			assert.Empty(t, problems, expr)
		} else {
			assert.Equal(t, []string{want}, problems, expr)
		}
	}
}
