package tracing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// exportTimeout bounds one export request.
const exportTimeout = 5 * time.Second

// httpClient is the OTLP/HTTP transport (protobuf encoding) behind the
// SDK's otlptrace exporter, which turns the spans into OTLP messages.
//
// Upstream's otlptracehttp does the same but links gRPC, grpc-gateway and
// genproto into the binary through configuration code it shares with the
// gRPC exporter (open-telemetry/opentelemetry-go#2579); the bridge only
// ever POSTs protobuf to one URL. What it leaves out: the OTEL_EXPORTER_OTLP_*
// environment variables (the bridge is configured by otlp_endpoint alone),
// gzip, TLS client certificates, and retries: a failed export drops its
// batch, as an unreachable collector does.
type httpClient struct {
	url string
	hc  *http.Client
}

func newHTTPClient(url string) *httpClient {
	return &httpClient{url: url, hc: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
}

func (c *httpClient) Start(context.Context) error { return nil }

func (c *httpClient) Stop(context.Context) error {
	c.hc.CloseIdleConnections()
	return nil
}

// UploadTraces posts the spans as an ExportTraceServiceRequest. TracesData
// is wire-compatible with that message (the OTLP specification keeps them
// so), and unlike it is not generated beside the gRPC service.
func (c *httpClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	body, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: spans})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, exportTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "soapbridge OTLP/HTTP exporter")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // drained for the connection's reuse only
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("OTLP collector answered %s", resp.Status)
	}
	return nil
}
