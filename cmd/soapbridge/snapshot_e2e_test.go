package main

// A reload swaps one snapshot: while configurations alternate under a
// storm of SIGHUPs, each call is judged by exactly one of them, its access
// rules and its merchants alike.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
)

// stormConfig writes config X (withB: the demo merchant and shop B, whose
// calls are accepted from 127.0.0.2 only) or Y (the demo merchant alone).
func stormConfig(t *testing.T, path string, withB bool) {
	t.Helper()
	body := fmt.Sprintf("merchants:\n  - goid: %s\n    client_id: %s\n    client_secret: %s\n    secure_key: %s\n",
		demoGoID, demoClientID, demoClientSecret, demoSecureKey)
	if withB {
		body += "  - goid: 8123456790\n    client_id: shop-b\n    client_secret: shop-b-secret\n    secure_key: " + shopBKey +
			"\n    allowed_networks: 127.0.0.2/32\n"
	}
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(body), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// The same call, shop B's correctly signed paymentStatus from 127.0.0.1,
// has one answer under each configuration: under X the access rules
// refuse it (a fault naming the address), under Y the core does not know
// the goid (a CALL_FAILED reply). A call judged by X's merchants and Y's
// rules (or the reverse) gets neither: it is verified with B's key and
// sent on to the gateway. About 300 reloads alternate X and Y while
// clients call; every answer must be X's or Y's.
func TestReloadStormJudgesEachCallByOneConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storm.yaml")
	stormConfig(t, path, true)
	b := startBridge(t, withConfigFile(path))

	const goidB, payment = "8123456790", "3000000001"
	sig, err := operations.Sign(shopBKey, operations.PaymentSessionFields(goidB, payment)...)
	require.NoError(t, err)
	body := `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">` + str("encryptedSignature", sig) +
		long("paymentSessionId", payment) + long("targetGoId", goidB) + `</paymentSessionInfo>`
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()

	const underX, underY = "x", "y"
	judge := func() (string, error) {
		env := `<?xml version="1.0" encoding="UTF-8"?>` +
			`<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" ` +
			`xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` +
			`xmlns:ns2="http://gate.gopay.cz/ws" SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">` +
			`<SOAP-ENV:Body><ns1:paymentStatus>` + body + `</ns1:paymentStatus></SOAP-ENV:Body></SOAP-ENV:Envelope>`
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, b.SOAPURL, strings.NewReader(env))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "text/xml; charset=utf-8")
		req.Header.Set("SOAPAction", `""`)
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		doc := etree.NewDocument()
		if err := doc.ReadFromBytes(raw); err != nil {
			return "", fmt.Errorf("%w: %s", err, raw)
		}
		if f := doc.FindElement("//faultstring"); f != nil {
			if f.Text() == "access denied: calls for goid "+goidB+" are not accepted from address 127.0.0.1" {
				return underX, nil
			}
			return "fault: " + f.Text(), nil
		}
		desc := ""
		if el := doc.FindElement("//resultDescription"); el != nil {
			desc = el.Text()
		}
		if strings.HasPrefix(desc, "unknown targetGoId "+goidB) {
			return underY, nil
		}
		res := ""
		if el := doc.FindElement("//result"); el != nil {
			res = el.Text()
		}
		return "reply: " + res + " " + desc, nil
	}
	got, err := judge()
	require.NoError(t, err)
	require.Equal(t, underX, got, "under X the rules refuse the call")

	var (
		stop           atomic.Bool
		wg             sync.WaitGroup
		mu             sync.Mutex
		answers        = map[string]int{}
		calls, errored atomic.Int64
	)
	for range 16 {
		wg.Go(func() {
			for !stop.Load() {
				a, err := judge()
				calls.Add(1)
				if err != nil {
					errored.Add(1)
					a = "error: " + err.Error()
				}
				mu.Lock()
				answers[a]++
				mu.Unlock()
			}
		})
	}
	const reloads = 300
	for i := 1; i <= reloads; i++ {
		stormConfig(t, path, i%2 == 0) // Y, X, Y, …
		b.signal(syscall.SIGHUP)
		deadline := time.Now().Add(30 * time.Second)
		for metricValue(t, getText(t, b.AdminURL+"/metrics"), "soapbridge_config_reloads_total", `result="ok"`) < float64(i) {
			require.True(t, time.Now().Before(deadline), "reload %d not done within 30 s", i)
			time.Sleep(time.Millisecond)
		}
	}
	stop.Store(true)
	wg.Wait()

	t.Logf("%d calls over %d reloads: %v", calls.Load(), reloads, answers)
	assert.Zero(t, errored.Load())
	assert.Positive(t, answers[underX], "some calls judged by X")
	assert.Positive(t, answers[underY], "some calls judged by Y")
	for a, n := range answers {
		if a != underX && a != underY {
			assert.Failf(t, "a call judged by no one configuration", "%d× %s", n, a)
		}
	}
	assert.Zero(t, metricValue(t, getText(t, b.AdminURL+"/metrics"), "soapbridge_config_reloads_total", `result="refused"`))
}
