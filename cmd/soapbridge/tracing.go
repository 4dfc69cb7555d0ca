package main

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/internal/logctx"
	"github.com/legacybridge/soapbridge/internal/reqid"
	"github.com/legacybridge/soapbridge/internal/tracing"
)

// callContext puts the request id (set by requestIDs before it) in
// the request's context, where the core reads it for the notifications a
// call enqueues, with the caller's address (the peer, or behind a trusted
// proxy the client it names: for the request loggers, logctx, and the
// access log around it) and, through snaps when not nil, the configuration
// in force (snapshots.pin, unpinned when the request ends), and, when
// tracing is on, starts the call's root span: the gateway exchanges and
// store operations of the call become its children through the same
// context.
func callContext(tr *tracing.Tracer, proxies *access.Proxies, snaps *snapshots) step {
	return func(c echo.Context, next echo.HandlerFunc) error {
		r := c.Request()
		ctx, sn := callValues(c, r, proxies, snaps)
		if sn != nil {
			defer snaps.unpin(sn)
		}
		if !tr.Enabled() || r.URL.Path == "/healthz" {
			c.SetRequest(r.WithContext(ctx))
			return next(c)
		}
		return traced(c, r, ctx, tr, next)
	}
}

// callValues is the context of a call: its request id, the client's
// address, the configuration it pins (unpinned when the request ends).
// callContext's steps are functions of their own so that its frame, held
// under the wait for the gateway by every call in flight, stays small
// (issue 28).
//
//go:noinline
func callValues(c echo.Context, r *http.Request, proxies *access.Proxies, snaps *snapshots) (context.Context, *snapshot) {
	ctx := reqid.With(r.Context(), requestID(c))
	if a, ok := proxies.ClientAddr(r); ok {
		ctx = logctx.WithClientIP(ctx, addrText(a, r.RemoteAddr))
	}
	var sn *snapshot
	if snaps != nil {
		ctx, sn = snaps.pin(ctx)
	}
	return ctx, sn
}

// traced serves a call inside its span.
//
//go:noinline
func traced(c echo.Context, r *http.Request, ctx context.Context, tr *tracing.Tracer, next echo.HandlerFunc) error {
	// The route, not the URL: bounded names.
	ctx, span := tr.StartCall(ctx, r.Method+" "+c.Path(), requestID(c))
	defer span.End()
	span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path))
	if a := r.Header.Get("SOAPAction"); a != "" && isToken(trimAction(a), 200) {
		span.SetAttributes(attribute.String("soap.action", trimAction(a)))
	}
	c.SetRequest(r.WithContext(ctx))
	err := next(c)
	if err != nil {
		c.Error(err) // writes the reply, so the status below is final
	}
	st := c.Response().Status
	span.SetAttributes(attribute.Int("http.response.status_code", st))
	if st >= 500 {
		span.SetStatus(codes.Error, http.StatusText(st))
	}
	return nil
}

// addrText is a's text: the host of remote itself when it reads the same
// (the usual case, a peer that is no proxy), else a new string.
func addrText(a netip.Addr, remote string) string {
	var buf [64]byte
	b := a.AppendTo(buf[:0])
	if host, _, err := net.SplitHostPort(remote); err == nil && host == string(b) {
		return host
	}
	return string(b)
}

// trimAction is a SOAPAction without its quotes and namespace ("urn:x#op",
// "\"op\"" → "op").
func trimAction(a string) string {
	if len(a) >= 2 && a[0] == '"' && a[len(a)-1] == '"' {
		a = a[1 : len(a)-1]
	}
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] == '#' || a[i] == '/' || a[i] == ':' {
			return a[i+1:]
		}
	}
	return a
}

// buildVersion is the module version the binary was built from ("(devel)"
// for a local build), reported as the traces' service.version.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "unknown"
}
