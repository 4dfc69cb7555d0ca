package main

// Who may call, through the running binary: a merchant restricted to
// 127.0.0.1 with HTTP Basic credentials and a rate limit. The browser's
// paymentSession signature replayed from another address, without or with
// wrong credentials gets a SOAP fault and no gateway call; the shop itself
// gets through until its rate is used up.

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testBasicPassword = "Basic-Pa55word-for-the-test"

// soapAs posts one operation from local address src (127.0.0.x) with
// optional Basic credentials and returns the result or the fault text.
func soapAs(t *testing.T, url, src, user, pass, op, body string) answer {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	defer c.CloseIdleConnections()
	env := `<?xml version="1.0" encoding="UTF-8"?>` +
		`<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" ` +
		`xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` +
		`xmlns:ns2="http://gate.gopay.cz/ws" SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">` +
		`<SOAP-ENV:Body><ns1:` + op + `>` + body + `</ns1:` + op + `></SOAP-ENV:Body></SOAP-ENV:Envelope>`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(env))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), testBasicPassword)
	doc := etree.NewDocument()
	require.NoError(t, doc.ReadFromBytes(raw), "%s", raw)
	if f := doc.FindElement("//faultstring"); f != nil {
		return answer{fault: f.Text()}
	}
	a := answer{}
	if el := doc.FindElement("//result"); el != nil {
		a.result = el.Text()
	}
	if el := doc.FindElement("//sessionState"); el != nil {
		a.desc = el.Text()
	}
	return a
}

// gatewayCalls counts every request the bridge sent to the gateway.
func (e *moneyEnv) gatewayCalls() int {
	n := 0
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		for p := "/api/*"; len(p) < 40; p += "/*" {
			n += e.proxy.Forwarded(m, p)
		}
	}
	return n
}

func TestAccessNetworksCredentialsAndRate(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "access.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("merchants:\n  - goid: "+demoGoID+"\n"+
		"    allowed_networks: 127.0.0.1/32, ::1\n    basic_user: shop\n    basic_password: "+testBasicPassword+"\n"+
		"    rate_limit: 0.5\n    rate_burst: 3\n"), 0o600))
	e := newMoneyEnv(t, "2s", "6s", withEnv("SOAPBRIDGE_CONFIG="+cfgFile))
	assert.NotContains(t, e.b.log.String(), "accepts SOAP calls from anyone", "a guarded merchant is not warned about")

	id := e.payment("paid")
	replay := sessionInfoBody(t, id) // the signature a customer's pay-full-v2 link carries
	// What a refused call could have sent. (Not every gateway call: the
	// sandbox's notification of the payment, answered by the bridge with a
	// status read, may arrive meanwhile.)
	moneyPosts := func() int {
		return e.proxy.Forwarded(http.MethodPost, "/api/payments/payment/*/refund") +
			e.proxy.Forwarded(http.MethodPost, "/api/payments/payment/*/void-authorization")
	}
	before := e.gatewayCalls()

	for _, c := range []struct{ name, src, user, pass, want string }{
		{"foreign address, right credentials", "127.0.0.2", "shop", testBasicPassword, "access denied: calls for goid " + demoGoID + " are not accepted from address 127.0.0.2"},
		{"allowed address, no credentials", "127.0.0.1", "", "", "access denied: HTTP Basic credentials required for goid " + demoGoID},
		{"allowed address, wrong password", "127.0.0.1", "shop", testBasicPassword + "x", "access denied: wrong HTTP Basic credentials for goid " + demoGoID},
		{"allowed address, wrong user", "127.0.0.1", "shop2", testBasicPassword, "access denied: wrong HTTP Basic credentials for goid " + demoGoID},
	} {
		for _, op := range []string{"refundPayment", "voidAuthorization"} {
			body := replay
			if op == "refundPayment" {
				body = strings.Replace(replay, "<sessionInfo ", "<paymentSessionInfo ", 1)
				body = strings.Replace(body, "</sessionInfo>", "</paymentSessionInfo>", 1)
			}
			a := soapAs(t, e.b.SOAPURL, c.src, c.user, c.pass, op, body)
			assert.Equal(t, c.want, a.fault, "%s: %s", c.name, op)
		}
	}
	assert.Zero(t, moneyPosts(), "a refused call reaches the gateway")
	assert.Equal(t, "PAID", e.status(id).State, "nothing refunded")
	log := e.b.log.String()
	assert.Contains(t, log, `"call refused"`)
	assert.Contains(t, log, `"reason":"access denied: calls for goid `+demoGoID+` are not accepted from address 127.0.0.2"`)
	assert.NotContains(t, log, testBasicPassword)

	// The shop itself: right address and credentials. The refused calls
	// above used none of its rate (burst 3).
	st := soapAs(t, e.b.SOAPURL, "127.0.0.1", "shop", testBasicPassword, "paymentStatus", replay)
	require.Empty(t, st.fault)
	assert.Equal(t, "PAID", st.desc)
	assert.Greater(t, e.gatewayCalls(), before)

	// Rate: 0.5/s with a burst of 3, one used: of 6 more at once at most 3
	// pass (2 left + at most one refill), the others get the rate fault.
	limited := 0
	for range 6 {
		a := soapAs(t, e.b.SOAPURL, "127.0.0.1", "shop", testBasicPassword, "paymentStatus", replay)
		if a.fault != "" {
			assert.Equal(t, "rate limit exceeded: goid "+demoGoID+" may make at most 0.5 calls per second; retry later", a.fault)
			limited++
		}
	}
	assert.GreaterOrEqual(t, limited, 3)
	assert.LessOrEqual(t, limited, 4)
}

