package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/operations/usage/report"
	"github.com/legacybridge/soapbridge/store"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata/usage")

const goldenDir = "../../../testdata/usage"

type reportStore interface {
	usage.Store
	report.Store
}

var t0 = time.Date(2031, 3, 4, 10, 0, 0, 0, time.UTC)

const (
	shopPHP  = 8123456789 // a PHP shop with a Java statement job
	shopIdle = 8123456790 // configured, never called
	shopGone = 8000000001 // removed from the configuration, still in the record
)

// knownMix records a fixed mix of calls, as the pipeline and the adapters
// would, into a fresh SQLite store.
func knownMix(t *testing.T) reportStore {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "usage.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	rs := st.(reportStore)
	rec, err := usage.New(usage.Config{Store: rs, Every: time.Hour})
	require.NoError(t, err)

	php := usage.Client{Family: usage.FamilyPHP, Version: "8.2.36"}
	java := usage.Client{Family: usage.FamilyJava, Version: "Java/1.8.0_392"}
	browser := usage.Client{Family: usage.FamilyBrowser}
	bg := context.Background()
	by := func(c usage.Client, e usage.Event) usage.Event { e.Client = c; return e }
	at := func(day, hour int) time.Time { return t0.Add(time.Duration(24*day+hour) * time.Hour) }
	ev := func(goid int64, op string, res usage.Result, when time.Time, fs []usage.Feature, retired ...string) usage.Event {
		return usage.Event{GoID: goid, Operation: op, Result: res, At: when, Features: fs, Retired: retired}
	}
	create := []usage.Feature{usage.FeatureParams, usage.FeaturePaymentChannels, usage.ChannelFeature("cz_kb")}
	rec.Record(bg, by(php, ev(shopPHP, "createPayment", usage.ResultOK, at(0, 1), create, usage.RetiredChannel("cz_vb"))))
	rec.Record(bg, by(php, ev(shopPHP, "createPayment", usage.ResultOK, at(1, 1), create, usage.RetiredChannel("cz_vb"))))
	rec.Record(bg, by(php, ev(shopPHP, "createPayment", usage.ResultRefused, at(1, 2), create)))
	for h := range 3 {
		rec.Record(bg, by(php, ev(shopPHP, "paymentStatus", usage.ResultOK, at(2, h), nil)))
	}
	rec.Record(bg, by(php, ev(shopPHP, "paymentStatus", usage.ResultServerFault, at(2, 5), nil)))
	rec.Record(bg, by(browser, ev(shopPHP, usage.FlowPayFull, usage.ResultOK, at(0, 2), nil)))
	rec.Record(bg, by(browser, ev(shopPHP, usage.FlowPayFull, usage.ResultOK, at(1, 2), nil)))
	rec.Record(bg, by(java, ev(shopPHP, usage.FlowStatement, usage.ResultOK, at(3, 0),
		[]usage.Feature{usage.FeatureStatementNoCurrency, usage.FeatureStatementXLS})))
	rec.Record(bg, by(php, ev(0, "touch", usage.ResultOK, at(0, 0), nil)))
	rec.Record(bg, ev(shopGone, "createBuyer", usage.ResultRefused, at(0, 0), nil, usage.RetiredOperation("createBuyer")))
	require.NoError(t, rec.Flush(context.Background()))
	return rs
}

var now = t0.Add(10*24*time.Hour + 3*time.Hour)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join(goldenDir, name)
	if *update {
		require.NoError(t, os.WriteFile(p, got, 0o644))
		return
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./operations/usage/report -update and review %s", p)
	assert.Equal(t, string(want), string(got), "differs from %s", p)
}

