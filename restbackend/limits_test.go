package restbackend_test

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

// huge is a JSON-looking reply far over the JSON cap.
var huge = func() []byte {
	b := []byte(`{"id":3000000001,"state":"PAID","padding":"`)
	b = append(b, bytes.Repeat([]byte("x"), 16<<20)...)
	return append(b, `"}`...)
}()

// serveHuge answers with huge, declaring its length or chunked.
func serveHuge(declared bool) func(http.ResponseWriter, *http.Request, *recorded) {
	return func(w http.ResponseWriter, _ *http.Request, _ *recorded) {
		w.Header().Set("Content-Type", "application/json")
		if declared {
			w.Header().Set("Content-Length", strconv.Itoa(len(huge)))
		}
		w.WriteHeader(http.StatusOK)
		for off := 0; off < len(huge); off += 64 << 10 {
			if _, err := w.Write(huge[off:min(off+64<<10, len(huge))]); err != nil {
				return // the client stopped reading
			}
		}
	}
}

// An oversized JSON reply is an error (never a success), of unknown outcome
// for a call that acts, whether its length is declared or not.
func TestOversizedReplyIsAnError(t *testing.T) {
	for _, declared := range []bool{true, false} {
		t.Run("declared="+strconv.FormatBool(declared), func(t *testing.T) {
			g := newFakeGateway(t)
			g.setAPI(serveHuge(declared))
			_, err := g.client().PaymentStatus(bg, testCreds, pid)
			me := asMalformedError(t, err)
			assert.ErrorIs(t, err, restbackend.ErrReplyTooLarge)
			assert.Equal(t, http.StatusOK, me.Status)
			assert.Equal(t, 1, g.callCount(), "an oversized reply is not retried")

			_, err = g.client().Refund(bg, testCreds, pid, 100)
			assert.ErrorIs(t, err, restbackend.ErrReplyTooLarge)
			assert.Equal(t, restbackend.OutcomeUnknown, restbackend.OutcomeOf(err))
		})
	}
}

// heapAfterGC is the live heap once garbage is collected.
func heapAfterGC() (inuse, total uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.TotalAlloc
}

// A burst of oversized replies costs about the cap per call, not the
// reply's size, and the heap is back near its baseline afterwards
// (issue 10: four 60 MiB status replies had taken RSS from 44 to 497 MB).
func TestOversizedBurstMemory(t *testing.T) {
	g := newFakeGateway(t)
	g.setAPI(serveHuge(false)) // chunked: the client must stop reading itself
	c := g.client()
	_, err := c.Token(bg, testCreds)
	require.NoError(t, err)
	_, _ = c.PaymentStatus(bg, testCreds, pid) // warm the pool and the code paths

	const burst = 8
	base, allocBefore := heapAfterGC()
	var wg sync.WaitGroup
	for range burst {
		wg.Go(func() {
			_, err := c.PaymentStatus(bg, testCreds, pid)
			assert.ErrorIs(t, err, restbackend.ErrReplyTooLarge)
		})
	}
	wg.Wait()
	after, allocAfter := heapAfterGC()

	perCall := float64(allocAfter-allocBefore) / burst

	// Baseline in the same run: the same reply read whole, as every reply
	// was before (the statement call still reads up to its own cap).
	_, a0 := heapAfterGC()
	b, err := c.AccountStatement(bg, testCreds, stmt)
	require.NoError(t, err)
	require.Len(t, b, len(huge))
	b = nil
	_, a1 := heapAfterGC()
	whole := float64(a1 - a0)

	retained := int64(after) - int64(base)
	t.Logf("reply %d MiB, JSON cap %d MiB: %.2f MiB allocated per capped call vs %.2f MiB reading it whole (ratio %.3f); "+
		"heap in use after GC %.1f MiB after the burst vs %.1f MiB before (retained %+d KiB)",
		len(huge)>>20, restbackend.MaxJSONReply>>20, perCall/(1<<20), whole/(1<<20), perCall/whole,
		float64(after)/(1<<20), float64(base)/(1<<20), retained>>10)
	assert.Less(t, perCall/whole, 0.25, "allocation bounded by the cap, not by the reply")
	assert.Less(t, retained, int64(restbackend.MaxJSONReply), "heap back at the baseline: no reply kept")
}

