package main

// Why was it refused (issue 27), through the real binary: the refusal's
// log line, keyed by the request id the reply carries, names the mistake;
// the status page lists the merchant's last refusals; the refusal counter
// counts them by reason; the reply is the generic refusal.

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
)

func TestWhyRefusedE2E(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "why.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("merchants:\n  - goid: "+demoGoID+"\n"+
		"    basic_user: shop\n    basic_password: "+testBasicPassword+"\n"), 0o600))
	b := startBridge(t, withEnv("SOAPBRIDGE_CONFIG="+cfgFile, "SOAPBRIDGE_LOG_LEVEL=info"))
	post := func(sig, rid string, basic bool) (int, string) {
		body := `<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/"><SOAP-ENV:Body>` +
			`<ns1:paymentStatus xmlns:ns1="http://axis.web.gopay.cz"><paymentSessionInfo><targetGoId>` + demoGoID +
			`</targetGoId><paymentSessionId>3000000001</paymentSessionId><encryptedSignature>` + sig + `</encryptedSignature></paymentSessionInfo>` +
			`</ns1:paymentStatus></SOAP-ENV:Body></SOAP-ENV:Envelope>`
		req, err := http.NewRequest(http.MethodPost, b.SOAPURL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/xml; charset=utf-8")
		req.Header.Set("X-Request-Id", rid)
		if basic {
			req.SetBasicAuth("shop", testBasicPassword)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, rid, resp.Header.Get("X-Request-Id"))
		return resp.StatusCode, string(out)
	}
	sign := func(key string, fields ...string) string {
		sig, err := operations.Sign(key, fields...)
		require.NoError(t, err)
		return sig
	}
	genericCode, generic := post(strings.Repeat("00", 40), "why-generic", true)
	require.Equal(t, http.StatusOK, genericCode)
	require.Contains(t, generic, "CALL_FAILED")
	floatSig := sign(demoSecureKey, "8.123456789E+9", "3000000001")
	code, reply := post(floatSig, "why-float", true)
	assert.Equal(t, genericCode, code)
	assert.Equal(t, generic, reply, "the reply is the generic refusal, byte for byte")
	code, reply = post(sign("SomebodyElsesSecureKey-0001", demoGoID, "3000000001"), "why-key", true)
	assert.Equal(t, generic, reply)
	assert.Equal(t, genericCode, code)
	code, _ = post(floatSig, "why-basic", false)
	assert.Equal(t, http.StatusInternalServerError, code, "a SOAP fault, as today")

	_, metricsText := adminGet(t, b.AdminURL+"/metrics")
	_, status := adminGet(t, b.AdminURL+"/")
	b.Stop()

	recs := logRecords(t, b.log.String())
	line := func(rid string) map[string]any {
		for _, r := range withRequestID(recs, rid) {
			if r["msg"] == "request refused" || r["msg"] == "call refused" {
				return r
			}
		}
		t.Fatalf("no refusal line of %s", rid)
		return nil
	}
	l := line("why-float")
	assert.Equal(t, operations.ReasonFloatString, l["reason_code"])
	assert.Equal(t, "targetGoId", l["field"])
	assert.Contains(t, l["why"], "float string")
	assert.Equal(t, operations.ReasonKeyUnknown, line("why-key")["reason_code"])
	assert.Equal(t, "access_no_credentials", line("why-basic")["reason_code"])
	for _, secret := range []string{demoSecureKey, floatSig, testBasicPassword} {
		assert.NotContains(t, b.log.String(), secret)
	}

	for _, want := range []string{"why-float", operations.ReasonFloatString, "why-key", operations.ReasonKeyUnknown, "why-basic", "access_no_credentials"} {
		assert.Contains(t, status, want)
	}
	assert.NotContains(t, status, floatSig)
	assert.Equal(t, 1.0, metricValue(t, metricsText, "soapbridge_refusals_total", `reason="value_float_string"`))
	assert.Equal(t, 2.0, metricValue(t, metricsText, "soapbridge_refusals_total", `reason="key_unknown"`), "the generic one and why-key")
	assert.Equal(t, 1.0, metricValue(t, metricsText, "soapbridge_merchant_refusals_total", `goid="`+demoGoID+`",reason="access_no_credentials"`))
}

// The 30-day chart of a merchant: a createPayment answered and two calls
// refused are one day's 1 answered and 2 refused, on the migration report
// and, once the store's probe has read them, on the status page: the two
// agree.
func TestDailyChartAgreesE2E(t *testing.T) {
	b := startBridge(t, withEnv("SOAPBRIDGE_USAGE_FLUSH_INTERVAL=1s"))
	shop := newFlowShop(t)
	doc, err := lbSOAP(b.URL, "createPayment", preauthCreateBody(t, shop.srv.URL, "CHART-1"), "chart-create")
	require.NoError(t, err)
	require.Equal(t, "CREATED", flowText(doc, "sessionState"), flowText(doc, "resultDescription"))
	for i := range 2 {
		body := `<paymentSessionInfo><targetGoId>` + demoGoID + `</targetGoId><paymentSessionId>3000000001</paymentSessionId>` +
			`<encryptedSignature>` + strings.Repeat("0f", 40) + `</encryptedSignature></paymentSessionInfo>`
		doc, err := lbSOAP(b.URL, "paymentStatus", body, "chart-refused-"+strconv.Itoa(i))
		require.NoError(t, err)
		require.Equal(t, "CALL_FAILED", flowText(doc, "result"))
	}
	today := time.Now().UTC().Format(time.DateOnly)
	label := regexp.MustCompile(`aria-label="legacy calls per day, \d{4}-\d\d-\d\d to ` + today + `: (\d+) answered, (\d+) refused"`)
	wait := func(page string) []string {
		var m []string
		require.Eventually(t, func() bool {
			_, body := adminGet(t, b.AdminURL+page)
			m = label.FindStringSubmatch(body)
			return m != nil && m[1] == "1" && m[2] == "2"
		}, 60*time.Second, 200*time.Millisecond, "%s: the chart of 1 answered and 2 refused calls (last: %v)", page, m)
		return m
	}
	assert.Equal(t, wait("/report"), wait("/"), "the status page and the report agree")
}
