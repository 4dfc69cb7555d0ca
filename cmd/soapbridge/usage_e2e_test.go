package main

// The usage record and the migration report, end to end: a known mix of
// calls from real clients through two bridge processes sharing one
// PostgreSQL schema, then the report's counts, checked exactly, and its
// REST equivalents.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage/report"
	"github.com/legacybridge/soapbridge/operations/web"
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
	shop.setBridge(a.URL)
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

// firefox is a customer's browser, as its User-Agent names it.
const firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"

// payBaseForm is the base integration's form of order naming channels,
// signed with the demo merchant's key, as a paymentCommand.* body.
func payBaseForm(t *testing.T, shop *flowShop, order, channels string) url.Values {
	t.Helper()
	v := url.Values{
		"targetGoId": {demoGoID}, "productName": {"Kniha " + order}, "totalPrice": {"12900"},
		"currency": {"CZK"}, "orderNumber": {order}, "paymentChannels": {channels},
		"successURL": {shop.srv.URL + "/ok"}, "failedURL": {shop.srv.URL + "/ko"},
	}
	sig, err := operations.Sign(demoSecureKey, operations.PaymentCommandFields{
		TargetGoID: demoGoID, ProductName: v.Get("productName"), TotalPrice: v.Get("totalPrice"), Currency: "CZK",
		OrderNumber: order, FailedURL: v.Get("failedURL"), SuccessURL: v.Get("successURL"),
		PreAuthorization: operations.FormatBool(nil), RecurrentPayment: operations.FormatBool(nil), PaymentChannels: channels,
	}.Fields()...)
	require.NoError(t, err)
	v.Set("encryptedSignature", sig)
	form := url.Values{}
	for k, vs := range v {
		form["paymentCommand."+k] = vs
	}
	return form
}

