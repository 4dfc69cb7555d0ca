package sandbox

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
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
