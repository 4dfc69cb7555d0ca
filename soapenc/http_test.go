package soapenc

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadRequest(t *testing.T) {
	doc := envelope("", call("touch", ""))
	newReq := func(method, ct, body string) *http.Request {
		r := httptest.NewRequest(method, "/axis/EPaymentServiceV2", strings.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		r.Header.Set("SOAPAction", `""`)
		return r
	}

	c, err := ReadRequest(newReq("POST", "text/xml; charset=utf-8", doc), DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, "touch", c.Operation.Local)
	c, err = ReadRequest(newReq("POST", "text/xml;charset=UTF-8", doc), DefaultLimits())
	require.NoError(t, err, "Axis spelling of the charset parameter")
	require.Equal(t, "touch", c.Operation.Local)

	_, err = ReadRequest(newReq("GET", "text/xml", doc), DefaultLimits())
	requireFault(t, err, FaultClient, "POST")
	_, err = ReadRequest(newReq("POST", "application/json", doc), DefaultLimits())
	requireFault(t, err, FaultClient, "text/xml")
	_, err = ReadRequest(newReq("POST", "", doc), DefaultLimits())
	requireFault(t, err, FaultClient, "text/xml")
	_, err = ReadRequest(newReq("POST", `application/soap+xml; charset=utf-8; action=""`, doc), DefaultLimits())
	requireFault(t, err, FaultVersionMismatch, "SOAP 1.2")

	big := envelope("", call("touch", "<a>"+strings.Repeat("x", 3000)+"</a>"))
	_, err = ReadRequest(newReq("POST", "text/xml", big), Limits{MaxBytes: 2048})
	requireFault(t, err, FaultClient, "request too large")
	// Without a Content-Length (chunked) the body is cut at the limit.
	r := newReq("POST", "text/xml", "")
	r.Body = io.NopCloser(strings.NewReader(big))
	r.ContentLength = -1
	_, err = ReadRequest(r, Limits{MaxBytes: 2048})
	requireFault(t, err, FaultClient, "request too large")
}

func TestWriteResponseAndFault(t *testing.T) {
	rec := httptest.NewRecorder()
	require.NoError(t, WriteResponse(rec, &Response{Namespace: serviceNS, Operation: "touch", Return: NewString("touchReturn", strp("OK"))}))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/xml; charset=utf-8", rec.Header().Get("Content-Type"))
	require.Contains(t, rec.Body.String(), `<touchReturn xsi:type="soapenc:string">OK</touchReturn>`)

	rec = httptest.NewRecorder()
	require.NoError(t, WriteFault(rec, &Fault{Code: FaultClient, String: "request too large"}))
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.Equal(t, "text/xml; charset=utf-8", rec.Header().Get("Content-Type"))
	require.Contains(t, rec.Body.String(), `<faultcode>soapenv:Client</faultcode><faultstring>request too large</faultstring>`)
}

func TestEncodeEscapesAndKeepsUTF8Valid(t *testing.T) {
	v := NewString("s", strp("a\x00b\xffc\uFFFEd<&>\"'\r\n\t"))
	out := AppendResponse(nil, &Response{Namespace: `urn:a"b&c`, Operation: "op", Return: v})
	c, err := Decode(out, "", DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, "a\uFFFDb\uFFFDc\uFFFDd<&>\"'\r\n\t", c.Param("s").Text)
	require.Equal(t, `urn:a"b&c`, c.Operation.Space)
}

func TestReadRequestValuesSurviveBufferReuse(t *testing.T) {
	read := func(s string) *Call {
		r := httptest.NewRequest("POST", "/", strings.NewReader(envelope("", call("op", `<a xsi:type="xsd:string">`+s+`</a>`))))
		r.Header.Set("Content-Type", "text/xml")
		c, err := ReadRequest(r, DefaultLimits())
		require.NoError(t, err)
		return c
	}
	first := read("first-value")
	for i := 0; i < 10; i++ {
		read(strings.Repeat("X", len("first-value")))
	}
	require.Equal(t, "first-value", first.Param("a").Text)
	require.Equal(t, QName{"http://axis.web.gopay.cz", "op"}, first.Operation)
}

// Parsing is bounded to a few at a time (memory); a request waiting for its
// turn gives up when its client has gone.
func TestReadRequestWaitsForDecodeSlot(t *testing.T) {
	for range cap(decodeSlots) {
		decodeSlots <- struct{}{}
	}
	drained := false
	drain := func() {
		if !drained {
			for range cap(decodeSlots) {
				<-decodeSlots
			}
			drained = true
		}
	}
	defer drain()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequestWithContext(ctx, "POST", "/axis/EPaymentServiceV2", strings.NewReader(envelope("", call("touch", ""))))
	r.Header.Set("Content-Type", "text/xml")
	_, err := ReadRequest(r, DefaultLimits())
	requireFault(t, err, FaultClient, "cancelled")

	drain()
	r = httptest.NewRequest("POST", "/axis/EPaymentServiceV2", strings.NewReader(envelope("", call("touch", ""))))
	r.Header.Set("Content-Type", "text/xml")
	c, err := ReadRequest(r, DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, "touch", c.Operation.Local)
	require.Empty(t, decodeSlots, "slot released")
}

// A declared Content-Length is the client's word, not bytes received: a
// connection that announces 1 MiB and sends little must not cost 1 MiB
// (a thousand such slow connections held 1 GB).
func TestReadRequestDoesNotTrustContentLength(t *testing.T) {
	doc := envelope("", call("touch", ""))
	r := httptest.NewRequest("POST", "/axis/EPaymentServiceV2", strings.NewReader(doc))
	r.Header.Set("Content-Type", "text/xml")
	r.ContentLength = 1 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c, err := ReadRequest(r, DefaultLimits())
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Equal(t, "touch", c.Operation.Local)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<10), "bytes allocated for a short body")
}