// browserDo sends one request as the customer's browser and returns the
// status, not following a redirect.
func browserDo(t *testing.T, method, u string, form url.Values) int {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	req.Header.Set("User-Agent", firefox)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// statusPageCounts are the demo merchant's calls as the admin status page
// lists them (operation → calls).
func statusPageCounts(t *testing.T, b *bridgeProc) map[string]int64 {
	t.Helper()
	page := getText(t, b.AdminURL+"/")
	_, section, ok := strings.Cut(page, "<h2>Legacy operations called since start</h2>")
	require.True(t, ok, page)
	_, section, ok = strings.Cut(section, "<h3>goid "+demoGoID+"</h3>")
	require.True(t, ok, page)
	section, _, _ = strings.Cut(section, "<h3>")
	out := map[string]int64{}
	for _, m := range regexp.MustCompile(`<tr><td>([^<]+)</td><td>(\d+)</td></tr>`).FindAllStringSubmatch(section, -1) {
		n, err := strconv.ParseInt(m[2], 10, 64)
		require.NoError(t, err)
		out[m[1]] = n
	}
	return out
}

// reportOf is the demo merchant's migration report from the bridge's
// database (after b stopped: its record is flushed).
func reportOf(t *testing.T, b *bridgeProc) report.Merchant {
	t.Helper()
	out, code := runBinary(t, []string{"SOAPBRIDGE_DATABASE=" + b.DB}, "report", "-format", "json", "-goid", demoGoID)
	require.Equal(t, 0, code, out)
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Len(t, r.Merchants, 1)
	return r.Merchants[0]
}

// Forged pay-base-v2 links (the shop's goid, a signature that does not
// verify, 24 distinct made-up channel codes) count as refused pay-base-v2
// calls and fill nothing of the record's bounded slots: the shop's later
// real use of the retired eu_mb_w still shows. The real pay-base-v2 counts
// once, as the flow, with the browser as client: a shop that never called
// createPayment is not told to migrate it. The status page counts what the
// report counts.
func TestUsageForgedPayBaseFillsNothingAndCountsOnce(t *testing.T) {
	b := startBridge(t, withEnv("SOAPBRIDGE_USAGE_FLUSH_INTERVAL=1h"))
	shop := newFlowShop(t)
	shop.setBridge(b.URL)
	for i := range 24 {
		form := payBaseForm(t, shop, fmt.Sprintf("F-%d", i), fmt.Sprintf("xx_forged_%02d", i))
		form.Set("paymentCommand.encryptedSignature", strings.Repeat("ab", 24))
		require.Equal(t, http.StatusForbidden, browserDo(t, http.MethodPost, b.URL+web.PathPayBase, form))
	}
	require.Equal(t, http.StatusFound, browserDo(t, http.MethodPost, b.URL+web.PathPayBase, payBaseForm(t, shop, "OBJ-1", "eu_mb_w,eu_gp_u")))

	page := statusPageCounts(t, b)
	b.Stop()
	m := reportOf(t, b)
	ops, clients, features, retired := usageCounts(m)
	assert.Equal(t, map[string]opCount{"pay-base-v2": {25, 24}}, ops, "pay-base-v2 once per request, never also as createPayment")
	assert.Equal(t, map[string]int64{"browser ": 1}, clients, "only the real form's browser")
	assert.Equal(t, map[string]int64{"paymentChannels": 1, "channel eu_gp_u": 1}, features)
	assert.Equal(t, map[string]int64{"channel eu_mb_w": 1}, retired, "the retired code the shop really uses shows")
	assert.Equal(t, map[string]int64{"pay-base-v2": 25}, page, "the status page counts the same calls")
}

// The status page and the migration report count the same calls the same:
// two createPayment over SOAP, a pay-base-v2 form (not a third
// createPayment) and a forged pay-full-v2 link are each counted once, in
// both.
func TestStatusPageAgreesWithReport(t *testing.T) {
	b := startBridge(t, withEnv("SOAPBRIDGE_USAGE_FLUSH_INTERVAL=1h"))
	shop := newFlowShop(t)
	shop.setBridge(b.URL)
	for i := range 2 {
		require.Equal(t, http.StatusFound, browserDo(t, http.MethodGet, shop.srv.URL+"/buy/full?order=AGREE-"+strconv.Itoa(i), nil),
			"createPayment over SOAP, then the shop's redirect to pay-full-v2")
	}
	require.Equal(t, http.StatusFound, browserDo(t, http.MethodPost, b.URL+web.PathPayBase, payBaseForm(t, shop, "AGREE-B", "eu_gp_u")))
	require.Equal(t, http.StatusForbidden, browserDo(t, http.MethodGet, b.URL+web.PathPayFull+"?sessionInfo.targetGoId="+demoGoID+
		"&sessionInfo.paymentSessionId=3000000001&sessionInfo.encryptedSignature=00", nil))

	page := statusPageCounts(t, b)
	metrics := getText(t, b.AdminURL+"/metrics")
	assert.Equal(t, 1.0, metricValue(t, metrics, "soapbridge_flow_requests_total", `flow="pay-full-v2",result="bad_signature"`))
	assert.Equal(t, 1.0, metricValue(t, metrics, "soapbridge_flow_requests_total", `flow="pay-base-v2",result="ok"`))
	assert.Equal(t, 2.0, metricValue(t, metrics, "soapbridge_soap_calls_total", `operation="createPayment",result="ok"`),
		"the SOAP series count SOAP calls only")
	b.Stop()
	ops, _, _, _ := usageCounts(reportOf(t, b))
	report := map[string]int64{}
	for op, c := range ops {
		report[op] = c.Calls
	}
	assert.Equal(t, map[string]int64{"createPayment": 2, "pay-base-v2": 1, "pay-full-v2": 1}, report)
	assert.Equal(t, report, page, "status page and report agree")
}

// Forged SOAP calls (the shop's goid, a signature that does not verify),
// sent to the running binary, move nothing but a refused count: no
// last-call gauge for the merchant, no last seen or calls in its totals.
// The report still counts them, as unverified failures; the shop's own
// signed call then moves the gauge.
func TestUsageForgedCallsMoveNoLastCall(t *testing.T) {
	b := startBridge(t, withEnv("SOAPBRIDGE_USAGE_FLUSH_INTERVAL=1h"))
	for i := range 5 {
		a := soapAs(t, b.SOAPURL, "127.0.0.2", "", "", "paymentStatus", forgedStatusBody(demoGoID))
		require.Empty(t, a.fault, "forged call %d: refused by a reply", i)
	}
	gauge := `soapbridge_legacy_last_call_timestamp_seconds{goid="` + demoGoID + `"}`
	assert.False(t, strings.Contains(getText(t, b.AdminURL+"/metrics"), gauge), "forged calls move no last-call gauge")
	b.Stop()
	m := reportOf(t, b)
	assert.Nil(t, m.LastSeen, "forged calls are no last call")
	assert.Nil(t, m.DaysSinceLastCall)
	assert.Zero(t, m.Calls, "forged calls are not in the merchant's totals")
	ops, clients, _, _ := usageCounts(m)
	assert.Equal(t, map[string]opCount{"paymentStatus": {5, 5}}, ops, "counted as refused, nothing more")
	assert.Empty(t, clients)
	for _, op := range m.Operations {
		assert.Equal(t, map[string]int64{"unverified": 5}, op.FailuresByKind)
		assert.True(t, op.FirstSeen.IsZero() && op.LastSeen.IsZero(), "nor its operation's first or last seen: %v %v", op.FirstSeen, op.LastSeen)
	}

	// The shop's own call moves the gauge.
	c := startBridge(t, withDB(b.DB), withEnv("SOAPBRIDGE_USAGE_FLUSH_INTERVAL=1h"))
	id := createFor(t, c.URL, demoCfgMerchant, "LAST-1")
	require.Empty(t, soapAs(t, c.SOAPURL, "127.0.0.1", "", "", "paymentStatus", statusBody(t, id)).fault)
	assert.Contains(t, getText(t, c.AdminURL+"/metrics"), gauge, "a verified call moves the gauge")
}

// Calls the access rules deny (a stranger's address, refused before
// verification) count as denied and move nothing the merchant's record
// shows as its last call: neither the gauge nor the report's last seen,
// the merchant's or the operation's. The shop's own call still does.
func TestUsageDeniedCallsMoveNoLastCall(t *testing.T) {
	b := startBridge(t, withEnv("SOAPBRIDGE_USAGE_FLUSH_INTERVAL=1h", "SOAPBRIDGE_ALLOWED_NETWORKS=127.0.0.1/32"))
	for i := range 5 {
		a := soapAs(t, b.SOAPURL, "127.0.0.2", "", "", "paymentStatus", forgedStatusBody(demoGoID))
		require.Contains(t, a.fault, "access denied", "call %d: refused by the access rules", i)
	}
	gauge := `soapbridge_legacy_last_call_timestamp_seconds{goid="` + demoGoID + `"}`
	assert.False(t, strings.Contains(getText(t, b.AdminURL+"/metrics"), gauge), "denied calls move no last-call gauge")
	b.Stop()
	m := reportOf(t, b)
	assert.Nil(t, m.LastSeen, "denied calls are no last call")
	assert.Zero(t, m.Calls, "nor in the merchant's totals")
	ops, _, _, _ := usageCounts(m)
	assert.Equal(t, map[string]opCount{"paymentStatus": {5, 5}}, ops, "counted as refused")
	for _, op := range m.Operations {
		assert.Equal(t, map[string]int64{"denied": 5}, op.FailuresByKind)
		assert.True(t, op.LastSeen.IsZero(), "the operation's last seen stays: %v", op.LastSeen)
	}

	c := startBridge(t, withDB(b.DB), withEnv("SOAPBRIDGE_USAGE_FLUSH_INTERVAL=1h", "SOAPBRIDGE_ALLOWED_NETWORKS=127.0.0.1/32"))
	id := createFor(t, c.URL, demoCfgMerchant, "DENIED-1")
	require.Empty(t, soapAs(t, c.SOAPURL, "127.0.0.1", "", "", "paymentStatus", statusBody(t, id)).fault)
	assert.Contains(t, getText(t, c.AdminURL+"/metrics"), gauge, "the shop's own call moves the gauge")
}
