package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// adminGetAs GETs url with the given Host header.
func adminGetAs(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// A DNS-rebinding page (a name of the attacker's pointed at the admin
// listener's address) gets nothing from the admin listener: not the
// migration report, the status page, pprof, the outbox or the metrics.
// The listener's own address, localhost, any IP address (the kubelet's
// probes and Prometheus's scrapes send the pod IP) and a name listed in
// admin_hosts are answered.
func TestAdminListenerRefusesForeignHosts(t *testing.T) {
	b := startBridge(t, withEnv("SOAPBRIDGE_ADMIN_HOSTS=soapbridge-admin.monitoring.svc, Admin.Example.COM"))
	port := b.AdminURL[strings.LastIndex(b.AdminURL, ":")+1:]
	paths := []string{"/", "/report", "/report.json", "/debug/pprof/", "/debug/pprof/cmdline", "/outbox", "/metrics", "/readyz", "/livez"}

	for _, host := range []string{"rebind.attacker.example:" + port, "rebind.attacker.example", "localhost.attacker.example:" + port,
		"127.0.0.1.nip.io:" + port, "admin.example.com.attacker.example"} {
		for _, path := range paths {
			st, body := adminGetAs(t, b.AdminURL+path, host)
			assert.Equal(t, http.StatusMisdirectedRequest, st, "%s under Host %s", path, host)
			assert.Contains(t, body, "admin_hosts", "the message names the setting")
			assert.NotContains(t, body, demoClientID, "%s under Host %s", path, host)
			assert.NotContains(t, body, "goroutine", "%s under Host %s", path, host)
			assert.NotContains(t, body, "soapbridge_", "%s under Host %s", path, host)
		}
	}

	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "localhost:18080", "[::1]:" + port,
		"10.244.1.17:" + port, "10.244.1.17", "[fd00::17]:" + port,
		"soapbridge-admin.monitoring.svc:" + port, "admin.example.com", "ADMIN.example.com.:" + port} {
		st, body := adminGetAs(t, b.AdminURL+"/", host)
		assert.Equal(t, http.StatusOK, st, "status page under Host %s", host)
		assert.Contains(t, body, demoClientID, "status page under Host %s", host)
		st, _ = adminGetAs(t, b.AdminURL+"/report", host)
		assert.Equal(t, http.StatusOK, st, "/report under Host %s", host)
		st, _ = adminGetAs(t, b.AdminURL+"/debug/pprof/", host)
		assert.Equal(t, http.StatusOK, st, "/debug/pprof/ under Host %s", host)
		st, body = adminGetAs(t, b.AdminURL+"/metrics", host)
		assert.Equal(t, http.StatusOK, st, "/metrics under Host %s", host)
		assert.Contains(t, body, "soapbridge_")
	}
}
