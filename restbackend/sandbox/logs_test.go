package sandbox

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/legacybridge/soapbridge/restbackend"
)

// TestLogsHoldNoSecrets: client secrets and bearer tokens never reach the log.
func TestLogsHoldNoSecrets(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	e := newEnv(t, func(o *Options) { o.Logger = zap.New(core) })
	e.notify.fail = []int{500}
	e.tokenCall(testID, "wrong-secret", restbackend.ScopePaymentAll)
	e.callAs("bogus-token-value", http.MethodGet, "/api/payments/payment/1", nil)
	p := e.create(nil)
	e.mustHelper(p.ID, "pay", nil)
	e.waitCalls(2)
	assert.NotZero(t, logs.Len(), "state changes and the failed notification are logged")
	for _, entry := range logs.All() {
		line := entry.Message + fmt.Sprint(entry.ContextMap())
		for _, secret := range []string{testSecret, "wrong-secret", e.token, "bogus-token-value"} {
			assert.NotContains(t, line, secret)
		}
	}
}

// TestFailedNotificationLogsNoCallbackToken: a notification that cannot be
// delivered (connection refused) is logged without its URL, whose query
// holds the bridge's per-payment callback token.
func TestFailedNotificationLogsNoCallbackToken(t *testing.T) {
	const token = "CALLBACK-TOKEN-7Q2"
	core, logs := observer.New(zapcore.DebugLevel)
	e := newEnv(t, func(o *Options) { o.Logger = zap.New(core) })
	p := e.create(func(r *restbackend.PaymentRequest) {
		// Port 1 on loopback: nothing listens, the dial is refused.
		r.Callback.NotificationURL = "http://127.0.0.1:1/callback/notify?goid=1&token=" + token
	})
	e.mustHelper(p.ID, "pay", nil)
	require.Eventually(t, func() bool { return logs.FilterMessage("sandbox: notification not accepted").Len() > 0 },
		10*time.Second, 10*time.Millisecond)
	for _, entry := range logs.All() {
		line := entry.Message + fmt.Sprint(entry.ContextMap())
		assert.NotContains(t, line, token)
	}
	assert.Contains(t, fmt.Sprint(logs.FilterMessage("sandbox: notification not accepted").All()[0].ContextMap()), "refused",
		"the cause is still logged")
}
