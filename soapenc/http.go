package soapenc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"

	"github.com/legacybridge/soapbridge/internal/header"
)

// Parse slots bound how many request bodies are parsed at once. Parsing is
// CPU work, so more parses in parallel than CPUs add no throughput, only
// memory (several times the body each): without the bound, many concurrent
// large requests grow the heap without limit. Bodies are read before
// taking a slot, so slow clients do not hold one.
//
// Small bodies (every real request: under 4 KiB) and large ones take slots
// from separate pools: a flood of large bodies fills its own pool and
// queues there, while small requests keep theirs and never wait behind a
// large parse.
var (
	decodeSlots      = make(chan struct{}, max(4, 2*runtime.GOMAXPROCS(0)))
	largeDecodeSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))
)

// smallBody is the largest body parsed in a small-request slot.
const smallBody = 16 << 10

// initialBodyBuffer is the most a body buffer is sized to from a declared
// Content-Length before the bytes arrive: the header is the client's word,
// not bytes received, and a slow client announcing 1 MiB must not cost
// 1 MiB (or 64 KiB) while it trickles. Real requests fit.
const initialBodyBuffer = 8 << 10

// ReadRequest reads a SOAP 1.1 request from r under the HTTP binding: POST,
// Content-Type text/xml (any charset), at most lim.MaxBytes of body. Every
// error is a *Fault; a SOAP 1.2 request gets a VersionMismatch fault.
func ReadRequest(r *http.Request, lim Limits) (*Call, error) {
	return ReadRequestContext(r.Context(), r, lim)
}

// ReadRequestContext is ReadRequest whose wait for a parse slot also ends
// when ctx is done (a call deadline detached from the connection), not
// only when the client hangs up.
func ReadRequestContext(ctx context.Context, r *http.Request, lim Limits) (*Call, error) {
	lim = lim.withDefaults()
	if r.Method != http.MethodPost {
		return nil, clientFault("SOAP requests must use POST")
	}
	ct := header.Get(r.Header, header.ContentType)
	if ct == "" {
		return nil, clientFault("Content-Type must be text/xml for SOAP 1.1")
	}
	if _, f := mediaType(ct); f != nil {
		return nil, f
	}
	if r.ContentLength > lim.MaxBytes {
		return nil, clientFault("request too large")
	}
	// The body is read into a pooled buffer: Decode keeps no reference to
	// it (the parser copies every string it returns).
	bp := bufPool.Get().(*[]byte)
	buf := bytes.NewBuffer((*bp)[:0])
	if r.ContentLength > 0 {
		buf.Grow(int(min(r.ContentLength, initialBodyBuffer)) + 1)
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, lim.MaxBytes+1))
	defer func() { putBuf(bp, buf.Bytes()) }()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, clientFault("request too large")
		}
		return nil, clientFault("could not read the request body")
	}
	if int64(buf.Len()) > lim.MaxBytes {
		return nil, clientFault("request too large")
	}
	slots := decodeSlots
	if buf.Len() > smallBody {
		slots = largeDecodeSlots
	}
	if !acquire(ctx, r, slots) {
		if f := waitSlot(ctx, r, slots); f != nil {
			return nil, f
		}
	}
	defer func() { <-slots }()
	return Decode(buf.Bytes(), ct, lim)
}

// acquire takes a free slot at once when neither context is done yet, the
// only case waitSlot's select could then pick, without asking either
// context for Done (which makes a channel for each, per request) and
// without the locking of a select over three channels.
func acquire(ctx context.Context, r *http.Request, slots chan struct{}) bool {
	if ctx.Err() != nil || r.Context().Err() != nil {
		return false
	}
	select {
	case slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// waitSlot waits for a slot of slots, the call deadline (ctx) or the
// client's hang-up, whichever comes first: nil when it took a slot (its
// caller gives it back), else the fault.
func waitSlot(ctx context.Context, r *http.Request, slots chan struct{}) *Fault {
	select {
	case slots <- struct{}{}:
		return nil
	case <-r.Context().Done():
		return clientFault("request cancelled")
	case <-ctx.Done():
		if r.Context().Err() != nil { // both done (ReadRequest passes one context twice)
			return clientFault("request cancelled")
		}
		return &Fault{Code: FaultServer, String: "call deadline passed while waiting to parse the request"}
	}
}

// WriteResponse writes r with status 200 and Content-Type text/xml.
func WriteResponse(w http.ResponseWriter, r *Response) error {
	bp := bufPool.Get().(*[]byte)
	b := appendResponse((*bp)[:0], r)
	err := writeXML(w, http.StatusOK, b)
	putBuf(bp, b)
	return err
}

// WriteFault writes f with status 500, as the SOAP 1.1 HTTP binding (6.2)
// requires for every fault, including "request too large" and a wrong
// Content-Type: legacy clients (PHP SoapClient, Axis) read the fault only
// from a 500 reply and report any other status as a transport error.
func WriteFault(w http.ResponseWriter, f *Fault) error {
	bp := bufPool.Get().(*[]byte)
	b := appendFault((*bp)[:0], f)
	err := writeXML(w, http.StatusInternalServerError, b)
	putBuf(bp, b)
	return err
}

// textXML is the Content-Type of every reply, one slice for all of them.
var textXML = []string{"text/xml; charset=utf-8"}

func writeXML(w http.ResponseWriter, status int, b []byte) error {
	h := w.Header()
	header.SetShared(h, header.ContentType, textXML)
	header.Set(h, header.ContentLength, strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, err := w.Write(b)
	return err
}