// TestReportOfKnownMix: the counts of a known mix, exactly, and what
// replaces each thing; the JSON and text are golden files (the JSON one is
// the example of the stable shape that docs/migration.md describes).
func TestReportOfKnownMix(t *testing.T) {
	st := knownMix(t)
	r, err := report.Build(context.Background(), st, report.Options{Configured: []int64{shopPHP, shopIdle}, Now: now})
	require.NoError(t, err)

	require.Len(t, r.Merchants, 4)
	assert.Equal(t, []int64{0, shopGone, shopPHP, shopIdle},
		[]int64{r.Merchants[0].GoID, r.Merchants[1].GoID, r.Merchants[2].GoID, r.Merchants[3].GoID})
	m := r.Find(shopPHP)
	require.NotNil(t, m)
	assert.True(t, m.Configured)
	assert.Equal(t, int64(10), m.Calls)
	assert.Equal(t, 7, *m.DaysSinceLastCall, "last call on day 3, report on day 10")
	assert.Equal(t, []string{"Java", "PHP"}, m.Languages)

	ops := map[string]report.Operation{}
	for _, op := range m.Operations {
		ops[op.Name] = op
	}
	assert.Equal(t, []string{"createPayment", "paymentStatus", "pay-full-v2", "get-account-statement"},
		[]string{m.Operations[0].Name, m.Operations[1].Name, m.Operations[2].Name, m.Operations[3].Name}, "table order")
	assert.Equal(t, int64(3), ops["createPayment"].Calls)
	assert.Equal(t, map[string]int64{"refused": 1}, ops["createPayment"].FailuresByKind)
	assert.Equal(t, int64(4), ops["paymentStatus"].Calls)
	assert.Equal(t, int64(1), ops["paymentStatus"].Failures)
	assert.Equal(t, "POST /payments/payment", ops["createPayment"].REST)
	assert.Equal(t, "GET /payments/payment/{id}", ops["paymentStatus"].REST)
	assert.Equal(t, "flow", ops["pay-full-v2"].Kind)
	assert.Equal(t, "POST /accounts/account-statement", ops["get-account-statement"].REST)
	var langs []string
	for _, e := range ops["createPayment"].Examples {
		langs = append(langs, e.Language)
	}
	assert.Equal(t, []string{"Java", "PHP"}, langs, "examples in the shop's languages")

	feats := map[string]report.FeatureUse{}
	for _, f := range m.Features {
		feats[f.Name] = f
	}
	assert.Equal(t, int64(3), feats["p1-p4"].Calls)
	assert.Equal(t, "additional_params", feats["p1-p4"].REST)
	assert.Equal(t, "BANK_ACCOUNT + SWIFT KOMBCZPP", feats["channel cz_kb"].REST)
	assert.Equal(t, "format XLS_A", feats["statement XLS"].REST)
	require.Len(t, m.Retired, 1)
	assert.Equal(t, "channel cz_vb", m.Retired[0].What)
	assert.Equal(t, int64(2), m.Retired[0].Calls)

	idle := r.Find(shopIdle)
	assert.True(t, idle.Configured)
	assert.Nil(t, idle.DaysSinceLastCall, "never called")
	assert.Empty(t, idle.Operations)
	gone := r.Find(shopGone)
	assert.False(t, gone.Configured)
	assert.Equal(t, "operation createBuyer", gone.Retired[0].What)
	assert.Empty(t, gone.Operations[0].Examples, "createBuyer has no call to show")

	var j bytes.Buffer
	require.NoError(t, r.WriteJSON(&j))
	golden(t, "report-v1.json", j.Bytes())
	var back map[string]any
	require.NoError(t, json.Unmarshal(j.Bytes(), &back))
	assert.Equal(t, float64(1), back["version"])

	var txt bytes.Buffer
	require.NoError(t, r.WriteText(&txt))
	golden(t, "report.txt", txt.Bytes())
}

func TestReportOneMerchant(t *testing.T) {
	st := knownMix(t)
	opt := report.Options{Configured: []int64{shopPHP, shopIdle}, Now: now}
	for _, g := range []int64{shopPHP, shopIdle, shopGone} {
		opt.GoID = g
		r, err := report.Build(context.Background(), st, opt)
		require.NoError(t, err)
		require.Len(t, r.Merchants, 1)
		assert.Equal(t, g, r.Merchants[0].GoID)
	}
	opt.GoID = 42
	_, err := report.Build(context.Background(), st, opt)
	require.ErrorIs(t, err, report.ErrUnknownMerchant)
	assert.EqualError(t, err, "goid 42: unknown merchant: it is not configured and has no usage recorded")
}

