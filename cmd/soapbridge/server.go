package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/time/rate"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/internal/header"
	"github.com/legacybridge/soapbridge/internal/logctx"
	"github.com/legacybridge/soapbridge/internal/reqid"
	"github.com/legacybridge/soapbridge/internal/tracing"
	"github.com/legacybridge/soapbridge/soapenc"
)

// newEcho returns the router with the middleware every request goes
// through, outermost first: request id, access log (which also records the
// caller's address, after proxies, for the request's log lines), call
// context (request id, caller's address, the configuration pinned from
// snaps when not nil, trace), panic recovery. What differs between the
// SOAP endpoint and the rest is in each route group's own chain
// (soapRoute, webRoutes).
func newEcho(log *zap.Logger, tr *tracing.Tracer, proxies *access.Proxies, snaps *snapshots) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Logger.SetOutput(io.Discard) // everything goes through zap
	e.Use(
		front(log.Named("http"), callContext(tr, proxies, snaps)),
		middleware.RecoverWithConfig(middleware.RecoverConfig{LogErrorFunc: logPanic(log)}),
	)
	return e
}

// step is one part of a middleware chain written as a function of the
// request and the rest of the chain, so that several run in one closure.
type step func(c echo.Context, next echo.HandlerFunc) error

// front is the outer part of every request's chain, outermost first: the
// request id (requestIDs), the access line (accessLog) around the call
// context (call). One middleware, not three: echo wraps the handler in
// every global middleware again on every request, a closure each.
func front(log *zap.Logger, call step) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			requestIDs(c)
			return accessLog(log, c, next, call)
		}
	}
}

// logPanic logs a recovered panic with its request and stack; the client
// gets a bare 500 (or, on the SOAP endpoint, a fault saying "internal
// error"), never the panic's text.
func logPanic(log *zap.Logger) middleware.LogErrorFunc {
	return func(c echo.Context, err error, stack []byte) error {
		log.Error("panic recovered",
			zap.String("request_id", requestID(c)),
			zap.String("client_ip", logctx.ClientIP(c.Request().Context())),
			zap.String("method", c.Request().Method),
			zap.String("path", c.Request().URL.Path),
			zap.Error(err), zap.ByteString("stack", stack))
		return echo.NewHTTPError(http.StatusInternalServerError)
	}
}

// soapRoute adds the SOAP endpoint's POST with its own chain: its trace
// span named "SOAP call", every error or panic below answered as a fault
// (legacy clients read nothing else), the bridge's rate limit answered as
// a fault too. The handler itself reads the body under the SOAP limits and
// gives the call its deadline before it reads
// (operations.Service.CallContext).
//
// The chain is put together once, here, not given to echo as route
// middleware: echo would wrap the handler in it again on every request (a
// closure per middleware per call), for the same chain. With tracing off
// (tr not enabled: it is decided at start) there is no span to name, and
// soapSpan is left out: looking the span up walks the call's whole context
// for nothing (issue 28: some 0.8 % of the bridge's CPU at 2000 clients).
func soapRoute(e *echo.Echo, path string, h echo.HandlerFunc, lim *rate.Limiter, log *zap.Logger, tr *tracing.Tracer) {
	mw := []echo.MiddlewareFunc{
		soapSpan,
		soapFaults,
		middleware.RecoverWithConfig(middleware.RecoverConfig{LogErrorFunc: logPanic(log), DisableErrorHandler: true}),
		rateLimit(lim, func(c echo.Context, text string) error {
			return soapenc.WriteFault(c.Response(), &soapenc.Fault{Code: soapenc.FaultServer, String: text})
		}),
	}
	if !tr.Enabled() {
		mw = mw[1:]
	}
	e.POST(path, chain(h, mw...))
}

// chain wraps h in mw, the first outermost, as echo applies route
// middleware.
func chain(h echo.HandlerFunc, mw ...echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

// soapSpan names the call's span (started by callContext) for what it is:
// every operation arrives at the same path with the same method.
func soapSpan(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		trace.SpanFromContext(c.Request().Context()).SetName("SOAP call")
		return next(c)
	}
}

// soapFaults answers an error of the SOAP chain with a SOAP fault: a
// Client fault for a 4xx, a Server fault saying "internal error" otherwise.
func soapFaults(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil || c.Response().Committed {
			return err
		}
		return writeErrorFault(c, err)
	}
}

// writeErrorFault answers err as a SOAP fault. Apart from soapFaults,
// whose frame is held under the whole call (issue 28).
//
//go:noinline
func writeErrorFault(c echo.Context, err error) error {
	f := &soapenc.Fault{Code: soapenc.FaultServer, String: "internal error"}
	var he *echo.HTTPError
	if errors.As(err, &he) && he.Code < 500 {
		f = &soapenc.Fault{Code: soapenc.FaultClient, String: http.StatusText(he.Code)}
	}
	return soapenc.WriteFault(c.Response(), f)
}

