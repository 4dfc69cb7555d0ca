package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefusesNonLoopbackTargets(t *testing.T) {
	for _, u := range []string{"http://10.0.0.1:8080/x", "http://example.com/x", "http://192.168.1.5/x"} {
		err := run([]string{"-url", u, "-body", "x"}, io.Discard)
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "only loopback")
	}
	for _, a := range []string{"10.0.0.1:6061", "example.com:6061", ":6061", "127.0.0.1"} {
		err := run([]string{"-slowgw-admin", a, "-quick"}, io.Discard)
		require.Error(t, err, a)
		assert.Contains(t, err.Error(), "-slowgw-admin", a)
	}
}

func TestMeasuresAgainstBaseline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			_, _ = io.WriteString(w, `{"status":"ok"}`)
			return
		}
		_, _ = io.WriteString(w, "<touchReturn>OK</touchReturn>")
	}))
	defer srv.Close()
	body := filepath.Join(t.TempDir(), "touch.xml")
	require.NoError(t, os.WriteFile(body, []byte("<x/>"), 0o600))
	// Phases of a second: a closed-loop client sends only while its phase
	// lasts, so a shorter one could end before a worker got the CPU.
	var out strings.Builder
	require.NoError(t, run([]string{"-url", srv.URL + "/soap", "-body", body, "-want", "touchReturn", "-c", "4", "-d", "1s"}, &out))
	assert.Contains(t, out.String(), "baseline GET /healthz:")
	assert.Contains(t, out.String(), "ratio:")

	// A reply without the wanted text is counted bad and fails the run.
	err := run([]string{"-url", srv.URL + "/soap", "-body", body, "-want", "paymentStatusReturn", "-c", "2", "-d", "1s"}, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad replies")
}

// The whole harness in quick mode: every party starts, every scenario runs
// and the report has the shape docs/performance.md describes. Speed is not
// checked (a shared machine); that replies were good is.
func TestSuiteQuickReportShape(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the bridge, the sandbox and the peers")
	}
	path := filepath.Join(t.TempDir(), "report.json")
	var out strings.Builder
	// A second per phase, as above: every scenario must count good replies.
	require.NoError(t, run([]string{"-quick", "-d", "1s", "-slow-clients", "8", "-rate", "40", "-idle-for", "1s", "-json", path}, &out))
	text := out.String()
	assert.Contains(t, text, "touch / ceiling, throughput")
	assert.Less(t, strings.Index(text, "\nfigure "), strings.Index(text, "\nscenario "), "ratios come first")

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(raw, &rep))
	var rj map[string]any
	require.NoError(t, json.Unmarshal(raw, &rj))
	keys := []string{}
	for k := range rj {
		keys = append(keys, k)
	}
	assert.Subset(t, keys, []string{"machine", "settings", "ratios", "scenarios"})

	ratios := map[string]headline{}
	for _, h := range rep.Ratios {
		ratios[h.Name] = h
		assert.Len(t, h.Rounds, 1, h.Name)
	}
	for _, name := range []string{"touch / ceiling, throughput", "paymentStatus / ceiling, throughput",
		"createPayment / ceiling, throughput", "slow gateway, 8 clients: bridge / straight at the gateway, throughput",
		"slow gateway, 8 clients: bridge / cap of 80/s", "slow gateway, 8 clients: bridge peak RSS",
		"slow gateway, 8 clients: bare Go reverse proxy / straight at the gateway, throughput",
		"slow gateway, 8 clients: bridge / bare Go reverse proxy, throughput",
		"slow gateway, open loop 40/s: p99", "slow gateway, open loop 40/s: failed calls"} {
		h, ok := ratios[name]
		if assert.True(t, ok, "ratio %q missing", name) {
			assert.Greater(t, h.Value, -1e-9, name)
		}
	}
	assert.Greater(t, ratios["touch / ceiling, throughput"].Value, 0.0)

	scen := map[string]scenarioReport{}
	for _, s := range rep.Scenarios {
		scen[s.Name] = s
	}
	want := []string{"ceiling", "touch", "paymentStatus", "createPayment", "slowgw-direct-8", "slowgw-relay-8", "slowgw-bridge-8", "slowgw-open-40",
		"slowgw-cold-50", "slowgw-cold-50-limit20", "slowgw-idle-50-limit20"}
	assert.Contains(t, ratios, "cold start, open loop 50/s, max_calls_in_progress 20: made")
	assert.Contains(t, ratios, "warm, then 1s idle, open loop 50/s, max_calls_in_progress 20: made in the first 5 s / warm made")
	assert.Contains(t, ratios, "cold start, open loop 50/s, max_calls_in_progress 20: made in the first 5 s")
	_, _, phpErr := phpTools()
	if phpErr == nil {
		want = append(want, "php-touch", "php-paymentStatus", "slowgw-php-8")
		assert.Contains(t, ratios, "bridge / PHP adapter, touch throughput")
	} else {
		assert.Contains(t, strings.Join(rep.Notes, "\n"), "PHP scenarios skipped: "+phpErr.Error())
	}
	for _, name := range want {
		s, ok := scen[name]
		if !assert.True(t, ok, "scenario %s missing", name) {
			continue
		}
		assert.Positive(t, s.OK, name)
		assert.Zero(t, s.Bad, name)
		assert.Positive(t, s.Throughput, name)
		assert.LessOrEqual(t, s.P50, s.P99, name)
		assert.LessOrEqual(t, s.P99, s.P999, name)
		assert.Contains(t, s.CPUPer1000, "client", name)
		assert.Contains(t, s.CPUPer1000, "server", name)
		assert.NotEmpty(t, s.PeakRSS, name)
	}
	assert.Positive(t, scen["touch"].PeakRSS["bridge"], "the bridge's VmHWM is read")
	assert.Contains(t, scen["paymentStatus"].CPUPer1000, "sandbox")
	if phpErr == nil {
		assert.Positive(t, scen["php-touch"].PeakRSS["php-fpm"], "the php-fpm workers' VmHWM is read")
	}
}

func TestSuiteRefusesUnboundedRuns(t *testing.T) {
	for _, args := range [][]string{{"-d", "10m"}, {"-d", "0s"}, {"-rounds", "0"}, {"-slow-clients", "0"}, {"-php", "maybe"}, {"-only", "("}, {"-max-conns", "0"}, {"-cold-rates", "x"}, {"-cold-limits", "0"}} {
		err := run(args, io.Discard)
		require.Error(t, err, args)
	}
}

// TestMain lets the test binary stand in for soapload when the harness
// starts its helper servers (`<self> -role …`).
func TestMain(m *testing.M) {
	if hasFlag(os.Args[1:], "role") {
		if err := runRole(os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// -c clients are -c connections, as that many real shops would open: a
// client whose request waited for a dial while another's connection came
// free takes that one, and the dial it started used to open one more. A
// bridge caps connections per address (max_connections_per_ip, 256), so
// 200 clients on a loaded machine were refused a connection now and then,
// and the documented load command failed.
func TestClientsAreConnections(t *testing.T) {
	var open, peak atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "<touchReturn>OK</touchReturn>")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			n := open.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	body := filepath.Join(t.TempDir(), "touch.xml")
	require.NoError(t, os.WriteFile(body, []byte("<x/>"), 0o600))
	const clients = 150
	require.NoError(t, run([]string{"-url", srv.URL + "/soap", "-body", body, "-want", "touchReturn", "-c", fmt.Sprint(clients), "-d", "1s"}, io.Discard))
	assert.LessOrEqual(t, peak.Load(), int64(clients), "connections open at once")
}
