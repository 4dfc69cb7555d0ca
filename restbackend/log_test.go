package restbackend_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/legacybridge/soapbridge/restbackend"
)

// TestNoCredentialsInLogsOrErrors drives successes and every kind of
// failure with debug logging on, and checks that no secret, token or
// Authorization value reaches a log entry or an error string.
func TestNoCredentialsInLogsOrErrors(t *testing.T) {
	g := newFakeGateway(t)
	core, logs := observer.New(zapcore.DebugLevel)
	c := g.client(func(c *restbackend.Config) { c.Logger = zap.New(core) })
	wrong := restbackend.Credentials{ClientID: "test-client", ClientSecret: "wr0ng-s3cr3t-Pv4"}

	var errs []error
	keep := func(_ any, err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	keep(c.CreatePayment(bg, testCreds, fullPayment)) // token + call
	g.revokeAll()
	keep(c.PaymentStatus(bg, testCreds, pid))          // 401, renewal, repeat
	keep(c.Token(bg, wrong))                           // token refused
	keep(c.Refund(bg, wrong, 1, 100))                  // token refused
	keep(c.CreatePayment(bg, otherCreds, fullPayment)) // a second merchant
	g.setAPI(replyWith(http.StatusUnauthorized, `{"errors":[{"scope":"G","error_code":200,"error_name":"AUTH_WRONG_TOKEN"}]}`))
	keep(c.Capture(bg, testCreds, 1, nil)) // 401 twice
	g.setAPI(replyWith(http.StatusConflict, `{"errors":[{"scope":"F","field":"amount","error_code":111,"error_name":"WRONG_FORMAT"}]}`))
	keep(c.Refund(bg, testCreds, 1, 100))
	g.setAPI(replyWith(http.StatusOK, `{"id":`))
	keep(c.VoidAuthorization(bg, testCreds, 1))
	g.setAPI(reset)
	keep(c.PaymentStatus(bg, testCreds, pid))
	g.srv.Close()
	keep(c.CreatePayment(bg, testCreds, fullPayment))
	require.Len(t, errs, 7)

	g.mu.Lock()
	issued := g.issued
	g.mu.Unlock()
	require.GreaterOrEqual(t, issued, 4)
	secrets := []string{testCreds.ClientSecret, otherCreds.ClientSecret, wrong.ClientSecret, "Bearer", "Basic", "RT-unused"}
	for i := 1; i <= issued; i++ {
		secrets = append(secrets, fmt.Sprintf("%s%d", tokenPrefix, i))
	}
	for _, cr := range []restbackend.Credentials{testCreds, otherCreds, wrong} {
		secrets = append(secrets, base64.StdEncoding.EncodeToString([]byte(cr.ClientID+":"+cr.ClientSecret)))
		// Credentials print without their secret.
		assert.NotContains(t, fmt.Sprintf("%v %+v %#v %s", cr, cr, cr, cr), cr.ClientSecret)
	}

	require.NotZero(t, logs.Len())
	var text strings.Builder
	for _, e := range logs.All() {
		assert.Equal(t, zapcore.DebugLevel, e.Level)
		text.WriteString(e.Message + "\n")
		enc := zapcore.NewMapObjectEncoder()
		for _, f := range e.Context {
			f.AddTo(enc)
		}
		text.WriteString(fmt.Sprint(enc.Fields) + "\n")
		for _, k := range []string{"op", "method", "path", "attempt", "duration"} {
			assert.Contains(t, enc.Fields, k, "log entry %q", e.Message)
		}
	}
	for _, err := range errs {
		text.WriteString(err.Error() + "\n")
		text.WriteString(fmt.Sprintf("%v %+v %#v\n", err, err, err))
	}
	for _, s := range secrets {
		assert.NotContains(t, text.String(), s)
	}

	// The entries tell what happened: the call, its status and attempt.
	statuses := logs.FilterField(zap.Int("status", http.StatusUnauthorized)).Len()
	assert.GreaterOrEqual(t, statuses, 4, "401s are logged with their status")
}