// webRoutes is the group of every other route (WSDL, browser flows, the
// gateway's callbacks): the rate limit answered 429, the body cap, and the
// call deadline from bound (the core's).
func webRoutes(e *echo.Echo, lim *rate.Limiter, bound func(context.Context) (context.Context, context.CancelFunc)) *echo.Group {
	return e.Group("",
		rateLimit(lim, func(_ echo.Context, text string) error { return echo.NewHTTPError(http.StatusTooManyRequests, text) }),
		bodyLimit(otherBodyLimit),
		withDeadline(bound))
}

// withDeadline bounds a request by the call deadline.
func withDeadline(bound func(context.Context) (context.Context, context.CancelFunc)) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx, cancel := bound(c.Request().Context())
			defer cancel()
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
}

// newHTTPServer wraps h with the configured timeouts.
func newHTTPServer(cfg Config, h http.Handler, log *zap.Logger) *http.Server {
	header := 10 * time.Second
	if cfg.ReadTimeout > 0 && cfg.ReadTimeout < header {
		header = cfg.ReadTimeout
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: header,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(log.Named("http").WithOptions(zap.IncreaseLevel(zapcore.WarnLevel))),
	}
}

// closeWhenDraining answers every request with Connection: close once
// draining reports true (the shutdown delay): the connection closes after
// its reply, so that a balancer stops reusing it, while idle connections
// are left open (closing them at once is what makes a balancer send a
// request down a connection being closed) until the server shuts down.
func closeWhenDraining(h http.Handler, draining func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

func healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// healthzUnless is healthz answering 503 once draining reports true, for
// balancers that check the public port rather than the admin /readyz.
func healthzUnless(draining func() bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		if draining() {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
		}
		return healthz(c)
	}
}

// accessLog logs one line per request: method, path (never the query: the
// legacy flows carry signatures there), status, bytes, duration, request
// id, the connection's peer (remote) and the caller (client_ip: the peer,
// or behind a trusted proxy the client it names, as callContext, inside it,
// put it into the request's context for the adapters' request loggers).
// Bodies are never logged. Health probes log at debug level. A line costs
// its encoding buffer (zap's pool) and one write: the fields are put into
// a pooled array, not a new slice per line. The line is written once
// call(c, next), the rest of the chain, has returned (front).
func accessLog(log *zap.Logger, c echo.Context, next echo.HandlerFunc, call step) error {
	start := time.Now()
	if err := call(c, next); err != nil {
		c.Error(err) // writes the reply, so the status below is final
	}
	writeAccess(log, c, start)
	return nil
}

// writeAccess writes the access line of a request answered. Apart from
// accessLog, whose frame is held under the whole call (the wait for the
// gateway included): the fields' 400 bytes of frame are needed only here
// (issue 28: the handler's goroutine fits in 8 KiB of stack).
//
//go:noinline
func writeAccess(log *zap.Logger, c echo.Context, start time.Time) {
	r, res := c.Request(), c.Response()
	level := zapcore.InfoLevel
	switch {
	case res.Status >= 500:
		level = zapcore.WarnLevel
	case r.URL.Path == "/healthz":
		level = zapcore.DebugLevel
	}
	// Check first: the fields are built only for a line that is written.
	if ce := log.Check(level, "request"); ce != nil {
		fs := accessFields.Get().(*[8]zap.Field)
		fs[0] = zap.String("method", r.Method)
		fs[1] = zap.String("path", r.URL.Path)
		fs[2] = zap.Int("status", res.Status)
		fs[3] = zap.Int64("bytes", res.Size)
		fs[4] = zap.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)
		fs[5] = zap.String("request_id", requestID(c))
		fs[6] = zap.String("remote", r.RemoteAddr)
		fs[7] = zap.String("client_ip", logctx.ClientIP(r.Context()))
		ce.Write(fs[:]...) // the cores encode the fields, none keeps the slice
		*fs = [8]zap.Field{}
		accessFields.Put(fs)
	}
}

var accessFields = sync.Pool{New: func() any { return new([8]zap.Field) }}

func requestID(c echo.Context) string { return header.Get(c.Response().Header(), header.XRequestID) }

// requestIDs gives the request its id, as echo's RequestID middleware
// with reqid.New would: the client's X-Request-Id when it is a short token
// (any other is removed from the request, so that no junk reaches logs and
// replies), else a new one, set on the reply's X-Request-Id. It reads the
// field by its canonical key.
func requestIDs(c echo.Context) {
	h := c.Request().Header
	id := header.Get(h, header.XRequestID)
	if id != "" && !isToken(id, 128) {
		h.Del(echo.HeaderXRequestID)
		id = ""
	}
	if id == "" {
		id = reqid.New()
	}
	header.Set(c.Response().Header(), header.XRequestID, id)
}

func isToken(s string, max int) bool {
	if len(s) > max {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// otherBodyLimit caps the bodies of the routes other than the SOAP
// endpoint (whose body soapenc reads under its own limit); the browser
// flows (base-integration form, statements) set tighter limits of their
// own.
const otherBodyLimit = 1 << 20

// bodyLimit caps request bodies at max bytes: a declared length over it is
// refused at once with 413.
func bodyLimit(max int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.ContentLength > max {
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge, "request body too large")
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, max)
			return next(c)
		}
	}
}
