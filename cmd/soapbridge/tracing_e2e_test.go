package main

// Traces of the running binary reach an OTLP/HTTP receiver: one trace per
// SOAP call, its gateway exchanges and store writes under the SOAP span,
// the request id on the root.

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a minimal OTLP/HTTP trace receiver (protobuf encoding).
// It decodes each export as TracesData, which the OTLP specification keeps
// wire-compatible with ExportTraceServiceRequest (whose Go package comes
// with the gRPC service, not needed here).
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	attrs map[string]string // resource attributes seen
}

func newOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	r := &otlpReceiver{attrs: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected export", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		var ex tracepb.TracesData
		if err := proto.Unmarshal(body, &ex); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				r.attrs[kv.Key] = kv.GetValue().GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		// An empty ExportTraceServiceResponse: no partial success to report.
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func TestTracesOverOTLP(t *testing.T) {
	rec, endpoint := newOTLPReceiver(t)
	e := newMoneyEnv(t, "2s", "6s", withEnv("SOAPBRIDGE_OTLP_ENDPOINT="+endpoint))
	id := e.payment("plain")

	// A refund: a gateway status read, the refund POST, ledger writes.
	const reqID = "trace-test-refund-1"
	env := `<?xml version="1.0" encoding="UTF-8"?><SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" ` +
		`xmlns:ns1="http://axis.web.gopay.cz" xmlns:SOAP-ENC="http://schemas.xmlsoap.org/soap/encoding/" ` +
		`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:ns2="http://gate.gopay.cz/ws" ` +
		`SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><SOAP-ENV:Body><ns1:partiallyRefundPayment>` +
		refundRequestBody(t, id, 3000, "trace") + `</ns1:partiallyRefundPayment></SOAP-ENV:Body></SOAP-ENV:Envelope>`
	req, err := http.NewRequest(http.MethodPost, e.b.SOAPURL, strings.NewReader(env))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `"partiallyRefundPayment"`)
	req.Header.Set("X-Request-Id", reqID)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(reply), "FINISHED")
	require.Equal(t, reqID, resp.Header.Get("X-Request-Id"))
	assert.Equal(t, 1, e.refunds(id))

	e.b.Stop() // flushes the batched spans

	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, "soapbridge", rec.attrs["service.name"])
	var root *tracepb.Span
	for _, s := range rec.spans {
		if s.Name == "SOAP call" && spanAttr(s, "soapbridge.request_id") == reqID {
			require.Nil(t, root, "one root span per call")
			root = s
		}
	}
	require.NotNil(t, root, "no SOAP span with the request id among %d spans", len(rec.spans))
	assert.Empty(t, root.ParentSpanId, "the SOAP span is the trace's root")
	assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, root.Kind)
	assert.Equal(t, "partiallyRefundPayment", spanAttr(root, "soap.action"))

	children := map[string]int{}
	for _, s := range rec.spans {
		if hex.EncodeToString(s.TraceId) != hex.EncodeToString(root.TraceId) || s == root {
			continue
		}
		assert.Equal(t, root.SpanId, s.ParentSpanId, "span %q is a direct child of the SOAP span", s.Name)
		children[s.Name]++
	}
	t.Logf("children of the SOAP span: %v", children)
	assert.Equal(t, 1, children["gateway refund"], "one span per REST exchange: the refund POST")
	assert.GreaterOrEqual(t, children["gateway payment status"], 1)
	// The refund's ledger entry, and the payment's refund lock (one
	// refund of a payment at a time).
	// Two claims: the refund's entry, and the refund lock's entry in the
	// previous release's form (taken beside the advisory lock, so that a
	// replica of that release serving beside this one waits too).
	assert.Equal(t, 2, children["store claim_call"])
	assert.Equal(t, 1, children["store try_lock"])
	assert.Equal(t, 1, children["store call_done"])
	assert.Equal(t, 1, children["store set_baseline"], "the refund baseline, saved before the POST")
	for name := range children {
		assert.True(t, strings.HasPrefix(name, "gateway ") || strings.HasPrefix(name, "store "), name)
	}
}
