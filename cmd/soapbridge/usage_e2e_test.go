package main

// The usage record and the migration report, end to end: a known mix of
// calls from real clients through two bridge processes sharing one
// PostgreSQL schema, then the report's counts, checked exactly, and its
// REST equivalents.

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/operations/usage/report"
)

func TestUsageReportOfKnownMix(t *testing.T) {
	php := requirePHP(t)
	py := requireSuds(t)
	requireJava(t)
	node, chromium := flowBrowser(t)
	phpVersion := toolOutput(t, php, "-r", "echo PHP_VERSION;")
	pyVersion := toolOutput(t, py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])")

	dsn := testenv.PostgresSchema(t)
	gw := startGatewaySandbox(t)
	shop := newFlowShop(t)
	env := withEnv("SOAPBRIDGE_GATEWAY_URL="+gw.URL+"/api", "SOAPBRIDGE_NOTIFICATION_URL="+shop.srv.URL+"/notify",
		// Only the shutdown flushes: what the report shows is then exactly
		// what the processes recorded, whatever the machine's speed.
		"SOAPBRIDGE_USAGE_FLUSH_INTERVAL=1h")
	a, b := startBridge(t, withDB(dsn), env), startBridge(t, withDB(dsn), env)
	shop.bridge = a.URL
	java, cp := axisClasspath(t, b)

	// Replica a: PHP SoapClient (touch, a paid card payment with its status
	// read, an old shop's create naming cz_vb and p1), a customer in
	// Chromium paying through pay-full-v2 and returning.
	var paid []string
	f, err := runPHP(t, php, a, "touch.php")
	require.NoError(t, err)
	f.nonEmpty(t, "touch")
	f, err = runPHP(t, php, a, "scenarios.php", "card_paid")
	require.NoError(t, err)
	f.eq(t, "status.state", "PAID")
	paid = append(paid, f["create.id"])
	f, err = runPHP(t, php, a, "usage.php")
	require.NoError(t, err)
	f.eq(t, "create.result", "CALL_COMPLETED")
	res := flowDrive(t, node, chromium, shop.srv.URL+"/buy/full?order=USAGE-1", shop.srv.URL+"/ok",
		[]flowStep{{Wait: "#pay-card", Click: "#pay-card"}})
	require.True(t, strings.HasPrefix(res.URL, shop.srv.URL+"/ok"), res.URL)
	paid = append(paid, shop.lastReturn(t).Query.Get("paymentSessionId"))

	// Replica b: Axis 1.4 stubs and suds, each a paid card payment with its
	// status read; PHP's createBuyer; the Java library's statement job.
	f, err = runAxis(t, java, cp, b, "card_paid")
	require.NoError(t, err)
	f.eq(t, "status.state", "PAID")
	paid = append(paid, f["create.id"])
	f, err = runSuds(t, py, b, "scenarios.py", "card_paid")
	require.NoError(t, err)
	f.eq(t, "status.state", "PAID")
	paid = append(paid, f["create.id"])
	f, err = runPHP(t, php, b, "scenarios.php", "create_buyer")
	require.NoError(t, err)
	f.eq(t, "buyer.result", "FAILED")
	status, _, body := rawGET(t, b, "java24-statement-no-currency.http")
	require.Equal(t, http.StatusOK, status, body)

	// Every paid payment announced to the shop, then both replicas stop:
	// the shutdown flushes each one's record into the shared schema.
	waitNotifications(t, shop, paid)
	a.Stop()
	b.Stop()
	notifications := int64(countLines(a, `"path":"/callback/notify"`, `"status":200`) + countLines(b, `"path":"/callback/notify"`, `"status":200`))
	require.GreaterOrEqual(t, notifications, int64(len(paid)))

	out, code := runBinary(t, []string{"SOAPBRIDGE_DATABASE=" + dsn}, "report", "-format", "json", "-goid", demoGoID)
	require.Equal(t, 0, code, out)
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Len(t, r.Merchants, 1)
	m := r.Merchants[0]
	ops, clients, features, retired := usageCounts(m)

	// The same report on the admin listener of a third process on the
	// schema, and the cut-over gauge, loaded from the store at its start.
	c := startBridge(t, withDB(dsn), env)
	var viaAdmin report.Report
	getJSON(t, c.AdminURL+"/report.json?goid="+demoGoID, &viaAdmin)
	require.Len(t, viaAdmin.Merchants, 1)
	assert.Equal(t, m, viaAdmin.Merchants[0], "CLI and admin listener report the same")
	page := getText(t, c.AdminURL+"/report")
	assert.Contains(t, page, `<a href="#goid-`+demoGoID+`">goid `+demoGoID+`</a>`)
	require.NotNil(t, m.LastSeen)
	gauge := `soapbridge_legacy_last_call_timestamp_seconds{goid="` + demoGoID + `"} `
	require.Eventually(t, func() bool { return strings.Contains(getText(t, c.AdminURL+"/metrics"), gauge) }, 10*time.Second, 50*time.Millisecond)
	assert.Contains(t, getText(t, c.AdminURL+"/metrics"), gauge+strconv.FormatFloat(float64(m.LastSeen.Unix()), 'g', -1, 64))
	assert.Equal(t, 0, *m.DaysSinceLastCall)

	// What the adapters record: the browser flows, the statement, the
	// gateway's notifications.
	assert.Equal(t, opCount{1, 0}, ops["pay-full-v2"])
	assert.Equal(t, opCount{1, 0}, ops["return"])
	assert.Equal(t, opCount{1, 0}, ops["get-account-statement"])
	assert.Equal(t, opCount{notifications, 0}, ops["notification"])
	assert.Equal(t, int64(2), clients["browser "], "pay-full-v2 and the return, from Chromium")
	assert.Equal(t, int64(1), clients["java Java/1.6.0_45"], "the statement job")
	assert.Equal(t, int64(1), features["statement CSV"])
	assert.Equal(t, int64(1), features["statement without currency"])
	assert.Equal(t, "POST /accounts/account-statement", restOf(m, "get-account-statement"))
	assert.Equal(t, "gw_url", restOf(m, "pay-full-v2"))

	assert.Equal(t, map[string]opCount{
		"createPayment":         {5, 0}, // PHP, the old PHP shop, the flow shop, Axis, suds
		"paymentStatus":         {3, 0},
		"createBuyer":           {1, 1},
		"pay-full-v2":           {1, 0},
		"return":                {1, 0},
		"get-account-statement": {1, 0},
		"notification":          {notifications, 0},
	}, ops)
	assert.Equal(t, 12+notifications, m.Calls)
	assert.Equal(t, map[string]int64{
		"php-soapclient " + phpVersion:    4, // card payment and status, the old shop, createBuyer
		"php-soapclient ":                 1, // the flow shop's createPayment: PHP's dialect, no PHP User-Agent
		"axis 1.4":                        2,
		"suds Python-urllib/" + pyVersion: 2,
		"browser ":                        2,
		"java Java/1.6.0_45":              1,
	}, clients)
	assert.Equal(t, map[string]int64{
		"customerData": 3, "lang": 4, "paymentChannels": 5, "defaultPaymentChannel": 5,
		"channel eu_gp_u": 5, "channel cz_kb": 4, "channel eu_bank": 1, "channel cz_vb": 1, "p1-p4": 1,
		"statement CSV": 1, "statement without currency": 1,
	}, features, "cz_vb (a bank gone) is mapped: a transfer from any bank")
	assert.Equal(t, map[string]int64{"operation createBuyer": 1}, retired)
	assert.Equal(t, []string{"Java", "PHP", "Python"}, m.Languages)

	// The REST equivalents, from the mapping table.
	assert.Equal(t, "POST /payments/payment", restOf(m, "createPayment"))
	assert.Equal(t, "GET /payments/payment/{id}", restOf(m, "paymentStatus"))
	assert.Equal(t, "none", restOf(m, "createBuyer"))
	for _, feat := range m.Features {
		switch feat.Name {
		case "p1-p4":
			assert.Equal(t, "additional_params", feat.REST)
		case "channel cz_kb":
			assert.Equal(t, "BANK_ACCOUNT + SWIFT KOMBCZPP", feat.REST)
		case "customerData":
			assert.Equal(t, "payer.contact", feat.REST)
		}
	}
	var langs []string
	for _, op := range m.Operations {
		if op.Name == "createPayment" {
			for _, e := range op.Examples {
				langs = append(langs, e.Language)
			}
		}
	}
	assert.Equal(t, []string{"Java", "PHP", "Python"}, langs, "createPayment's example in each of the shop's languages")
	var all report.Report
	out, code = runBinary(t, []string{"SOAPBRIDGE_DATABASE=" + dsn}, "report", "-format", "json")
	require.Equal(t, 0, code, out)
	require.NoError(t, json.Unmarshal([]byte(out), &all))
	require.NotNil(t, all.Find(0), "touch names no merchant")
	assert.Equal(t, int64(1), all.Find(0).Calls)
}