// A merchant with neither networks nor credentials is warned about at start.
func TestAccessOpenMerchantWarned(t *testing.T) {
	b := startBridge(t)
	// The line comes before /healthz answers, but the test reads the log
	// through a pipe: wait for it rather than read it at once.
	waitLog(t, b, "merchant accepts SOAP calls from anyone: whoever holds a customer's pay-full-v2 link")
}

// Wrong HTTP Basic credentials count against the caller's address: past
// the limit (3 a minute here) its calls are refused before the credentials
// are compared, the right ones included, with a fault that says so, and
// the refusals are counted. Behind a trusted proxy the client it names
// counts, not the proxy: the shop behind the same balancer still gets in.
func TestRefusedLoginsLimited(t *testing.T) {
	b := startBridge(t, withEnv("SOAPBRIDGE_BASIC_USER=shop", "SOAPBRIDGE_BASIC_PASSWORD="+testBasicPassword,
		"SOAPBRIDGE_BASIC_AUTH_FAILURES_PER_MINUTE=3", "SOAPBRIDGE_TRUSTED_PROXIES=127.0.0.1"))
	call := func(xff, pass string) string {
		body := strings.Replace(strings.Replace(sessionInfoBody(t, 3000000001), "<sessionInfo ", "<paymentSessionInfo ", 1),
			"</sessionInfo>", "</paymentSessionInfo>", 1)
		env := `<?xml version="1.0" encoding="UTF-8"?><SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" ` +
			`xmlns:ns1="http://axis.web.gopay.cz" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:ns2="http://gate.gopay.cz/ws" ` +
			`xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/"><SOAP-ENV:Body><ns1:paymentStatus>` + body +
			`</ns1:paymentStatus></SOAP-ENV:Body></SOAP-ENV:Envelope>`
		req, err := http.NewRequest(http.MethodPost, b.SOAPURL, strings.NewReader(env))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/xml; charset=utf-8")
		req.Header.Set("X-Forwarded-For", xff)
		req.SetBasicAuth("shop", pass)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		doc := etree.NewDocument()
		_, err = doc.ReadFrom(resp.Body)
		require.NoError(t, err)
		if f := doc.FindElement("//faultstring"); f != nil {
			return f.Text()
		}
		return "no fault"
	}
	const attacker, shop = "203.0.113.66", "198.51.100.10"
	for range 3 {
		assert.Equal(t, "access denied: wrong HTTP Basic credentials for goid "+demoGoID, call(attacker, "guess"))
	}
	blocked := "access denied: too many wrong HTTP Basic credentials from address " + attacker +
		"; credentials from it are not checked for a while, retry in a minute"
	assert.Equal(t, blocked, call(attacker, "guess-again"))
	assert.Equal(t, blocked, call(attacker, testBasicPassword), "refused without checking, right credentials included")
	assert.NotContains(t, call(shop, testBasicPassword), "access denied", "the shop behind the same proxy")

	_, text := adminGet(t, b.AdminURL+"/metrics")
	assert.Equal(t, 3.0, metricValue(t, text, "soapbridge_basic_auth_refusals_total", `reason="wrong"`))
	assert.Equal(t, 2.0, metricValue(t, text, "soapbridge_basic_auth_refusals_total", `reason="blocked"`))
	b.Stop() // its output read to the end
	assert.Equal(t, 5, countLines(b, `"call refused"`, `"client_ip":"`+attacker+`"`), "each refusal logged with the caller")
	assert.NotContains(t, b.log.String(), testBasicPassword)
}
