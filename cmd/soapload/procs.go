package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"time"
)

// child is a server process the harness started; its output goes to a
// file (written by the kernel, so reading it costs the client nothing).
type child struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startChild starts argv with env added to the harness's environment and
// waits until its output matches ready; it returns the first submatch.
func startChild(dir, name string, argv, env []string, ready *regexp.Regexp, wait time.Duration) (*child, string, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} // no orphans if the harness dies
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); close(c.done) }() //nolint:errcheck // the exit is seen through done
	deadline := time.Now().Add(wait)
	for {
		b, _ := os.ReadFile(logPath)
		if m := ready.FindSubmatch(b); m != nil {
			got := ""
			if len(m) > 1 {
				got = string(m[1])
			}
			return c, got, nil
		}
		select {
		case <-c.done:
			b, _ = os.ReadFile(logPath)
			return nil, "", fmt.Errorf("%s exited during start-up: %s", name, tail(b))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, "", fmt.Errorf("%s not ready within %s: %s", name, wait, tail(b))
		}
	}
}

func tail(b []byte) string {
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(b)
}

// stop sends SIGTERM (SIGQUIT for nginx's graceful stop is not needed:
// TERM is its fast stop) and kills the process after 10 s.
func (c *child) stop() {
	if c == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// buildBinaries builds the bridge and the standalone sandbox into dir from
// the module at root.
func buildBinaries(ctx context.Context, root, dir string) error {
	for _, pkg := range []string{"soapbridge", "gatewaysandbox"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, pkg), "./cmd/"+pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/%s: %w: %s", pkg, err, out)
		}
	}
	return nil
}

// moduleRoot finds the directory of go.mod from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("not inside the soapbridge module (no go.mod found)")
		}
		dir = up
	}
}
