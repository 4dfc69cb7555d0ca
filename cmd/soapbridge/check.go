package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
)

// Subcommands beside serving. Both read the configuration exactly as the
// server does (file, SOAPBRIDGE_ variables, flags), so they check what the
// server would run with.
const (
	cmdCheck       = "check"
	cmdHealthcheck = "healthcheck"
	cmdMigrate     = "migrate"
	cmdVersion     = "version"
)

// answered prints what loadConfig's -h and -version ask for, and reports
// whether err was one of them: an answer, not a failure.
func answered(err error, out io.Writer) bool {
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(out)
	case errors.Is(err, errVersion):
		fmt.Fprintln(out, versionLine())
	default:
		return false
	}
	return true
}

// versionLine is what `soapbridge version` and -version print: the module
// version, the VCS revision the binary was built from and the Go version.
func versionLine() string {
	rev, modified := "unknown", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision":
				rev = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				modified = " (modified)"
			}
		}
	}
	return fmt.Sprintf("soapbridge %s, revision %s%s, %s", buildVersion(), rev, modified, runtime.Version())
}

// subcommand runs the subcommand named by args[0], if any.
func subcommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) (handled bool, err error) {
	if len(args) == 0 {
		return false, nil
	}
	switch args[0] {
	case cmdCheck:
		return true, runCheck(ctx, args[1:], getenv, stdout)
	case cmdHealthcheck:
		return true, runHealthcheck(ctx, args[1:], getenv, stdout)
	case cmdMigrate:
		return true, runMigrate(ctx, args[1:], getenv, stdout)
	case cmdVersion:
		fmt.Fprintln(stdout, versionLine())
		return true, nil
	case cmdReport:
		return true, runReport(ctx, args[1:], getenv, stdout)
	}
	return false, nil
}

// checkRow is one line of the check table.
type checkRow struct {
	what, result, detail string
}

// runCheck validates the configuration, reads the store's schema state and
// connection limit, pings the gateway, fetches a token for each merchant,
// and prints a table. It fails when any row failed. It changes nothing (no
// migration, no file created), and nothing it prints contains a secret.
func runCheck(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var rows []checkRow
	add := func(what string, err error, ok string) {
		if err != nil {
			rows = append(rows, checkRow{what, "FAIL", oneLine(err.Error())})
		} else {
			rows = append(rows, checkRow{what, "ok", ok})
		}
	}
	defer func() { printRows(stdout, rows) }()

	cfg, err := loadConfig(args, getenv)
	if answered(err, stdout) {
		return nil
	}
	if err != nil {
		for _, e := range strings.Split(err.Error(), "\n") {
			rows = append(rows, checkRow{"configuration", "FAIL", e})
		}
		return errors.New("the configuration is not valid")
	}
	src := "defaults, environment, flags"
	if cfg.ConfigFile != "" {
		src = cfg.ConfigFile + ", environment, flags"
	}
	add("configuration", nil, fmt.Sprintf("%d merchant(s) from %s", len(cfg.Merchants), src))

	rows = append(rows, checkStore(ctx, cfg)...)

	gatewayURL := cfg.GatewayURL
	if cfg.usesSandbox() {
		// The embedded sandbox on a loopback port of its own: what is
		// checked is that the merchants' credentials are accepted by it.
		sbCfg := cfg
		sbCfg.SandboxListen = "127.0.0.1:0"
		sb, err := startSandbox(sbCfg, zap.NewNop(), 0)
		if err != nil {
			add("gateway", err, "")
			return errors.New("some checks failed")
		}
		defer sb.stop(5 * time.Second)
		gatewayURL = sb.url + "/api"
		rows = append(rows, checkRow{"gateway", "ok", "embedded sandbox gateway (fake payments, not for production)"})
	} else {
		add("gateway", pingGateway(ctx, gatewayURL), gatewayURL+" answers")
	}

	gw := restbackend.New(restbackend.Config{BaseURL: gatewayURL, UserAgent: "soapbridge-check", Timeout: 15 * time.Second})
	for _, m := range cfg.Merchants {
		_, err := gw.Token(ctx, restbackend.Credentials{ClientID: m.ClientID, ClientSecret: m.ClientSecret})
		add(fmt.Sprintf("merchant %d", m.GoID), err, "token issued for client "+m.ClientID)
	}
	for _, r := range rows {
		if r.result != "ok" {
			return errors.New("some checks failed")
		}
	}
	return nil
}

// pingGateway sends a GET to the gateway's REST root: any HTTP answer
// (even 404) means the gateway is reachable; only transport errors fail.
func pingGateway(ctx context.Context, gatewayURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, gatewayURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("unreachable: %w", err)
	}
	resp.Body.Close()
	return nil
}

func printRows(w io.Writer, rows []checkRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.what, r.result, r.detail)
	}
	tw.Flush()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// runHealthcheck GETs the health endpoint of the bridge running with the
// same configuration, through loopback, for container health checks (the
// image has no shell and no curl). It fails unless the answer is 200.
func runHealthcheck(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(args, getenv)
	if answered(err, stdout) {
		return nil
	}
	if err != nil {
		return err
	}
	u, err := healthURL(cfg.Listen)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck %s: status %d", u, resp.StatusCode)
	}
	fmt.Fprintf(stdout, "ok %s\n", u)
	return nil
}

// healthURL is the health endpoint of a bridge listening on listen, as
// reached from the same host: an unspecified address becomes loopback.
func healthURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen: %q is not host:port", listen)
	}
	if _, err := strconv.Atoi(port); err != nil || port == "0" {
		return "", fmt.Errorf("listen: %q names no fixed port to check", listen)
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
