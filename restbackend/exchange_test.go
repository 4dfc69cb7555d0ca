package restbackend_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

// trickle sends the headers of a 200 at once, then one byte of its body
// every 50 ms, until the client gives up: only a bound on the whole
// exchange (the reply read included) cuts it, not the transport's
// ResponseHeaderTimeout.
func trickle(w http.ResponseWriter, r *http.Request, _ *recorded) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// The REST timeout bounds each exchange as a whole, its reply's body
// included, even when the caller's deadline is far later (call_deadline
// above rest_timeout): a reply that trickles is cut at the REST timeout
// and reported as a timeout. A GET is then tried again within the caller's
// deadline; a POST is of unknown outcome and sent once.
func TestReplyTricklingPastTheRESTTimeout(t *testing.T) {
	const restTimeout = 400 * time.Millisecond
	t.Run("GET", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(trickle)
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		c := g.client(func(c *restbackend.Config) { c.Timeout = restTimeout })
		start := time.Now()
		_, err := c.PaymentStatus(ctx, testCreds, pid)
		took := time.Since(start)
		te := asTransportError(t, err)
		assert.True(t, te.Timeout, "%v", err)
		assert.True(t, te.Sent)
		assert.Equal(t, restbackend.OutcomeNotDone, restbackend.OutcomeOf(err), "a read moves nothing")
		assert.Equal(t, 3, g.callCount(), "each attempt cut at the REST timeout, then tried again")
		assert.Less(t, took, 20*time.Second, "cut long before the caller's deadline")
	})
	t.Run("POST", func(t *testing.T) {
		g := newFakeGateway(t)
		g.setAPI(trickle)
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		c := g.client(func(c *restbackend.Config) { c.Timeout = restTimeout })
		start := time.Now()
		_, err := c.Refund(ctx, testCreds, pid, 100)
		took := time.Since(start)
		te := asTransportError(t, err)
		assert.True(t, te.Timeout, "%v", err)
		assert.True(t, te.Sent)
		assert.Equal(t, restbackend.OutcomeUnknown, restbackend.OutcomeOf(err), "sent, no usable reply")
		assert.Equal(t, 1, g.callCount(), "a POST is never repeated")
		assert.Less(t, took, 20*time.Second, "cut long before the caller's deadline")
	})
}

// A 3xx to a GET is handed back, not followed (the target would never see
// the call) and not retried: a failure whose status is the 3xx.
func TestRedirectOfAGetIsNotFollowed(t *testing.T) {
	g := newFakeGateway(t)
	g.setAPI(func(w http.ResponseWriter, r *http.Request, _ *recorded) {
		if strings.HasSuffix(r.URL.Path, "/elsewhere") {
			writeJSON(w, http.StatusOK, paymentReply)
			return
		}
		http.Redirect(w, r, "/api/elsewhere", http.StatusTemporaryRedirect)
	})
	_, err := g.client().PaymentStatus(bg, testCreds, pid)
	require.Error(t, err)
	me := asMalformedError(t, err)
	assert.Equal(t, http.StatusTemporaryRedirect, me.Status)
	assert.Equal(t, 1, g.callCount(), "neither followed nor retried")
	assert.Equal(t, restbackend.OutcomeNotDone, restbackend.OutcomeOf(err))
}

// A gateway URL of https:// whose server speaks plain HTTP is reported as
// net/http's http.Client reports it (ErrSchemeMismatch: "server gave HTTP
// response to HTTPS client"), not as a bare TLS record error; never sent.
func TestHTTPSURLOfAPlainHTTPServer(t *testing.T) {
	g := newFakeGateway(t)
	c := restbackend.New(restbackend.Config{BaseURL: strings.Replace(g.srv.URL, "http://", "https://", 1)})
	_, err := c.PaymentStatus(bg, testCreds, pid)
	te := asTransportError(t, err)
	assert.Equal(t, "token", te.Op)
	assert.False(t, te.Sent)
	assert.ErrorIs(t, err, http.ErrSchemeMismatch)
	assert.Contains(t, err.Error(), "server gave HTTP response to HTTPS client")
	assert.Equal(t, restbackend.OutcomeNotDone, restbackend.OutcomeOf(err))
}
