package main

// The sandbox gateway's scenario controls (docs/sandbox-controls.md) drive
// the outcomes a legacy e-shop must be told right and that a well-behaved
// gateway never shows on its own: ACCEPTED and FAILED results, declined
// cards and recurring charges, a failing gateway, a reply lost after the
// gateway acted. Through the running binary and its embedded sandbox, with
// PHP SoapClient checking every signature with the e-shop's key.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runControls runs testdata/clients/php/controls.php against b.
func runControls(t *testing.T, php string, b *bridgeProc, args ...string) facts {
	t.Helper()
	stdout, err := runTool(t, 60*time.Second, b.clientEnv(), php, append([]string{filepath.Join(phpDir, "controls.php")}, args...)...)
	require.NoError(t, err)
	return parseFacts(t, stdout)
}

// noFault: the client got replies, not a SOAP fault.
func (f facts) noFault(t *testing.T) {
	t.Helper()
	_, faulted := f["fault"]
	require.False(t, faulted, "SOAP fault: %v", f)
}

// signedSub: an EPaymentStatus with its sub-state, signed. The legacy
// protocol writes the REST sub-state _5006 as the number 5006.
func (f facts) signedSub(t *testing.T, p, state, sub string) {
	t.Helper()
	f.signedStatus(t, p, state)
	f.eq(t, p+".subState", sub)
}

func TestSandboxControlsThroughPHP(t *testing.T) {
	php := requirePHP(t)
	b := startBridge(t)
	run := func(t *testing.T, scenario string) facts {
		f := runControls(t, php, b, scenario)
		f.noFault(t)
		return f
	}

	t.Run("capture ACCEPTED", func(t *testing.T) {
		f := run(t, "capture_accepted")
		f.signedStatus(t, "authorized", "AUTHORIZED")
		f.signedResult(t, "op", "ACCEPTED")
		f.eq(t, "op.id", f["create.id"])
		f.signedStatus(t, "held", "AUTHORIZED") // accepted, not yet done
		f.eq(t, "advance.http", "200")
		f.signedStatus(t, "status", "PAID")
	})
	t.Run("refund FAILED", func(t *testing.T) {
		f := run(t, "refund_failed")
		f.signedResult(t, "op", "FAILED")
		f.eq(t, "op.id", f["create.id"])
		f.nonEmpty(t, "op.resultDescription")
		f.signedStatus(t, "status", "PAID") // no money moved
	})
	t.Run("refund ACCEPTED", func(t *testing.T) {
		f := run(t, "refund_accepted")
		f.signedResult(t, "op", "ACCEPTED")
		f.signedStatus(t, "held", "PAID")
		f.signedStatus(t, "status", "PARTIALLY_REFUNDED")
	})
	t.Run("card declined by amount", func(t *testing.T) {
		f := run(t, "declined_amount")
		f.signedStatus(t, "create", "CREATED")
		f.eq(t, "pay.http", "200")
		f.signedSub(t, "status", "CANCELED", "5006")
	})
	t.Run("card declined by order number", func(t *testing.T) {
		f := run(t, "declined_order")
		f.signedSub(t, "status", "CANCELED", "5015")
	})
	t.Run("recurring charge declined", func(t *testing.T) {
		f := run(t, "recurrence_declined")
		f.signedStatus(t, "child", "CREATED") // as the legacy library demands
		f.eq(t, "child.parent", f["parent.id"])
		f.signedSub(t, "charged", "CANCELED", "5006")
		f.eq(t, "charged.id", f["child.id"])
		f.signedStatus(t, "parent", "PAID") // the recurrence keeps running
	})
}

