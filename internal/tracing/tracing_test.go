package tracing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector records the OTLP/HTTP exports it receives and answers status.
type collector struct {
	mu      sync.Mutex
	paths   []string
	ctypes  []string
	exports []*tracepb.TracesData
	status  int
}

func newCollector(t *testing.T, status int) (*collector, string) {
	c := &collector{status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		var td tracepb.TracesData
		require.NoError(t, proto.Unmarshal(body, &td))
		c.mu.Lock()
		c.paths = append(c.paths, r.URL.Path)
		c.ctypes = append(c.ctypes, r.Header.Get("Content-Type"))
		c.exports = append(c.exports, &td)
		c.mu.Unlock()
		w.WriteHeader(c.status)
	}))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func (c *collector) spans() map[string]*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*tracepb.Span{}
	for _, td := range c.exports {
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out[s.Name] = s
				}
			}
		}
	}
	return out
}

// A call's span and a gateway exchange under it reach the collector as
// OTLP/HTTP protobuf at /v1/traces, with kinds, parent, status, attributes
// and the service's resource.
func TestExportsOverOTLPHTTP(t *testing.T) {
	c, url := newCollector(t, http.StatusOK)
	tr, stop, err := Start(url, "v1.2.3")
	require.NoError(t, err)
	require.True(t, tr.Enabled())

	ctx, root := tr.StartCall(context.Background(), "SOAP call", "req-1")
	_, done := tr.StartExchange(ctx, "refund", http.MethodPost)
	done(http.StatusServiceUnavailable, errors.New("gateway answered 503"))
	root.End()
	require.NoError(t, stop(context.Background()), "stop flushes the batch")

	assert.Equal(t, []string{"/v1/traces"}, c.paths)
	assert.Equal(t, []string{"application/x-protobuf"}, c.ctypes)
	res := map[string]string{}
	for _, kv := range c.exports[0].ResourceSpans[0].Resource.Attributes {
		res[kv.Key] = kv.Value.GetStringValue()
	}
	assert.Equal(t, map[string]string{"service.name": "soapbridge", "service.version": "v1.2.3"}, res)

	spans := c.spans()
	call, ex := spans["SOAP call"], spans["gateway refund"]
	require.NotNil(t, call)
	require.NotNil(t, ex)
	assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, call.Kind)
	assert.Empty(t, call.ParentSpanId)
	assert.Equal(t, "req-1", attr(call, string(RequestIDKey)).GetStringValue())
	assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, ex.Kind)
	assert.Equal(t, call.TraceId, ex.TraceId)
	assert.Equal(t, call.SpanId, ex.ParentSpanId)
	assert.Equal(t, "POST", attr(ex, "http.request.method").GetStringValue())
	assert.Equal(t, int64(503), attr(ex, "http.response.status_code").GetIntValue())
	assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, ex.Status.GetCode())
	assert.Equal(t, "gateway answered 503", ex.Status.GetMessage())
	assert.Less(t, ex.StartTimeUnixNano, ex.EndTimeUnixNano+1)
}

func attr(s *tracepb.Span, key string) interface {
	GetStringValue() string
	GetIntValue() int64
} {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return &nothing{}
}

type nothing struct{}

func (*nothing) GetStringValue() string { return "" }
func (*nothing) GetIntValue() int64     { return 0 }

// An endpoint with a path is used as it is; a collector's error goes to
// OpenTelemetry's error handler (the batch is dropped, no call sees it).
func TestEndpointPathAndCollectorError(t *testing.T) {
	var mu sync.Mutex
	var handled []error
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { mu.Lock(); handled = append(handled, err); mu.Unlock() }))
	t.Cleanup(func() { otel.SetErrorHandler(prev) })

	c, url := newCollector(t, http.StatusServiceUnavailable)
	tr, stop, err := Start(url+"/otlp/traces/", "dev")
	require.NoError(t, err)
	_, span := tr.StartCall(context.Background(), "GET /healthz", "req-2")
	span.End()
	require.NoError(t, stop(context.Background()))
	assert.Equal(t, []string{"/otlp/traces"}, c.paths)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, handled, 1)
	assert.Contains(t, handled[0].Error(), "OTLP collector answered 503")
}

func TestStartRejectsNonHTTPEndpoint(t *testing.T) {
	for _, endpoint := range []string{"collector:4318", "grpc://collector:4317", "http://"} {
		_, _, err := Start(endpoint, "dev")
		assert.Error(t, err, endpoint)
	}
}

func TestDisabled(t *testing.T) {
	tr := Disabled()
	assert.False(t, tr.Enabled())
	_, span := tr.StartCall(context.Background(), "SOAP call", "req")
	assert.False(t, span.SpanContext().IsValid())
	span.End()
}

// With tracing disabled an exchange with the gateway costs nothing: the
// context comes back as it was, no span in it, and nothing is allocated.
func TestDisabledExchangeIsFree(t *testing.T) {
	tr := Disabled()
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	got, end := tr.StartExchange(ctx, "payment", http.MethodGet)
	assert.Equal(t, ctx, got)
	end(200, nil)
	end(0, errors.New("down"))
	n := testing.AllocsPerRun(100, func() {
		_, end := tr.StartExchange(ctx, "payment", http.MethodGet)
		end(200, nil)
	})
	assert.Zero(t, n, "allocations per exchange")
}