func TestReportSince(t *testing.T) {
	st := knownMix(t)
	r, err := report.Build(context.Background(), st, report.Options{GoID: shopPHP, Now: now, Since: 8 * 24 * time.Hour})
	require.NoError(t, err)
	m := r.Merchants[0]
	var names []string
	for _, op := range m.Operations {
		names = append(names, op.Name)
	}
	assert.Equal(t, []string{"paymentStatus", "get-account-statement"}, names, "used within the last 8 days (day 2 onwards)")
	assert.Empty(t, m.Retired, "cz_vb was last sent on day 1")
	assert.Equal(t, 7, *m.DaysSinceLastCall)
	require.NotNil(t, r.Since)
}

// Calls a stranger may have sent (refused before verification, or by the
// access rules) count in their operation's calls and failures but move
// neither its first nor its last seen, nor the merchant's; an operation
// only strangers called shows no last call ("never").
func TestReportStrangersMoveNoLastSeen(t *testing.T) {
	st := knownMix(t)
	rec, err := usage.New(usage.Config{Store: st})
	require.NoError(t, err)
	bg := context.Background()
	for _, res := range []usage.Result{usage.ResultUnverified, usage.ResultDenied} {
		rec.Record(bg, usage.Event{GoID: shopPHP, Operation: "paymentStatus", Result: res, At: now.Add(-time.Hour)})
		rec.Record(bg, usage.Event{GoID: shopPHP, Operation: "paymentStatus", Result: res, At: t0.Add(-time.Hour)})
		rec.Record(bg, usage.Event{GoID: shopPHP, Operation: "refundPayment", Result: res, At: now.Add(-time.Hour)})
	}
	require.NoError(t, rec.Flush(bg))
	r, err := report.Build(bg, st, report.Options{GoID: shopPHP, Now: now})
	require.NoError(t, err)
	m := r.Merchants[0]
	ops := map[string]report.Operation{}
	for _, op := range m.Operations {
		ops[op.Name] = op
	}
	day := func(d, h int) time.Time { return t0.Add(time.Duration(24*d+h) * time.Hour) }
	st4 := ops["paymentStatus"]
	assert.Equal(t, int64(8), st4.Calls, "counted")
	assert.Equal(t, map[string]int64{"server_fault": 1, "unverified": 2, "denied": 2}, st4.FailuresByKind)
	assert.Equal(t, day(2, 0), st4.FirstSeen, "the merchant's own first call")
	assert.Equal(t, day(2, 5), st4.LastSeen, "the merchant's own last call")
	refund := ops["refundPayment"]
	assert.Equal(t, int64(2), refund.Calls)
	assert.True(t, refund.FirstSeen.IsZero() && refund.LastSeen.IsZero(), "no call of the merchant's own: %v %v", refund.FirstSeen, refund.LastSeen)
	assert.Equal(t, day(3, 0), *m.LastSeen, "the merchant's last call is its own")
	var text bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	assert.Regexp(t, `refundPayment\s+2 calls.*last never`, text.String())
}

// TestReportHTMLEscapes: client-supplied text (an unknown channel code with
// markup) is escaped; every merchant is linked from the index.
func TestReportHTMLEscapes(t *testing.T) {
	st := knownMix(t)
	rec, err := usage.New(usage.Config{Store: st})
	require.NoError(t, err)
	rec.Record(context.Background(), usage.Event{GoID: shopPHP, Operation: "createPayment", Result: usage.ResultOK, At: now,
		Retired: []string{usage.RetiredChannel(`<script>alert("x")</script>`)}})
	require.NoError(t, rec.Flush(context.Background()))
	r, err := report.Build(context.Background(), st, report.Options{Configured: []int64{shopPHP}, Now: now})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, r.WriteHTML(&b, true))
	page := b.String()
	assert.NotContains(t, page, "<script>")
	assert.Contains(t, page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	for _, m := range r.Merchants {
		id := `goid-` + strings.TrimSpace(jsonNum(m.GoID))
		assert.Contains(t, page, `href="#`+id+`"`)
		assert.Contains(t, page, `id="`+id+`"`)
	}
	assert.Contains(t, page, `href="report.json?goid=8123456789"`)

	r.Stale, r.StaleReason = true, "store: connection refused"
	b.Reset()
	require.NoError(t, r.WriteHTML(&b, false))
	assert.Contains(t, b.String(), "Stale: the store cannot be read now (store: connection refused)")
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }
