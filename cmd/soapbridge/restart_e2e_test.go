package main

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gatewayProc is a standalone cmd/gatewaysandbox: it outlives bridge
// restarts, unlike the embedded sandbox, which keeps its state in memory.
type gatewayProc struct {
	URL  string // root; the REST interface is under URL + "/api"
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error
}

func startGatewaySandbox(t *testing.T) *gatewayProc {
	t.Helper()
	bin := gatewaySandboxBinary(t)
	port := freePorts(t, 1)[0]
	g := &gatewayProc{URL: "http://127.0.0.1:" + port, log: &syncBuffer{}, done: make(chan struct{})}
	g.cmd = exec.Command(bin)
	g.cmd.Env = append(envWithout("SOAPBRIDGE_"),
		"SOAPBRIDGE_SANDBOX_LISTEN=127.0.0.1:"+port,
		"SOAPBRIDGE_SANDBOX_PUBLIC_URL="+g.URL,
		"SOAPBRIDGE_GOID="+demoGoID,
		"SOAPBRIDGE_CLIENT_ID="+demoClientID,
		"SOAPBRIDGE_CLIENT_SECRET="+demoClientSecret,
	)
	g.cmd.Stdout, g.cmd.Stderr = g.log, g.log
	require.NoError(t, g.cmd.Start())
	go func() { g.err = g.cmd.Wait(); close(g.done) }()
	t.Cleanup(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.done:
		case <-time.After(10 * time.Second):
			t.Errorf("gatewaysandbox still running 10 s after SIGTERM; killing it")
			_ = g.cmd.Process.Kill()
			<-g.done
		}
		if t.Failed() {
			t.Logf("gatewaysandbox log:\n%s", g.log.String())
		}
	})
	// The sandbox has no /healthz; its clock helper answers once it serves.
	if err := waitHealthy(g.URL+"/sandbox/clock", g.done); err != nil {
		t.Fatal(err) // the cleanup above prints the log
	}
	return g
}

// TestRestartKeepsSessions: a payment created through one bridge process is
// still answered completely (signed, with the productName only the bridge
// stores) by the next process on the same SQLite file. Also the strict
// secret check: with an external gateway no credential banner is allowed.
func TestRestartKeepsSessions(t *testing.T) {
	php := requirePHP(t)
	gw := startGatewaySandbox(t)
	db := filepath.Join(t.TempDir(), "bridge.db")
	gwEnv := withEnv("SOAPBRIDGE_GATEWAY_URL=" + gw.URL + "/api")

	first := startBridge(t, withDB(db), gwEnv)
	created, err := runPHP(t, php, first, "scenarios.php", "create_only")
	require.NoError(t, err)
	require.NotNil(t, created)
	created.signedStatus(t, "create", "CREATED")
	id := created["create.id"]
	first.Stop()

	// Paid while the bridge is down: the next process must read it fresh.
	resp, err := http.Post(gw.URL+"/sandbox/payments/"+id+"/pay", "application/json",
		strings.NewReader(`{"outcome":"success","instrument":"PAYMENT_CARD"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	second := startBridge(t, withDB(db), gwEnv)
	after, err := runPHP(t, php, second, "scenarios.php", "status_of", id)
	require.NoError(t, err)
	require.NotNil(t, after)
	after.signedStatus(t, "status", "PAID")
	after.eq(t, "status.id", id)
	after.eq(t, "status.productName", created["create.productName"])
}
