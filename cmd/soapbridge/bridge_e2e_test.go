package main

// End-to-end harness: the real soapbridge binary as a subprocess, driven by
// real legacy SOAP clients (PHP SoapClient, Apache Axis 1.4 stubs).

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The demo merchant of the embedded sandbox, set explicitly so that the
// client scripts know the secure key.
const (
	demoGoID         = "8123456789"
	demoClientID     = "sandbox-client"
	demoClientSecret = "sandbox-secret"
	demoSecureKey    = "DemoSecureKey-0123456789"
	soapPath         = "/axis/EPaymentServiceV2"
)

var (
	e2eTmp       string // removed after the run
	e2eBinary    string // built once per test run, on first use
	e2eBuild     sync.Once
	e2eBuildErr  error
	e2eSandbox   string // cmd/gatewaysandbox, built on demand
	sandboxBuild sync.Once
	sandboxErr   error
)

func TestMain(m *testing.M) {
	os.Exit(runE2E(m))
}

func runE2E(m *testing.M) int {
	var err error
	e2eTmp, err = os.MkdirTemp("", "soapbridge-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(e2eTmp)
	return m.Run()
}

// bridgeBinary builds this package once per run, on first use, so the
// package's unit tests run alone do not pay for it. SOAPBRIDGE_E2E_BINARY
// runs the suite against a prebuilt binary (e.g. the release build of
// `make build`) instead.
func bridgeBinary(t *testing.T) string {
	t.Helper()
	e2eBuild.Do(func() {
		if e2eBinary = os.Getenv("SOAPBRIDGE_E2E_BINARY"); e2eBinary == "" {
			e2eBinary = filepath.Join(e2eTmp, "soapbridge")
			e2eBuildErr = goBuild(e2eBinary, ".")
		}
	})
	if e2eBuildErr != nil {
		t.Fatal(e2eBuildErr)
	}
	return e2eBinary
}

func goBuild(out, pkg string) error {
	args := []string{"build", "-o", out}
	if raceOn {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// gatewaySandboxBinary builds cmd/gatewaysandbox once per run.
func gatewaySandboxBinary(t *testing.T) string {
	t.Helper()
	sandboxBuild.Do(func() {
		e2eSandbox = filepath.Join(e2eTmp, "gatewaysandbox")
		sandboxErr = goBuild(e2eSandbox, "../gatewaysandbox")
	})
	if sandboxErr != nil {
		t.Fatal(sandboxErr)
	}
	return e2eSandbox
}

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// bridgeProc is one running soapbridge.
type bridgeProc struct {
	URL        string // public root, e.g. http://127.0.0.1:41234
	SOAPURL    string // URL + soapPath
	WSDLURL    string // SOAPURL + "?wsdl"
	SandboxURL string // the sandbox gateway the bridge talks to (embedded or not)
	AdminURL   string // the admin listener (metrics, probes, status page)
	DB         string // SQLite file

	t        *testing.T
	cmd      *exec.Cmd
	log      *syncBuffer
	readyAt  int // log length when /healthz first answered
	embedded bool
	done     chan struct{}
	waitErr  error
	stopped  bool
}

// bridgeOpt adjusts a bridge start: extra SOAPBRIDGE_* variables or a DB.
type bridgeOpt func(*bridgeConfig)

type bridgeConfig struct {
	env []string
	db  string
}

// withEnv adds KEY=VALUE pairs to the bridge's environment.
func withEnv(kv ...string) bridgeOpt {
	return func(c *bridgeConfig) { c.env = append(c.env, kv...) }
}

// withDB makes the bridge use (and keep) the given SQLite file.
func withDB(path string) bridgeOpt { return func(c *bridgeConfig) { c.db = path } }

// startBridge runs the built binary with the demo merchant on free loopback
// ports and waits for /healthz. It is stopped (SIGTERM, must exit 0) at the
// end of t unless stopped before. A port taken between choosing and binding
// it (other test packages run in parallel) means another try on new ports.
func startBridge(t *testing.T, opts ...bridgeOpt) *bridgeProc {
	t.Helper()
	bin := bridgeBinary(t)
	cfg := bridgeConfig{db: filepath.Join(t.TempDir(), "bridge.db")}
	for _, o := range opts {
		o(&cfg)
	}
	for attempt := 1; ; attempt++ {
		b, err := tryStartBridge(t, bin, cfg)
		if err == nil {
			return b
		}
		if attempt < 3 && strings.Contains(b.log.String(), "address already in use") {
			continue
		}
		t.Fatalf("%v; log:\n%s", err, b.log.String())
	}
}

func tryStartBridge(t *testing.T, bin string, cfg bridgeConfig) (*bridgeProc, error) {
	t.Helper()
	ports := freePorts(t, 3)
	port, sandboxPort := ports[0], ports[1]
	b := &bridgeProc{
		URL:        "http://127.0.0.1:" + port,
		SandboxURL: "http://127.0.0.1:" + sandboxPort,
		AdminURL:   "http://127.0.0.1:" + ports[2],
		DB:         cfg.db,
		t:          t,
		log:        &syncBuffer{},
		embedded:   true,
		done:       make(chan struct{}),
	}
	b.SOAPURL = b.URL + soapPath
	b.WSDLURL = b.SOAPURL + "?wsdl"
	env := []string{
		"SOAPBRIDGE_LISTEN=127.0.0.1:" + port,
		"SOAPBRIDGE_SANDBOX_LISTEN=127.0.0.1:" + sandboxPort,
		"SOAPBRIDGE_ADMIN_LISTEN=127.0.0.1:" + ports[2],
		"SOAPBRIDGE_PUBLIC_URL=" + b.URL,
		"SOAPBRIDGE_DATABASE=" + cfg.db,
		"SOAPBRIDGE_GOID=" + demoGoID,
		"SOAPBRIDGE_CLIENT_ID=" + demoClientID,
		"SOAPBRIDGE_CLIENT_SECRET=" + demoClientSecret,
		"SOAPBRIDGE_SECURE_KEY=" + demoSecureKey,
		"SOAPBRIDGE_LOG_LEVEL=debug",   // the most talkative level, for the secret check
		"SOAPBRIDGE_LOG_BUFFER=0",      // tests read the log as soon as a call is answered
		"SOAPBRIDGE_SHUTDOWN_DELAY=0s", // no balancer to leave; the drain tests set it (drain_e2e_test.go)
	}
	for _, kv := range cfg.env {
		if strings.HasPrefix(kv, "SOAPBRIDGE_GATEWAY_URL=") && kv != "SOAPBRIDGE_GATEWAY_URL=" {
			b.embedded = false
			b.SandboxURL = strings.TrimSuffix(strings.TrimPrefix(kv, "SOAPBRIDGE_GATEWAY_URL="), "/api")
		}
	}
	if b.embedded {
		// The demo merchant's values set explicitly count as merchant
		// settings: the sandbox must be asked for.
		env = append(env, "SOAPBRIDGE_SANDBOX=true")
	}
	env = append(env, cfg.env...) // later entries win in exec
	b.cmd = exec.Command(bin)
	b.cmd.Env = append(envWithout("SOAPBRIDGE_"), env...)
	b.cmd.Dir = t.TempDir()
	b.cmd.Stdout, b.cmd.Stderr = b.log, b.log
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.waitErr = b.cmd.Wait(); close(b.done) }()
	if err := waitHealthy(b.URL+"/healthz", b.done); err != nil {
		_ = b.cmd.Process.Kill()
		<-b.done
		return b, err
	}
	b.readyAt = b.log.Len()
	t.Cleanup(func() {
		if !b.stopped {
			b.Stop()
		}
		if t.Failed() {
			t.Logf("soapbridge log:\n%s", b.log.String())
		}
	})
	return b, nil
}

// Stop sends SIGTERM and requires a graceful exit (status 0) within 10 s,
// then checks the log for secrets.
func (b *bridgeProc) Stop() {
	t := b.t
	t.Helper()
	b.stopped = true
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
	select {
	case <-b.done:
		if b.waitErr != nil {
			t.Errorf("soapbridge did not exit cleanly after SIGTERM: %v", b.waitErr)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("soapbridge still running 10 s after SIGTERM; killing it")
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	checkNoSecrets(t, b.log.String(), b.readyAt, b.embedded)
	checkNoRace(t, b.log.String())
}

// Kill ends the bridge with SIGKILL (a crash: no shutdown code runs), for
// recovery tests, then checks the log for secrets.
func (b *bridgeProc) Kill() {
	t := b.t
	t.Helper()
	b.stopped = true
	if err := b.cmd.Process.Kill(); err != nil {
		t.Errorf("SIGKILL: %v", err)
	}
	<-b.done
	checkNoSecrets(t, b.log.String(), b.readyAt, b.embedded)
	checkNoRace(t, b.log.String())
}

// checkNoRace fails the test when the bridge, built with -race in the race
// pass, reported a data race.
func checkNoRace(t *testing.T, log string) {
	t.Helper()
	if i := strings.Index(log, "WARNING: DATA RACE"); i >= 0 {
		t.Errorf("the bridge reported a data race:\n%s", log[i:min(len(log), i+6000)])
	}
}

// checkNoSecrets: with the embedded sandbox the bridge prints the demo
// merchant's credentials once at start, on purpose (so `go run` is usable).
// So secrets are allowed only before /healthz first answered, and only with
// the embedded sandbox; everything logged while serving must be clean.
func checkNoSecrets(t *testing.T, log string, readyAt int, embedded bool) {
	t.Helper()
	start := 0
	if embedded {
		start = min(readyAt, len(log))
	}
	secrets := []string{demoClientSecret, demoSecureKey}
	for _, secret := range secrets {
		if i := strings.Index(log[start:], secret); i >= 0 {
			line := log[start+i:]
			if j := strings.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
			}
			for _, s := range secrets {
				line = strings.ReplaceAll(line, s, "***")
			}
			t.Errorf("secret %q appears in the bridge log while serving: ...%s", secret[:4]+"…", line)
		}
	}
}

// waitHealthy polls url until it answers 200, the process dies, or 20 s pass.
func waitHealthy(url string, done <-chan struct{}) error {
	deadline := time.Now().Add(20 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("process exited before %s answered", url)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within 20 s (last error %v)", url, err)
		}
	}
}

// freePorts returns n distinct free loopback ports (all held open while
// choosing, so none is handed out twice).
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, fmt.Sprint(l.Addr().(*net.TCPAddr).Port))
	}
	return ports
}

// envWithout is the test's environment less variables starting with prefix,
// so a developer's own SOAPBRIDGE_* settings cannot leak into the run.
func envWithout(prefix string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}

// runTool runs a client program with a bounded time and returns its stdout;
// stderr goes to the test log when the program fails.
func runTool(t *testing.T, timeout time.Duration, env []string, name string, args ...string) (stdout string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err != nil {
		t.Logf("%s %s: %v\nstderr:\n%s\nstdout:\n%s", filepath.Base(name), strings.Join(args, " "), err, errb.String(), out.String())
	}
	return out.String(), err
}

// clientEnv is what the PHP and Java clients need to know about a bridge.
func (b *bridgeProc) clientEnv() []string {
	return []string{
		"BRIDGE_WSDL_URL=" + b.WSDLURL,
		"BRIDGE_SOAP_URL=" + b.SOAPURL,
		"SANDBOX_URL=" + b.SandboxURL,
		"GOID=" + demoGoID,
		"SECURE_KEY=" + demoSecureKey,
	}
}
