package doccheck

// TestDocsCommands runs every command of README.md and docs/*.md, so that
// none rots. See the package comment for the block attributes; the lists
// below are the only other ways out, and are reviewed like code.

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// ciCommands are shown in the docs but not run here: CI runs them itself
// (.ci/run is `make test`, which is install-deps, start-postgres, vet and
// every test, this one included).
var ciCommands = map[string]string{
	"make test":    ".ci/run runs it",
	"bash .ci/run": "the CI entry point",
}

// runElsewhere are documents whose sh blocks form one shell session
// (functions and variables carried from block to block) that another test
// runs, in order, against its own server.
var runElsewhere = map[string]string{
	"docs/sandbox-controls.md": "cmd/gatewaysandbox TestSandboxControlsDoc runs its blocks as one session",
}

// maxNoRun bounds the {no-run: …} blocks: an escape hatch, not a habit.
const maxNoRun = 4

// expectOutput: commands whose success is more than their exit status. Each
// must appear in the docs (a walkthrough step cannot be dropped silently)
// and its output must match every pattern.
var expectOutput = map[string][]string{
	"php examples/first-payment/create.php": {
		`created payment \d+: CREATED, reply signature ok`,
		`/gw/pay-full-v2\?sessionInfo\.targetGoId=`},
	"php examples/first-payment/pay.php": {
		`pay-full-v2 redirects to the sandbox payment page: http://127\.0\.0\.1:\d+/gw/v3/`,
		`payment \d+ is now state PAID`,
		`e-shop says: customer back from paying payment \d+ .*signature ok`},
	"php examples/first-payment/notifications.php": {
		`notification of payment \d+ received by the e-shop, signature ok`},
	"php examples/first-payment/status.php": {
		`sessionState PAID, paymentChannel eu_gp_u, .*signature ok`},
}

// The ports the docs use, replaced by free ones in every command and probe
// URL, so the test never collides with a bridge someone runs.
var docPorts = []string{"8080", "8090", "8000", "9090"}

var portRE = regexp.MustCompile(`\b(8080|8090|8000|9090)\b`)

// nestedEnv marks the commands' environment: a docs command that runs the
// test suite (`go test ./...`) must not start this test again, and again.
const nestedEnv = "DOCCHECK_NESTED"

