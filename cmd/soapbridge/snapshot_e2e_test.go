package main

// A reload swaps one snapshot: while configurations alternate under a
// storm of SIGHUPs, each call is judged by exactly one of them, its access
// rules and its merchants alike.

import (
	"context"
	"encoding/json"
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
	"github.com/legacybridge/soapbridge/operations/usage/report"
)

// stormConfig writes config X (x: the demo merchant and shop B) or Y (the
// demo merchant and shop C); B and C accept calls from 127.0.0.2 only.
func stormConfig(t *testing.T, path string, x bool) {
	t.Helper()
	body := fmt.Sprintf("merchants:\n  - goid: %s\n    client_id: %s\n    client_secret: %s\n    secure_key: %s\n",
		demoGoID, demoClientID, demoClientSecret, demoSecureKey)
	goid, client := stormGoidC, "shop-c"
	if x {
		goid, client = stormGoidB, "shop-b"
	}
	body += "  - goid: " + goid + "\n    client_id: " + client + "\n    client_secret: " + client + "-secret\n    secure_key: " + shopBKey +
		"\n    allowed_networks: 127.0.0.2/32\n"
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(body), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

const stormGoidB, stormGoidC = "8123456790", "8123456791"

// The same call, shop B's correctly signed paymentStatus from 127.0.0.1,
// has one answer under each configuration: under X the access rules
// refuse it (a fault naming the address), under Y the core does not know
// the goid (a CALL_FAILED reply). A call judged by X's merchants and Y's
// rules gets neither: it is verified with B's key and sent on to the
// gateway. Shop C's call is the mirror image. About 300 reloads alternate
// X and Y while clients call; every answer must be X's or Y's.
func TestReloadStormJudgesEachCallByOneConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storm.yaml")
	stormConfig(t, path, true)
	// More Ps than cores: the OS preempts a call between its steps more
	// often, so an interleaving with a reload's swap is likelier to show.
	b := startBridge(t, withConfigFile(path), withEnv("GOMAXPROCS=16"))

	const payment = "3000000001"
	bodyOf := func(goid string) string {
		sig, err := operations.Sign(shopBKey, operations.PaymentSessionFields(goid, payment)...)
		require.NoError(t, err)
		return `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">` + str("encryptedSignature", sig) +
			long("paymentSessionId", payment) + long("targetGoId", goid) + `</paymentSessionInfo>`
	}
	bodies := map[string]string{stormGoidB: bodyOf(stormGoidB), stormGoidC: bodyOf(stormGoidC)}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()

	const underX, underY = "x", "y"
	// judge calls for goid and says which configuration the answer is of.
	judge := func(goid string) (string, error) {
		denied, unknown := underX, underY // B: refused by X's rules, unknown to Y
		if goid == stormGoidC {
			denied, unknown = underY, underX
		}
		body := bodies[goid]
		doc, err := postPaymentStatus(client, b.SOAPURL, body)
		if err != nil {
			return "", err
		}
		if f := doc.FindElement("//faultstring"); f != nil {
			if f.Text() == "access denied: calls for goid "+goid+" are not accepted from address 127.0.0.1" {
				return denied, nil
			}
			return "fault: " + f.Text(), nil
		}
		desc := ""
		if el := doc.FindElement("//resultDescription"); el != nil {
			desc = el.Text()
		}
		if strings.HasPrefix(desc, "unknown targetGoId "+goid) {
			return unknown, nil
		}
		res := ""
		if el := doc.FindElement("//result"); el != nil {
			res = el.Text()
		}
		return "reply: " + res + " " + desc, nil
	}
	for _, goid := range []string{stormGoidB, stormGoidC} {
		got, err := judge(goid)
		require.NoError(t, err)
		require.Equal(t, underX, got, "under X the rules refuse B's call and C is unknown")
	}

	var (
		stop           atomic.Bool
		wg             sync.WaitGroup
		mu             sync.Mutex
		answers        = map[string]int{}
		calls, errored atomic.Int64
	)
	for i := range 16 {
		wg.Go(func() {
			for n := i; !stop.Load(); n++ {
				goid := stormGoidB
				if n%2 == 1 {
					goid = stormGoidC
				}
				a, err := judge(goid)
				calls.Add(1)
				if err != nil {
					errored.Add(1)
					a = "error: " + err.Error()
				}
				if a != underX && a != underY {
					a = goid + ": " + a
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

// usageStormConfig writes config X (x: the demo merchant and shop B, open
// to any address) or Y (the demo merchant alone).
func usageStormConfig(t *testing.T, path string, x bool) {
	t.Helper()
	body := fmt.Sprintf("merchants:\n  - goid: %s\n    client_id: %s\n    client_secret: %s\n    secure_key: %s\n",
		demoGoID, demoClientID, demoClientSecret, demoSecureKey)
	if x {
		body += "  - goid: " + stormGoidB + "\n    client_id: shop-b\n    client_secret: shop-b-secret\n    secure_key: " + shopBKey + "\n"
	}
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(body), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// The usage record keeps a call by the merchants it was served with: while
// reloads alternate X (with shop B) and Y (without), every call of B's
// that X served (any reply but "unknown targetGoId") is in B's record,
// even when a reload put Y in force before the call ended. The record's
// merchants are the snapshot's, not a list updated after the swap.
func TestReloadStormUsageKeepsEachServedCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage-storm.yaml")
	usageStormConfig(t, path, true)
	b := startBridge(t, withConfigFile(path), withEnv("GOMAXPROCS=16", "SOAPBRIDGE_USAGE_FLUSH_INTERVAL=1h"))

	const payment = "3000000001"
	sig, err := operations.Sign(shopBKey, operations.PaymentSessionFields(stormGoidB, payment)...)
	require.NoError(t, err)
	body := `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">` + str("encryptedSignature", sig) +
		long("paymentSessionId", payment) + long("targetGoId", stormGoidB) + `</paymentSessionInfo>`
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	// call says how the bridge answered: "fault: …", or the result
	// description.
	call := func() (string, error) {
		doc, err := postPaymentStatus(client, b.SOAPURL, body)
		if err != nil {
			return "", err
		}
		if f := doc.FindElement("//faultstring"); f != nil {
			return "fault: " + f.Text(), nil
		}
		if el := doc.FindElement("//resultDescription"); el != nil {
			return el.Text(), nil
		}
		return "", nil
	}
	var (
		stop            atomic.Bool
		wg              sync.WaitGroup
		served, unknown atomic.Int64
		mu              sync.Mutex
		odd             []string
	)
	for range 16 {
		wg.Go(func() {
			for !stop.Load() {
				a, err := call()
				switch {
				case err != nil || strings.HasPrefix(a, "fault: "):
					mu.Lock()
					odd = append(odd, fmt.Sprint(a, err))
					mu.Unlock()
				case strings.HasPrefix(a, "unknown targetGoId "+stormGoidB):
					unknown.Add(1)
				default:
					served.Add(1)
				}
			}
		})
	}
	const reloads = 200
	for i := 1; i <= reloads; i++ {
		usageStormConfig(t, path, i%2 == 0) // Y, X, Y, …, X
		b.signal(syscall.SIGHUP)
		deadline := time.Now().Add(30 * time.Second)
		for metricValue(t, getText(t, b.AdminURL+"/metrics"), "soapbridge_config_reloads_total", `result="ok"`) < float64(i) {
			require.True(t, time.Now().Before(deadline), "reload %d not done within 30 s", i)
			time.Sleep(time.Millisecond)
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d calls served by X, %d judged by Y, over %d reloads", served.Load(), unknown.Load(), reloads)
	require.Empty(t, odd)
	require.Positive(t, served.Load())
	require.Positive(t, unknown.Load())

	b.Stop() // flushes the record
	out, code := runBinary(t, []string{"SOAPBRIDGE_DATABASE=" + b.DB}, "report", "-format", "json", "-goid", stormGoidB)
	require.Equal(t, 0, code, out)
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Len(t, r.Merchants, 1)
	var recorded int64
	for _, op := range r.Merchants[0].Operations {
		recorded += op.Calls
	}
	assert.Equal(t, served.Load(), recorded, "every call X served is in B's record, none dropped for a reload that came after it arrived")
}

// A refused reload changes no part of the snapshot: neither the metrics'
// series, nor the merchants the report lists, nor the base the next reload
// compares with (its log line names what changed from the configuration
// in force, not from the refused one).
func TestRefusedReloadChangesNoSnapshotPart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refused.yaml")
	usageStormConfig(t, path, true) // the demo merchant and shop B
	b := startBridge(t, withConfigFile(path), withEnv("SOAPBRIDGE_METRICS_MERCHANT_LABELS=true"))
	const goidD = "8123456792"
	shopD := "  - goid: " + goidD + "\n    client_id: shop-d\n    client_secret: shop-d-secret\n    secure_key: %s\n"
	base := fmt.Sprintf("merchants:\n  - goid: %s\n    client_id: %s\n    client_secret: %s\n    secure_key: %s\n",
		demoGoID, demoClientID, demoClientSecret, demoSecureKey)
	write := func(body string) {
		tmp := path + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(body), 0o600))
		require.NoError(t, os.Rename(tmp, path))
	}
	labelled := func(goid string) bool {
		return strings.Contains(getText(t, b.AdminURL+"/metrics"), `soapbridge_merchant_soap_calls_total{goid="`+goid+`"`)
	}
	listed := func(goid string) bool {
		return strings.Contains(getText(t, b.AdminURL+"/report.json"), `"goid": `+goid)
	}
	require.True(t, labelled(stormGoidB))
	require.True(t, listed(stormGoidB))

	write(base + fmt.Sprintf(shopD, "short")) // B removed, D added with a key too short
	b.signal(syscall.SIGHUP)
	b.waitLog(1, "configuration reload refused")
	assert.False(t, labelled(goidD), "no series for the refused reload's merchant")
	assert.True(t, labelled(stormGoidB), "nor any dropped for the one it removed")
	assert.False(t, listed(goidD), "the report lists the merchants in force")
	assert.True(t, listed(stormGoidB))

	write(base + fmt.Sprintf(shopD, shopBKey))
	b.signal(syscall.SIGHUP)
	b.waitLog(1, "configuration reloaded", `"added":[`+goidD+`]`, `"removed":[`+stormGoidB+`]`)
	assert.True(t, labelled(goidD))
	assert.False(t, labelled(stormGoidB))
	assert.True(t, listed(goidD))
}

// postPaymentStatus sends a paymentStatus call with body as its parameters
// and parses the reply.
func postPaymentStatus(client *http.Client, soapURL, body string) (*etree.Document, error) {
	env := `<?xml version="1.0" encoding="UTF-8"?>` +
		`<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" ` +
		`xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` +
		`xmlns:ns2="http://gate.gopay.cz/ws" SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">` +
		`<SOAP-ENV:Body><ns1:paymentStatus>` + body + `</ns1:paymentStatus></SOAP-ENV:Body></SOAP-ENV:Envelope>`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, soapURL, strings.NewReader(env))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil {
		return nil, fmt.Errorf("%w: %s", err, raw)
	}
	return doc, nil
}