// A gateway answering 5xx is a Server fault the legacy client knows, never
// a result; a refund whose reply is lost after the gateway refunded is
// reconciled to FINISHED, with the refund POSTed and performed once.
func TestSandboxFaultsThroughPHP(t *testing.T) {
	php := requirePHP(t)
	b := startBridge(t)
	paid := func(t *testing.T) string {
		f := runControls(t, php, b, "paid")
		f.noFault(t)
		f.eq(t, "pay.http", "200")
		return f["id"]
	}

	t.Run("5xx on status reads", func(t *testing.T) {
		id := paid(t)
		armFault(t, b, `{"method":"GET","path":"/api/payments/payment/*","kind":"fail","status":503,"times":100}`)
		f := runControls(t, php, b, "status_of", id)
		assert.Contains(t, f["fault"], "Server", "a Server fault: %v", f)
		assert.Contains(t, f["fault"], "payment gateway unavailable", "%v", f)
		assert.NotContains(t, f, "status.result", "no status invented")
		clearFaults(t, b)
		f = runControls(t, php, b, "status_of", id)
		f.noFault(t)
		f.signedStatus(t, "status", "PAID")
	})

	t.Run("5xx on the refund POST", func(t *testing.T) {
		id := paid(t)
		refund := "/api/payments/payment/" + id + "/refund"
		armFault(t, b, `{"method":"POST","path":"/api/payments/payment/*/refund","kind":"fail","status":500}`)
		f := moneyCall(t, php, b, "refundPayment", id)
		assert.Contains(t, f["op.fault"], "payment gateway unavailable", "%v", f)
		st := sandboxStats(t, b)
		assert.Equal(t, 1, st.Posts[refund], "one POST, no retry")
		assert.Equal(t, 0, st.Acted[refund], "nothing performed")
		f = runControls(t, php, b, "status_of", id)
		f.signedStatus(t, "status", "PAID")
	})

	t.Run("reply lost after the refund", func(t *testing.T) {
		id := paid(t)
		refund := "/api/payments/payment/" + id + "/refund"
		armFault(t, b, `{"method":"POST","path":"/api/payments/payment/*/refund","kind":"reset_after"}`)
		f := moneyCall(t, php, b, "refundPayment", id)
		f.signedResult(t, "op", "FINISHED")
		st := sandboxStats(t, b)
		assert.Equal(t, 1, st.Posts[refund], "one refund POST received")
		assert.Equal(t, 1, st.Acted[refund], "one refund performed")
		f = runControls(t, php, b, "status_of", id)
		f.signedStatus(t, "status", "REFUNDED")

		// The e-shop, having seen a slow call, retries: no second refund.
		f = moneyCall(t, php, b, "refundPayment", id)
		f.signedResult(t, "op", "FINISHED")
		assert.Equal(t, 1, sandboxStats(t, b).Posts[refund], "the retry never reaches the gateway")
	})
}

// moneyCall runs money_call.php; its facts ("result", "sig", "fault") come
// back under "op." like the other scripts' replies.
func moneyCall(t *testing.T, php string, b *bridgeProc, args ...string) facts {
	t.Helper()
	stdout, err := runTool(t, 60*time.Second, b.clientEnv(), php, append([]string{filepath.Join(phpDir, "money_call.php")}, args...)...)
	require.NoError(t, err)
	f := parseFacts(t, stdout)
	out := facts{}
	for k, v := range f {
		out["op."+k] = v
	}
	return out
}

// armFault arms a fault in b's sandbox (POST /sandbox/faults).
func armFault(t *testing.T, b *bridgeProc, fault string) {
	t.Helper()
	resp, err := http.Post(b.SandboxURL+"/sandbox/faults", "application/json", strings.NewReader(fault))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	t.Cleanup(func() { clearFaults(t, b) })
}

func clearFaults(t *testing.T, b *bridgeProc) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, b.SandboxURL+"/sandbox/faults", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

type gatewayStats struct {
	Posts map[string]int `json:"posts"`
	Acted map[string]int `json:"acted"`
}

func sandboxStats(t *testing.T, b *bridgeProc) gatewayStats {
	t.Helper()
	resp, err := http.Get(b.SandboxURL + "/sandbox/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st gatewayStats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.NotNil(t, st.Posts, fmt.Sprintf("%+v", st))
	return st
}