func TestDocsCommands(t *testing.T) {
	if os.Getenv(nestedEnv) != "" {
		t.Skip("run by a command of the docs being checked")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(root, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	sort.Strings(docs)
	files = append(files, docs...)

	seen := map[string]bool{}
	noRun := 0
	readmeRan := false // false when -run selected other documents
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		if why, ok := runElsewhere[rel]; ok {
			t.Logf("%s: not run here: %s", rel, why)
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := Parse(rel, string(data))
		if err != nil {
			t.Fatal(err)
		}
		var runnable []Block
		for _, b := range blocks {
			switch {
			case b.Lang == "":
				t.Errorf("%s: fenced block without a language: say sh (run by this test), text, yaml, …", b.Where())
			case !b.Shell():
			case b.Attr == "no-run":
				noRun++
				if b.Value == "" {
					t.Errorf("%s: {no-run} needs a reason: {no-run: why}", b.Where())
				}
			case b.Attr == "serve" || b.Attr == "":
				runnable = append(runnable, b)
			default:
				t.Errorf("%s: unknown attribute %q (serve, no-run)", b.Where(), b.Attr)
			}
		}
		if len(runnable) == 0 {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			readmeRan = readmeRan || rel == "README.md"
			s := newSession(t, root)
			defer s.stopAll()
			for _, b := range runnable {
				cmds := Commands(b.Body)
				if b.Attr == "serve" {
					if len(cmds) != 1 {
						t.Fatalf("%s: a {serve} block holds exactly one command, not %d", b.Where(), len(cmds))
					}
					s.serve(b, cmds[0])
					continue
				}
				for _, c := range cmds {
					if why, ok := ciCommands[withoutComment(c)]; ok {
						t.Logf("%s: %s: not run here, %s", b.Where(), c, why)
						continue
					}
					seen[c] = true
					s.run(b, c)
				}
			}
		})
	}
	if noRun > maxNoRun {
		t.Errorf("%d {no-run} blocks, at most %d: make the commands runnable here", noRun, maxNoRun)
	}
	for c := range expectOutput {
		if readmeRan && !seen[c] {
			t.Errorf("the docs no longer run %q (the first payment walkthrough needs it)", c)
		}
	}
}

// session runs the commands of one document: same ports, environment and
// temporary directory, and the servers its {serve} blocks started.
type session struct {
	t       *testing.T
	root    string
	ports   map[string]string // doc port → free port
	env     []string
	servers map[string]*server // by probe host:port
}

type server struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

func newSession(t *testing.T, root string) *session {
	tmp := t.TempDir()
	s := &session{t: t, root: root, ports: map[string]string{}, servers: map[string]*server{}}
	for _, p := range docPorts {
		s.ports[p] = freePort(t)
	}
	for _, kv := range os.Environ() {
		// The docs' commands must not pick up the caller's bridge settings.
		if !strings.HasPrefix(kv, "SOAPBRIDGE_") && !strings.HasPrefix(kv, "TMPDIR=") {
			s.env = append(s.env, kv)
		}
	}
	a, b, c := s.ports["8080"], s.ports["8090"], s.ports["8000"]
	s.env = append(s.env,
		"SOAPBRIDGE_LISTEN=127.0.0.1:"+a,
		"SOAPBRIDGE_SANDBOX_LISTEN=127.0.0.1:"+b,
		"SOAPBRIDGE_ADMIN_LISTEN=127.0.0.1:"+s.ports["9090"],
		"SOAPBRIDGE_DATABASE="+filepath.Join(tmp, "soapbridge.db"),
		"TMPDIR="+tmp,
		nestedEnv+"=1",
		// The example scripts' settings (their defaults are the docs' ports).
		"BRIDGE_URL=http://127.0.0.1:"+a,
		"SANDBOX_URL=http://127.0.0.1:"+b,
		"SHOP_URL=http://127.0.0.1:"+c,
	)
	return s
}

// withoutComment drops a trailing shell comment ("make test   # all").
func withoutComment(cmd string) string {
	return strings.TrimSpace(commentRE.ReplaceAllString(cmd, ""))
}

var commentRE = regexp.MustCompile(`\s#[^'"]*$`)

// localize replaces the docs' ports by the session's.
func (s *session) localize(text string) string {
	return portRE.ReplaceAllStringFunc(text, func(p string) string { return s.ports[p] })
}

// shorten makes long-running measurements quick: each benchmark runs once,
// a load phase lasts one second. What is checked is that the command and
// the benchmarks it names still exist and run, not the figures.
func shorten(cmd string) (string, []string) {
	switch {
	case cmd == "make bench":
		// Added to the caller's GOFLAGS (make test's -trimpath): other
		// flags would compile every package again.
		return cmd, []string{"GOFLAGS=" + strings.TrimSpace(goflags()+" -benchtime=1x")}
	case strings.HasPrefix(cmd, "go test ") && strings.Contains(cmd, "-bench"):
		return cmd + " -benchtime=1x -count=1", nil
	case strings.HasPrefix(cmd, "go run ./cmd/soapload "):
		return regexp.MustCompile(`-d \S+`).ReplaceAllString(cmd, "-d 1s"), nil
	}
	return cmd, nil
}

// goflags is the GOFLAGS the go command sees: the environment's, else the
// go env file's.
func goflags() string {
	if v, ok := os.LookupEnv("GOFLAGS"); ok {
		return v
	}
	out, _ := exec.Command("go", "env", "GOFLAGS").Output()
	return strings.TrimSpace(string(out))
}

// needTools skips (or under CI fails) when a command's program is absent.
func (s *session) needTools(cmd string) {
	t := s.t
	t.Helper()
	for _, w := range strings.Fields(cmd) {
		if strings.Contains(w, "=") {
			continue // VAR=value before the program
		}
		switch w {
		case "php":
			testenv.LookPath(t, "php", "apt-get install php-cli php-soap")
			if exec.Command("php", "-r", `exit(extension_loaded("soap") ? 0 : 1);`).Run() != nil {
				testenv.Missing(t, "the PHP soap extension", "apt-get install php-soap")
			}
		case "curl":
			testenv.LookPath(t, "curl", "apt-get install curl")
		case "make":
			testenv.LookPath(t, "make", "apt-get install make")
		}
		return
	}
}

func (s *session) command(ctx context.Context, cmd string, extraEnv []string) *exec.Cmd {
	c := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", cmd)
	c.Dir = s.root
	c.Env = append(append([]string(nil), s.env...), extraEnv...)
	// Own process group: make → go run → binary all get the signal.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	// A grandchild left holding the output pipe must not hang the test.
	c.WaitDelay = 5 * time.Second
	return c
}

// run runs one command to its end; it must exit 0 (and match expectOutput).
func (s *session) run(b Block, doc string) {
	t := s.t
	t.Helper()
	s.needTools(doc)
	cmd, env := shorten(s.localize(doc))
	// A safety net, not a measure of speed: `make build` on a loaded
	// machine compiles for minutes when its packages are not cached.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := s.command(ctx, cmd, env)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err := c.Run()
	t.Logf("%s: $ %s (%s)\n%s", b.Where(), cmd, time.Since(start).Round(time.Millisecond), indent(out.String()))
	if err != nil {
		t.Fatalf("%s: %q failed: %v", b.Where(), doc, err)
	}
	for _, pat := range expectOutput[doc] {
		if !regexp.MustCompile(pat).MatchString(out.String()) {
			t.Errorf("%s: output of %q does not match %q", b.Where(), doc, pat)
		}
	}
}

// serve starts a long-running command, waits until its probe URL answers
// 200, and leaves it running for the document's next commands. A server
// already on the probe's port (an earlier block) is stopped first.
func (s *session) serve(b Block, doc string) {
	t := s.t
	t.Helper()
	probe := s.localize(b.Value)
	if !strings.HasPrefix(probe, "http://") {
		t.Fatalf("%s: {serve: URL}: %q is not an http:// URL to probe", b.Where(), b.Value)
	}
	host := strings.SplitN(strings.TrimPrefix(probe, "http://"), "/", 2)[0]
	_, port, _ := net.SplitHostPort(host)
	if old := s.servers[port]; old != nil {
		s.stop(old)
		delete(s.servers, port)
	}
	s.needTools(doc)
	cmd := s.localize(doc)
	c := s.command(context.Background(), cmd, nil)
	srv := &server{cmd: c, out: &syncBuffer{}, done: make(chan struct{})}
	c.Stdout, c.Stderr = srv.out, srv.out
	if err := c.Start(); err != nil {
		t.Fatalf("%s: start %q: %v", b.Where(), cmd, err)
	}
	go func() { c.Wait(); close(srv.done) }() //nolint:errcheck // a stopped server's status says nothing
	s.servers[port] = srv
	t.Logf("%s: $ %s &", b.Where(), cmd)

	// go run and make run compile first; the machine may be busy.
	deadline := time.Now().Add(4 * time.Minute)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(probe)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("%s: %s answers 200", b.Where(), probe)
				return
			}
		}
		select {
		case <-srv.done:
			t.Fatalf("%s: %q exited before %s answered:\n%s", b.Where(), doc, probe, indent(srv.out.String()))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s did not answer 200 within 4 minutes (last error %v); output:\n%s", b.Where(), probe, err, indent(srv.out.String()))
		}
	}
}