type opCount struct{ Calls, Failures int64 }

// usageCounts flattens a merchant's report for exact comparison: clients
// as "family version", features and retired things by name.
func usageCounts(m report.Merchant) (ops map[string]opCount, clients, features, retired map[string]int64) {
	ops, clients, features, retired = map[string]opCount{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, op := range m.Operations {
		ops[op.Name] = opCount{op.Calls, op.Failures}
	}
	for _, c := range m.Clients {
		clients[c.Family+" "+c.Version] = c.Calls
	}
	for _, f := range m.Features {
		features[f.Name] = f.Calls
	}
	for _, x := range m.Retired {
		retired[x.What] = x.Calls
	}
	return
}

func restOf(m report.Merchant, op string) string {
	for _, o := range m.Operations {
		if o.Name == op {
			return o.REST
		}
	}
	return ""
}

// waitNotifications waits until the shop has had a notification of every
// payment in ids.
func waitNotifications(t *testing.T, shop *flowShop, ids []string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	deadline := time.After(60 * time.Second)
	for len(want) > 0 {
		select {
		case q := <-shop.notified:
			delete(want, q.Get("paymentSessionId"))
		case <-deadline:
			t.Fatalf("no notification reached the shop for payments %v", want)
		}
	}
}

func toolOutput(t *testing.T, tool string, args ...string) string {
	t.Helper()
	out, err := exec.Command(tool, args...).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(getText(t, u)), v), u)
}
