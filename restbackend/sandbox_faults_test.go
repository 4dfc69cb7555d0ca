package restbackend_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
)

// The client against the sandbox's scenario controls: ACCEPTED and FAILED
// results, declines, and a gateway that fails or loses replies. POSTs are
// never repeated, whatever the fault; the counters show whether the
// gateway acted.
func TestClientAgainstSandboxControls(t *testing.T) {
	const goid = 8123456789
	cr := restbackend.Credentials{ClientID: "sandbox-client", ClientSecret: "sandbox-secret"}
	clock := sandbox.NewManualClock(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	gw := sandbox.New(sandbox.Options{Clock: clock, Merchants: []sandbox.Merchant{{Account: restbackend.Account{GoID: goid, ClientID: cr.ClientID, ClientSecret: cr.ClientSecret}}}})
	srv := httptest.NewServer(gw)
	t.Cleanup(func() { srv.Close(); gw.Close() })
	c := restbackend.New(restbackend.Config{BaseURL: srv.URL, Timeout: 5 * time.Second})
	ctx := context.Background()
	paid := func(t *testing.T, amount int64, preauth bool) int64 {
		p, err := c.CreatePayment(ctx, cr, &restbackend.PaymentRequest{Target: restbackend.Target{Type: "ACCOUNT", GoID: goid},
			Amount: amount, Currency: "CZK", OrderNumber: "F-" + strconv.FormatInt(amount, 10), Preauthorization: preauth,
			Callback: &restbackend.Callback{ReturnURL: "https://eshop.example/return"}})
		require.NoError(t, err)
		require.NoError(t, gw.Act(ctx, p.ID, sandbox.Action{Do: sandbox.ActPay}))
		return p.ID
	}
	refundPath := func(id int64) string { return "/api/payments/payment/" + strconv.FormatInt(id, 10) + "/refund" }

	t.Run("decline by magic amount", func(t *testing.T) {
		id := paid(t, 66601, false)
		s, err := c.PaymentStatus(ctx, cr, id)
		require.NoError(t, err)
		assert.Equal(t, restbackend.StateCanceled, s.State)
		assert.Equal(t, "_5006", s.SubState)
	})
	t.Run("capture ACCEPTED and FAILED", func(t *testing.T) {
		id := paid(t, 100000, true)
		r, err := c.Capture(ctx, cr, id, &restbackend.CaptureRequest{Amount: 66612})
		require.NoError(t, err)
		assert.Equal(t, restbackend.ResultFailed, r.Result)
		r, err = c.Capture(ctx, cr, id, &restbackend.CaptureRequest{Amount: 66611})
		require.NoError(t, err)
		assert.Equal(t, restbackend.ResultAccepted, r.Result)
		clock.Advance(5 * time.Second)
		s, err := c.PaymentStatus(ctx, cr, id)
		require.NoError(t, err)
		assert.Equal(t, restbackend.StatePaid, s.State)
	})
	t.Run("refund FAILED, and FAILED in the history", func(t *testing.T) {
		id := paid(t, 100000, false)
		r, err := c.Refund(ctx, cr, id, 66622)
		require.NoError(t, err)
		assert.Equal(t, restbackend.ResultFailed, r.Result)
		hist, err := c.RefundHistory(ctx, cr, id)
		require.NoError(t, err)
		require.Len(t, hist, 1)
		assert.Equal(t, restbackend.ResultFailed, hist[0].State)
	})
	for _, tc := range []struct {
		kind  sandbox.FaultKind
		check func(t *testing.T, err error)
	}{
		{sandbox.FaultFail, func(t *testing.T, err error) {
			var ae *restbackend.APIError
			require.True(t, errors.As(err, &ae), "%v", err)
			assert.Equal(t, http.StatusInternalServerError, ae.Status)
		}},
		{sandbox.FaultReset, transportErr},
		{sandbox.FaultResetAfter, transportErr},
		{sandbox.FaultTruncateAfter, transportErr},
		{sandbox.FaultMalformedAfter, malformedErr},
		{sandbox.Fault502After, malformedErr},
	} {
		t.Run("refund under "+string(tc.kind), func(t *testing.T) {
			id := paid(t, 5000, false)
			require.NoError(t, gw.InjectFault(sandbox.Fault{Method: http.MethodPost, Path: "/api/payments/payment/*/refund", Kind: tc.kind}))
			_, err := c.Refund(ctx, cr, id, 5000)
			require.Error(t, err)
			tc.check(t, err)
			st := gw.Stats()
			assert.Equal(t, 1, st.Posts[refundPath(id)], "the client never repeats a refund POST")
			s, err := c.PaymentStatus(ctx, cr, id)
			require.NoError(t, err)
			if tc.kind.Acts() {
				assert.Equal(t, 1, st.Acted[refundPath(id)])
				assert.Equal(t, restbackend.StateRefunded, s.State, "the gateway refunded before the fault")
			} else {
				assert.Equal(t, 0, st.Acted[refundPath(id)])
				assert.Equal(t, restbackend.StatePaid, s.State)
			}
		})
	}
	t.Run("status GET retried through two 503s", func(t *testing.T) {
		id := paid(t, 1000, false)
		require.NoError(t, gw.InjectFault(sandbox.Fault{Method: http.MethodGet, Path: "/api/payments/payment/*", Kind: sandbox.FaultFail, Status: 503, Times: 2}))
		s, err := c.PaymentStatus(ctx, cr, id)
		require.NoError(t, err)
		assert.Equal(t, restbackend.StatePaid, s.State)
		assert.Empty(t, gw.Faults())
	})
	t.Run("a reply with another payment's id", func(t *testing.T) {
		id := paid(t, 1000, false)
		require.NoError(t, gw.InjectFault(sandbox.Fault{Method: http.MethodPost, Path: "/api/payments/payment/*/refund", Kind: sandbox.FaultWrongIDAfter}))
		_, err := c.Refund(ctx, cr, id, 1000)
		require.Error(t, err, "a reply about another payment is never a success")
		var mm *restbackend.MismatchError
		assert.True(t, errors.As(err, &mm), "%T %v", err, err)
		assert.Equal(t, restbackend.OutcomeUnknown, restbackend.OutcomeOf(err), "the gateway acted: the caller must reconcile")
	})
}

func transportErr(t *testing.T, err error) {
	var te *restbackend.TransportError
	var me *restbackend.MalformedError
	assert.True(t, errors.As(err, &te) || errors.As(err, &me), "%T %v", err, err)
	assert.False(t, strings.Contains(err.Error(), "secret"))
}

func malformedErr(t *testing.T, err error) {
	var me *restbackend.MalformedError
	assert.True(t, errors.As(err, &me), "%T %v", err, err)
}
