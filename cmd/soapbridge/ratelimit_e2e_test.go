package main

// A merchant's rate_limit holds for the cluster: two bridge processes on
// one PostgreSQL schema behind a real HAProxy admit the merchant's rate
// between them, not each; with every call sent to one of them, that one
// takes (nearly) the whole rate.

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// Rate of the merchant, and how long each phase loads it.
const (
	sharedRate  = 20.0
	sharedBurst = 20
	ratePhase   = 10 * time.Second
)

// hammer sends paymentStatus calls for the demo merchant from workers
// goroutines to url for d (correctly signed: only a verified call spends
// the merchant's rate; an admitted one then reads the unknown payment at
// the gateway). It returns the admitted calls by the replica that
// answered (X-Served-By; "direct" without a balancer), the refused ones,
// and how long the phase took.
func hammer(t *testing.T, url string, workers int, d time.Duration) (map[string]int, int, time.Duration) {
	body := statusBody(t, "3000000001")
	var mu sync.Mutex
	admitted, refused := map[string]int{}, 0
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for range workers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				fault, by, err := soapFaultOf(url, "paymentStatus", body)
				mu.Lock()
				switch {
				case err != nil:
					assert.NoError(t, err)
				case strings.HasPrefix(fault, "rate limit exceeded: goid "+demoGoID):
					refused++
				default: // a reply or the core's fault: past the rate check
					if by == "" {
						by = "direct"
					}
					admitted[by]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return admitted, refused, time.Since(start)
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestRateLimitHoldsAcrossReplicas(t *testing.T) {
	hapBin := testenv.LookPath(t, "haproxy", "apt-get install haproxy")
	dsn := testenv.PostgresSchema(t)
	gw := startGatewaySandbox(t)
	cfgFile := filepath.Join(t.TempDir(), "rate.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(fmt.Sprintf("merchants:\n  - goid: %s\n    rate_limit: %g\n    rate_burst: %d\n",
		demoGoID, sharedRate, sharedBurst)), 0o600))
	lbPort := freePorts(t, 1)[0]
	env := withEnv("SOAPBRIDGE_CONFIG="+cfgFile, "SOAPBRIDGE_GATEWAY_URL="+gw.URL+"/api",
		"SOAPBRIDGE_PUBLIC_URL=http://127.0.0.1:"+lbPort, "SOAPBRIDGE_TRUSTED_PROXIES=127.0.0.1", "SOAPBRIDGE_MAX_REPLICAS=2",
		"SOAPBRIDGE_LOG_LEVEL=info")
	replicas := []*bridgeProc{startBridge(t, withDB(dsn), env), startBridge(t, withDB(dsn), env)}
	for _, b := range replicas {
		waitLog(t, b, "per-merchant rate limits shared by the replicas on PostgreSQL")
	}
	hap := startHAProxy(t, hapBin, lbPort, replicas)
	waitBothPosted(t, dsn)

	// Round robin: each replica gets half the calls, and half the rate.
	admitted, refused, took := hammer(t, hap.URL, 8, ratePhase)
	limit := sharedRate*took.Seconds() + sharedBurst // what one token bucket would admit
	ratio := float64(total(admitted)) / limit
	t.Logf("balanced: %d admitted (%v by replica), %d refused in %v; one bucket of the cluster admits at most %.0f: ×%.3f",
		total(admitted), admitted, refused, took.Round(time.Millisecond), limit, ratio)
	assert.Positive(t, refused, "the load exceeded the rate")
	assert.LessOrEqual(t, ratio, 1.10, "the cluster admits its rate, not each replica")
	assert.GreaterOrEqual(t, ratio, 0.85, "nor much less")
	for _, r := range []string{"r0", "r1"} {
		assert.Positive(t, admitted[r], "replica %s admitted calls", r)
	}

	// Every call to r0: its share follows the demand within a couple of
	// posts, and the cluster still admits its rate.
	admitted, refused, took = hammer(t, replicas[0].URL, 8, ratePhase)
	limit = sharedRate*took.Seconds() + sharedBurst
	ratio = float64(total(admitted)) / limit
	t.Logf("all on r0: %d admitted, %d refused in %v; at most %.0f: ×%.3f", total(admitted), refused, took.Round(time.Millisecond), limit, ratio)
	assert.LessOrEqual(t, ratio, 1.10)
	assert.GreaterOrEqual(t, ratio, 0.70, "r0 took over r1's idle share (half the rate would be ×0.5)")
}

// waitBothPosted waits until each of two replicas has posted its demand
// after the other's first post: each then enforces its share of two.
func waitBothPosted(t *testing.T, dsn string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	var since time.Time // when the second replica first posted (the server's clock)
	deadline := time.After(60 * time.Second)
	for {
		var replicas int
		var first, last sql.NullTime
		require.NoError(t, db.QueryRow(`SELECT count(*), min(seen_at), max(seen_at) FROM rate_demand`).Scan(&replicas, &first, &last))
		switch {
		case replicas == 2 && since.IsZero():
			since = last.Time
		case replicas == 2 && first.Time.After(since):
			return
		}
		select {
		case <-deadline:
			t.Fatalf("the replicas did not both post their demand (%d posting)", replicas)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// soapFaultOf posts one operation and returns the fault's text ("" for a
// reply) and the replica that answered (HAProxy's X-Served-By).
func soapFaultOf(url, op, body string) (fault, servedBy string, err error) {
	env := `<?xml version="1.0" encoding="UTF-8"?>` +
		`<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" ` +
		`xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ` +
		`xmlns:ns2="http://gate.gopay.cz/ws">` +
		`<SOAP-ENV:Body><ns1:` + op + `>` + body + `</ns1:` + op + `></SOAP-ENV:Body></SOAP-ENV:Envelope>`
	req, err := http.NewRequest(http.MethodPost, url+soapPath, strings.NewReader(env))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	resp, err := lbClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	doc := etree.NewDocument()
	if _, err := doc.ReadFrom(resp.Body); err != nil {
		return "", "", fmt.Errorf("%s: HTTP %d: %w", op, resp.StatusCode, err)
	}
	if f := doc.FindElement("//faultstring"); f != nil {
		fault = f.Text()
	}
	return fault, resp.Header.Get("X-Served-By"), nil
}
