// Command gatewaysandbox runs the sandbox payment gateway alone: the REST
// interface under /api, the payment page under /gw/, the embed script and
// the JSON test helpers under /sandbox/ (see package sandbox).
//
// Configuration (flags override the environment):
//
//	-listen     SOAPBRIDGE_SANDBOX_LISTEN (or SANDBOX_LISTEN)  default 127.0.0.1:8090
//	-public-url SOAPBRIDGE_SANDBOX_PUBLIC_URL  public root for gw_url; default from each request's Host
//	-goid       SOAPBRIDGE_GOID                default 8123456789
//	-client-id  SOAPBRIDGE_CLIENT_ID           default sandbox-client
//	-merchant-name SOAPBRIDGE_MERCHANT_NAME    shown on the payment page; default "Sandbox e-shop"
//	-state      SOAPBRIDGE_SANDBOX_STATE       JSON file to keep payments in across restarts; default none (memory)
//	            SOAPBRIDGE_CLIENT_SECRET       default sandbox-secret (environment only)
//	            SOAPBRIDGE_LOG_LEVEL           debug, info (default), warn, error
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
)

// demo is the merchant registered unless the settings name another.
var demo = sandbox.DemoAccount

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "gatewaysandbox:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; ready (tests) receives the bound address.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer, ready func(addr string)) error {
	env := func(def string, keys ...string) string {
		for _, k := range keys {
			if v := getenv(k); v != "" {
				return v
			}
		}
		return def
	}
	fs := flag.NewFlagSet("gatewaysandbox", flag.ContinueOnError)
	fs.SetOutput(out)
	listen := fs.String("listen", env("127.0.0.1:8090", "SOAPBRIDGE_SANDBOX_LISTEN", "SANDBOX_LISTEN"), "listen address")
	publicURL := fs.String("public-url", env("", "SOAPBRIDGE_SANDBOX_PUBLIC_URL"), "public root URL used in gw_url (default: from the request)")
	goidStr := fs.String("goid", env(strconv.FormatInt(demo.GoID, 10), "SOAPBRIDGE_GOID"), "merchant goid")
	clientID := fs.String("client-id", env(demo.ClientID, "SOAPBRIDGE_CLIENT_ID"), "merchant OAuth2 client id")
	name := fs.String("merchant-name", env("Sandbox e-shop", "SOAPBRIDGE_MERCHANT_NAME"), "merchant name shown on the payment page")
	state := fs.String("state", env("", "SOAPBRIDGE_SANDBOX_STATE"), "JSON file the sandbox keeps its payments in across restarts (default: memory only)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // -h printed the usage: not a failure
		}
		return err
	}
	goid, err := strconv.ParseInt(*goidStr, 10, 64)
	if err != nil || goid <= 0 {
		return fmt.Errorf("goid %q is not a positive integer", *goidStr)
	}
	secret := env(demo.ClientSecret, "SOAPBRIDGE_CLIENT_SECRET")

	level := zapcore.InfoLevel
	if l := getenv("SOAPBRIDGE_LOG_LEVEL"); l != "" {
		if err := level.Set(l); err != nil {
			return fmt.Errorf("SOAPBRIDGE_LOG_LEVEL: %w", err)
		}
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(level)
	log, err := zc.Build()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	g, err := sandbox.Open(sandbox.Options{
		Merchants: []sandbox.Merchant{{Account: restbackend.Account{GoID: goid, ClientID: *clientID, ClientSecret: secret}, Name: *name}},
		BaseURL:   *publicURL,
		Logger:    log,
		StateFile: *state,
		// A bridge's kept database must never see an id twice, even
		// without a state file; and every statement format is offered.
		SeedIDsFromClock: true,
		StatementFormats: sandbox.AllStatementFormats,
	})
	if err != nil {
		return err
	}
	defer g.Close()

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	root := *publicURL
	if root == "" {
		root = "http://" + ln.Addr().String()
	}
	shown := secret
	if secret != demo.ClientSecret {
		shown = "(from SOAPBRIDGE_CLIENT_SECRET)"
	}
	fmt.Fprintf(out, "sandbox gateway listening on %s\n  REST root:     %s/api\n  merchant goid: %d\n  client id:     %s\n  client secret: %s\n",
		ln.Addr(), root, goid, *clientID, shown)
	if *state != "" {
		fmt.Fprintf(out, "  state file:    %s\n", *state)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("sandbox gateway stopped")
	return nil
}
