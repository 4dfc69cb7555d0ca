// Package tracing sends OpenTelemetry traces over OTLP/HTTP: one trace per
// SOAP call or browser flow, with a span per gateway exchange and per
// store operation under it. Nothing is started unless an endpoint is
// configured; without one, every function here is a cheap no-op, so the
// request path pays nothing.
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// RequestIDKey is the span attribute holding the bridge's request id (the
// X-Request-Id of the reply and the request_id of the log lines).
const RequestIDKey = attribute.Key("soapbridge.request_id")

// Tracer starts the bridge's spans. The zero value is not usable; use
// Disabled or Start.
type Tracer struct {
	t trace.Tracer
}

// Disabled is a Tracer that records nothing.
func Disabled() *Tracer { return &Tracer{t: noop.NewTracerProvider().Tracer("soapbridge")} }

// Start exports spans to the OTLP/HTTP endpoint (a base URL such as
// http://collector:4318; the /v1/traces path is added unless a path is
// given). The returned stop flushes what is buffered; call it at exit.
func Start(endpoint, version string) (*Tracer, func(context.Context) error, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP endpoint: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, nil, fmt.Errorf("tracing: OTLP endpoint %q: not an http(s) URL", endpoint)
	}
	path := strings.TrimRight(u.Path, "/")
	if path == "" {
		path = "/v1/traces"
	}
	target := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
	// New does not connect: an unreachable collector costs dropped spans
	// (the batcher's queue is bounded), never a failed call.
	exp, err := otlptrace.New(context.Background(), newHTTPClient(target))
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "soapbridge"),
		attribute.String("service.version", version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracer{t: tp.Tracer("github.com/legacybridge/soapbridge")}, tp.Shutdown, nil
}

// Enabled reports whether spans are recorded at all.
func (t *Tracer) Enabled() bool {
	_, isNoop := t.t.(noop.Tracer)
	return !isNoop
}

// StartCall starts the root span of a call received by the bridge: name is
// e.g. "SOAP paymentStatus" or "GET /pay-full-v2".
func (t *Tracer) StartCall(ctx context.Context, name, requestID string) (context.Context, trace.Span) {
	return t.t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(RequestIDKey.String(requestID)))
}

// StartExchange implements restbackend.Tracer: a client span per HTTP
// exchange with the gateway, under the call's span. With tracing disabled
// it returns ctx as it is and an end that does nothing, as Store returns
// the store: the no-op tracer's span, its options and the end's closure
// were seven allocations per exchange for nothing.
func (t *Tracer) StartExchange(ctx context.Context, endpoint, method string) (context.Context, func(status int, err error)) {
	if !t.Enabled() {
		return ctx, noEnd
	}
	ctx, span := t.t.Start(ctx, "gateway "+endpoint, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", method)))
	return ctx, func(status int, err error) {
		if status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		end(span, err)
	}
}

func noEnd(int, error) {}

func end(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
