package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/legacybridge/soapbridge/internal/reqid"
	"github.com/legacybridge/soapbridge/internal/tracing"
	"github.com/legacybridge/soapbridge/soapenc"
)

// newEcho returns the router with the bridge's middleware, outermost
// first: request id, access log, call context (request id, trace), rate
// limit, panic recovery, body limit, deadline (not on SOAP POSTs).
func newEcho(cfg Config, log *zap.Logger, tr *tracing.Tracer) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Logger.SetOutput(io.Discard) // everything goes through zap
	e.HTTPErrorHandler = errorHandler(cfg.SOAPPath, e.DefaultHTTPErrorHandler)
	e.Use(
		dropBadRequestID,
		middleware.RequestIDWithConfig(middleware.RequestIDConfig{Generator: reqid.New}),
		accessLog(log.Named("http")),
		callContext(tr, cfg.SOAPPath),
		rateLimit(cfg.RateLimit, cfg.RateBurst, cfg.SOAPPath),
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
				log.Error("panic recovered",
					zap.String("request_id", requestID(c)),
					zap.String("method", c.Request().Method),
					zap.String("path", c.Request().URL.Path),
					zap.Error(err), zap.ByteString("stack", stack))
				return echo.NewHTTPError(http.StatusInternalServerError)
			},
		}),
		bodyLimit(cfg.MaxBodyBytes, cfg.SOAPPath),
		withDeadline(cfg.CallDeadline, cfg.SOAPPath),
	)
	return e
}

// withDeadline bounds every request by the call deadline, except the SOAP
// endpoint's POSTs: their handler sets the same deadline itself, detached
// from the client's connection (so a hang-up cannot cut a POST short),
// before it reads the body, and bounds the wait for a parse slot with it.
// A second deadline there would cost a timer and a request copy per call.
func withDeadline(d time.Duration, soapPath string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if isSOAPCall(r, soapPath) {
				return next(c)
			}
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			c.SetRequest(r.WithContext(ctx))
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

func healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// errorHandler answers errors of the SOAP endpoint's POST with a SOAP fault
// (legacy clients understand nothing else) and the rest with echo's JSON.
func errorHandler(soapPath string, next echo.HTTPErrorHandler) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		r := c.Request()
		if c.Response().Committed || !isSOAPCall(r, soapPath) {
			next(err, c)
			return
		}
		f := &soapenc.Fault{Code: soapenc.FaultServer, String: "internal error"}
		var he *echo.HTTPError
		if errors.As(err, &he) && he.Code < 500 {
			f = &soapenc.Fault{Code: soapenc.FaultClient, String: http.StatusText(he.Code)}
		}
		soapenc.WriteFault(c.Response(), f) //nolint:errcheck // the client is gone
	}
}

// accessLog logs one line per request: method, path (never the query: the
// legacy flows carry signatures there), status, bytes, duration and request
// id. Bodies are never logged. Health probes log at debug level.
func accessLog(log *zap.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err) // writes the reply, so the status below is final
			}
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
				ce.Write(
					zap.String("method", r.Method),
					zap.String("path", r.URL.Path),
					zap.Int("status", res.Status),
					zap.Int64("bytes", res.Size),
					zap.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
					zap.String("request_id", requestID(c)),
					zap.String("remote", r.RemoteAddr),
				)
			}
			return nil
		}
	}
}

// isSOAPCall reports whether r is a call to the SOAP endpoint (a POST to
// its path): the requests the SOAP handler, not echo, answers and bounds.
func isSOAPCall(r *http.Request, soapPath string) bool {
	return r.Method == http.MethodPost && r.URL.Path == soapPath
}

func requestID(c echo.Context) string { return c.Response().Header().Get(echo.HeaderXRequestID) }

// dropBadRequestID removes a client-sent X-Request-Id that is not a short
// token, so that RequestID generates one instead of echoing junk into logs
// and replies.
func dropBadRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header
		if id := h.Get(echo.HeaderXRequestID); id != "" && !isToken(id, 128) {
			h.Del(echo.HeaderXRequestID)
		}
		return next(c)
	}
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

// otherBodyLimit caps the bodies of the paths other than the SOAP
// endpoint; the browser flows (base-integration form, statements) set
// tighter limits of their own.
const otherBodyLimit = 1 << 20

// bodyLimit caps the SOAP endpoint's request bodies at soapMax bytes and
// every other body at otherBodyLimit. A declared length over the cap is
// refused at once with 413, except on the SOAP endpoint's POST, where
// soapenc reads under the same cap and answers with a SOAP fault.
func bodyLimit(soapMax int64, soapPath string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			soap := isSOAPCall(r, soapPath)
			max := int64(otherBodyLimit)
			if soap {
				max = soapMax
			}
			if r.ContentLength > max && !soap {
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge, "request body too large")
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, max)
			return next(c)
		}
	}
}
