package soapenc

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

	// A call deadline detached from the connection ends the wait too.
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	r = httptest.NewRequest("POST", "/axis/EPaymentServiceV2", strings.NewReader(envelope("", call("touch", ""))))
	r.Header.Set("Content-Type", "text/xml")
	_, err = ReadRequestContext(dctx, r, DefaultLimits())
	requireFault(t, err, FaultServer, "call deadline")

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

// A flood of large bodies fills its own parse slots; a small request still
// gets one at once.
func TestSmallRequestDoesNotWaitForLargeSlots(t *testing.T) {
	for range cap(largeDecodeSlots) {
		largeDecodeSlots <- struct{}{}
	}
	defer func() {
		for range cap(largeDecodeSlots) {
			<-largeDecodeSlots
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	small := httptest.NewRequestWithContext(ctx, "POST", "/axis/EPaymentServiceV2", strings.NewReader(envelope("", call("touch", ""))))
	small.Header.Set("Content-Type", "text/xml")
	c, err := ReadRequest(small, DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, "touch", c.Operation.Local)

	// A large body waits for a large slot (and gives up with its client).
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	large := httptest.NewRequestWithContext(ctx, "POST", "/axis/EPaymentServiceV2",
		strings.NewReader(envelope("", call("touch", "<a>"+strings.Repeat("x", smallBody)+"</a>"))))
	large.Header.Set("Content-Type", "text/xml")
	_, err = ReadRequest(large, Limits{MaxBytes: 1 << 20})
	requireFault(t, err, FaultClient, "cancelled")
}

// slowBody yields its prefix, then blocks until released: a client that
// announced a large body and trickles it.
type slowBody struct {
	prefix  *strings.Reader
	read    chan struct{} // closed once the prefix is consumed
	release chan struct{}
	once    sync.Once
}

func (s *slowBody) Read(p []byte) (int, error) {
	if s.prefix.Len() > 0 {
		return s.prefix.Read(p)
	}
	s.once.Do(func() { close(s.read) })
	<-s.release
	return 0, io.EOF
}

// Memory held by a slow connection that declared 1 MiB: the body buffer is
// sized to at most a small constant until the bytes arrive.
func TestSlowLargeDeclaredBodyCostsLittle(t *testing.T) {
	const conns = 200
	release := make(chan struct{})
	bodies := make([]*slowBody, conns)
	for i := range bodies {
		bodies[i] = &slowBody{prefix: strings.NewReader("<?xml version=\"1.0\"?>"), read: make(chan struct{}), release: release}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for _, b := range bodies {
		r := httptest.NewRequest("POST", "/axis/EPaymentServiceV2", b)
		r.Header.Set("Content-Type", "text/xml")
		r.ContentLength = 1 << 20
		wg.Go(func() { _, _ = ReadRequest(r, Limits{MaxBytes: 2 << 20}) })
	}
	for _, b := range bodies {
		<-b.read
	}
	runtime.ReadMemStats(&after)
	close(release)
	wg.Wait()
	perConn := (after.TotalAlloc - before.TotalAlloc) / conns
	t.Logf("allocated per slow connection declaring 1 MiB: %d bytes", perConn)
	require.Less(t, perConn, uint64(24<<10))
}

// doneCounter is a context that counts the calls of its Done.
type doneCounter struct {
	context.Context
	dones atomic.Int32
}

func (d *doneCounter) Done() <-chan struct{} {
	d.dones.Add(1)
	return d.Context.Done()
}

// With a parse slot free and neither context done, the slot is taken
// without asking either context for Done (each would make a channel per
// call for a select that could pick nothing else); a done one still ends
// the request as before (TestReadRequestWaitsForDecodeSlot).
func TestReadRequestTakesFreeSlotWithoutDone(t *testing.T) {
	reqCtx, cancelReq := context.WithCancel(context.Background())
	defer cancelReq()
	callCtx, cancelCall := context.WithTimeout(context.Background(), time.Minute)
	defer cancelCall()
	rc, cc := &doneCounter{Context: reqCtx}, &doneCounter{Context: callCtx}
	r := httptest.NewRequestWithContext(rc, "POST", "/axis/EPaymentServiceV2", strings.NewReader(envelope("", call("touch", ""))))
	r.Header.Set("Content-Type", "text/xml")
	c, err := ReadRequestContext(cc, r, DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, "touch", c.Operation.Local)
	require.Zero(t, rc.dones.Load(), "Done of the request's context")
	require.Zero(t, cc.dones.Load(), "Done of the call's context")
	require.Empty(t, decodeSlots, "slot released")
}