// stop sends SIGTERM to the server's process group and waits for it (a
// graceful stop is the servers' own tests' business), then SIGKILL.
func (s *session) stop(srv *server) {
	_ = syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-srv.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGKILL)
		<-srv.done
	}
	s.t.Logf("stopped %q; its output:\n%s", srv.cmd.Args[len(srv.cmd.Args)-1], indent(srv.out.String()))
}

func (s *session) stopAll() {
	for port, srv := range s.servers {
		s.stop(srv)
		delete(s.servers, port)
	}
}

// freePort picks a free port outside the kernel's ephemeral range. A port
// from ":0" is an ephemeral one, and a document's server binds its port
// only after the commands before it ran (tens of seconds); meanwhile any
// outgoing connection of the tests running beside it may take that port
// as its local one ("bind: address already in use", seen in CI). No
// outgoing connection and no ":0" listener ever gets a port outside the
// range, so only another caller of freePort could, and each checks its
// pick is free.
func freePort(t *testing.T) string {
	t.Helper()
	lo, hi := 32768, 60999 // Linux's default, when the range cannot be read
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if l, err := strconv.Atoi(f[0]); err == nil {
				lo = l
			}
			if h, err := strconv.Atoi(f[1]); err == nil {
				hi = h
			}
		}
	}
	from, to := 10000, lo // below the range, where it starts high enough
	if lo-from < 1000 {
		from, to = hi+1, 65536
	}
	for range 200 {
		port := strconv.Itoa(from + rand.IntN(to-from))
		if ln, err := net.Listen("tcp", "127.0.0.1:"+port); err == nil {
			ln.Close()
			return port
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// indent keeps logged output apart from the test's own lines, and short.
func indent(s string) string {
	const max = 8000
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// syncBuffer collects a server's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
