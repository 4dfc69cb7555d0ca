package web

import (
	"net/http"
	"testing"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Legacy client libraries name the statement format TYPE_CSV (also
// TYPE_XLS, TYPE_ABO); the bridge must not refuse them.
func TestReviewStatementTypePrefix(t *testing.T) {
	env := newFlEnv(t)
	sig, err := operations.Sign(flSecureKey, operations.StatementRequestFields("2026-01-01", "2026-01-31", "8123456789", "CZK")...)
	require.NoError(t, err)
	u := env.bridge.URL + PathStatement + "?statementRequest.dateFrom=2026-01-01&statementRequest.dateTo=2026-01-31" +
		"&statementRequest.targetGoId=8123456789&statementRequest.currency=CZK&statementRequest.contentType=TYPE_CSV" +
		"&statementRequest.encryptedSignature=" + sig
	resp := env.get(t, u)
	b := body(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, b)
	assert.Equal(t, "text/csv", resp.Header.Get("Content-Type"))
}
