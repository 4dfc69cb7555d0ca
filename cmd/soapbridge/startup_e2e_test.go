package main

// Start-up that tells: a gateway that hangs, or that refuses a merchant's
// credentials, is a warning in the log soon after start, naming the
// merchant; the bridge serves meanwhile.

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/faultproxy"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
)

// waitLog waits for a line containing every part (60 s: a safety net, not
// a margin) and returns it.
func waitLog(t *testing.T, b *bridgeProc, parts ...string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		for line := range strings.SplitSeq(b.log.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return line
			}
		}
		select {
		case <-deadline:
			t.Fatalf("no log line with %q", parts)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// A gateway that takes token requests and never answers: the bridge
// serves (touch answers while the token request still hangs), then warns
// that the gateway does not answer, naming the merchant.
func TestStartWarnsGatewayNotAnswering(t *testing.T) {
	sb := sandbox.New(sandbox.Options{Merchants: []sandbox.Merchant{{Account: sandbox.DemoAccount}}})
	srv := httptest.NewServer(sb)
	proxy := faultproxy.New(srv.URL)
	t.Cleanup(func() { proxy.Close(); srv.Close(); sb.Close() })
	proxy.Add(faultproxy.Rule{Method: http.MethodPost, Path: "/api/oauth2/token", Fault: faultproxy.Hang})

	b := startBridge(t, withEnv("SOAPBRIDGE_GATEWAY_URL="+proxy.URL()+"/api", "SOAPBRIDGE_REST_TIMEOUT=2s", "SOAPBRIDGE_CALL_DEADLINE=6s"))
	resp, err := http.Post(b.SOAPURL, "text/xml; charset=utf-8", strings.NewReader(touchEnvelope))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	line := waitLog(t, b, `"level":"warn"`, "the gateway does not answer (token request at start)")
	assert.Contains(t, line, `"merchants":[`+demoGoID+`]`)
	assert.Contains(t, line, `"gateway":"`+proxy.URL()+`/api"`)
	log := b.log.String()
	assert.Less(t, strings.Index(log, `"msg":"listening"`), strings.Index(log, "the gateway does not answer"),
		"the bridge listened before the check ended")
	assert.NotContains(t, log, "the gateway issued tokens at start")
}

// A standalone gateway that does not know the secret configured for the
// merchant: a warning naming the goid and the client id, never the secret;
// the bridge runs on.
func TestStartWarnsCredentialsRefused(t *testing.T) {
	gw := startGatewaySandbox(t)
	const wrong = "wrong-client-secret-for-the-test"
	b := startBridge(t, withEnv("SOAPBRIDGE_GATEWAY_URL="+gw.URL+"/api", "SOAPBRIDGE_CLIENT_SECRET="+wrong))
	line := waitLog(t, b, `"level":"warn"`, "the gateway refuses this merchant's credentials")
	assert.Contains(t, line, `"goid":`+demoGoID)
	assert.Contains(t, line, `"client_id":"`+demoClientID+`"`)
	assert.Contains(t, line, `"status":401`)
	resp, err := http.Get(b.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	b.Stop()
	assert.NotContains(t, b.log.String(), wrong)
}

// With the gateway answering, one info line says so.
func TestStartSaysGatewayIssuedTokens(t *testing.T) {
	gw := startGatewaySandbox(t)
	b := startBridge(t, withEnv("SOAPBRIDGE_GATEWAY_URL="+gw.URL+"/api"))
	line := waitLog(t, b, "the gateway issued tokens at start")
	assert.Contains(t, line, `"merchants":[`+demoGoID+`]`)
	assert.NotContains(t, b.log.String(), "the gateway does not answer")
}