// statementReply answers a statement of n bytes ("a"…).
func statementReply(n int) func(http.ResponseWriter, *http.Request, *recorded) {
	return func(w http.ResponseWriter, _ *http.Request, _ *recorded) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusOK)
		io.Copy(w, io.LimitReader(repeatReader('a'), int64(n)))
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

var stmt = &restbackend.StatementRequest{DateFrom: "2026-01-01", DateTo: "2026-01-31", GoID: 8123456789, Currency: "CZK", Format: "CSV_A"}

func TestStatementStream(t *testing.T) {
	t.Run("streams the file", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(statementReply(3 << 20)) // over the JSON cap: statements have their own
		rc, err := g.client().AccountStatementStream(bg, testCreds, stmt)
		require.NoError(t, err)
		n, err := io.Copy(io.Discard, rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		assert.Equal(t, int64(3<<20), n)

		b, err := g.client().AccountStatement(bg, testCreds, stmt)
		require.NoError(t, err, "the []byte form keeps working")
		assert.Len(t, b, 3<<20)
	})
	t.Run("capped", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(statementReply(5000))
		c := g.client(func(c *restbackend.Config) { c.MaxStatementSize = 4096 })
		rc, err := c.AccountStatementStream(bg, testCreds, stmt)
		require.NoError(t, err)
		defer rc.Close()
		n, err := io.Copy(io.Discard, rc)
		assert.ErrorIs(t, err, restbackend.ErrReplyTooLarge)
		assert.Equal(t, int64(4096), n, "no byte past the cap")

		_, err = c.AccountStatement(bg, testCreds, stmt)
		assert.ErrorIs(t, err, restbackend.ErrReplyTooLarge)
	})
	t.Run("exactly the cap", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(statementReply(4096))
		c := g.client(func(c *restbackend.Config) { c.MaxStatementSize = 4096 })
		rc, err := c.AccountStatementStream(bg, testCreds, stmt)
		require.NoError(t, err)
		defer rc.Close()
		n, err := io.Copy(io.Discard, rc)
		require.NoError(t, err)
		assert.Equal(t, int64(4096), n)
	})
	t.Run("failure is an APIError", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(replyWith(http.StatusConflict, `{"errors":[{"scope":"F","field":"date_from","error_code":110}]}`))
		_, err := g.client().AccountStatementStream(bg, testCreds, stmt)
		assert.Equal(t, http.StatusConflict, asAPIError(t, err).Status)
	})
	t.Run("the deadline runs until Close", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(func(w http.ResponseWriter, r *http.Request, _ *recorded) {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "head;")
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the rest never comes
		})
		// The body is held until the client gives up: the timeout fires
		// during the read whatever the load; it only has to outlast the
		// token and the reply's head.
		c := g.client(func(c *restbackend.Config) { c.Timeout = 2 * time.Second })
		rc, err := c.AccountStatementStream(bg, testCreds, stmt)
		require.NoError(t, err)
		defer rc.Close()
		b, err := io.ReadAll(rc)
		assert.Equal(t, "head;", string(b))
		te := asTransportError(t, err)
		assert.True(t, te.Timeout, "%v", err)
	})
	t.Run("against the sandbox", func(t *testing.T) {
		e := newSandboxEnv(t)
		p := e.create(nil)
		e.pay(p.ID, restbackend.InstrumentPaymentCard)
		tomorrow := time.Now().AddDate(0, 0, 1).Format("2006-01-02")
		req := &restbackend.StatementRequest{DateFrom: "2000-01-01", DateTo: tomorrow, GoID: e.goid, Currency: "CZK", Format: "CSV_A"}
		whole, err := e.c.AccountStatement(e.ctx(), e.cr, req)
		require.NoError(t, err)
		rc, err := e.c.AccountStatementStream(e.ctx(), e.cr, req)
		require.NoError(t, err)
		var sb strings.Builder
		_, err = io.Copy(&sb, rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		assert.Equal(t, string(whole), sb.String())
		assert.Contains(t, sb.String(), strconv.FormatInt(p.ID, 10))
	})
}
