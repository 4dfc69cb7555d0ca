package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/restbackend/sandbox"
	"github.com/legacybridge/soapbridge/store"
)

type usageRows interface {
	usage.Store
	Usage(ctx context.Context, goids ...int64) ([]store.UsageCount, error)
}

// TestFlowsRecordUsage: each browser flow and the statement download is
// recorded for its merchant with its outcome, the client its User-Agent
// names and the legacy features it used: a windows-1250 base-integration
// form (and a forged one, refused: counted, nothing else of what it sent),
// a customer sent to pay-full-v2, the
// return, the gateway's notification, a Java statement job without
// currency.
func TestFlowsRecordUsage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bridge.db")
	st, err := store.Open(context.Background(), db)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	rec, err := usage.New(usage.Config{Store: st.(usageRows)})
	require.NoError(t, err)
	env := newFlEnvWith(t, flOptions{db: db, usage: rec})
	ctx := context.Background()
	const firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	do := func(method, u, ua, body string) *http.Response {
		req, err := http.NewRequest(method, u, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("User-Agent", ua)
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := env.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}

	form, err := os.ReadFile(filepath.Join("..", "..", "testdata", "clients", "variants", "pay-base-v2-cp1250.form"))
	require.NoError(t, err)
	require.Equal(t, http.StatusFound, do(http.MethodPost, env.bridge.URL+PathPayBase, firefox, string(form)).StatusCode)
	forged := strings.Replace(string(form), "Objedn%E1vka", "Objednavka", 1)
	require.Equal(t, http.StatusForbidden, do(http.MethodPost, env.bridge.URL+PathPayBase, firefox, forged).StatusCode)

	id := env.create(t, "usage-1", "https://shop.example/ok", "https://shop.example/ko")
	payFull, err := PayFullURL(env.bridge.URL, flSecureKey, flGoID, id)
	require.NoError(t, err)
	require.Equal(t, http.StatusFound, do(http.MethodGet, payFull, firefox, "").StatusCode)
	require.NoError(t, env.sb.Act(ctx, id, sandbox.Action{Do: sandbox.ActPay, Instrument: "PAYMENT_CARD"}))
	require.Equal(t, http.StatusFound, do(http.MethodGet, env.callbackURL(t, PathReturn, id), firefox, "").StatusCode)
	// The gateway notifies the bridge of the payment (on its own, as it
	// repeats until answered: at least once); the shop gets it.
	flWaitNotification(t, env.shop, operations.FormatInt(id))

	today := pragueToday(t)
	sig, err := operations.Sign(flSecureKey, operations.StatementRequestFieldsNoCurrency("2020-01-01", today, "8123456789")...)
	require.NoError(t, err)
	v := url.Values{"statementRequest.dateFrom": {"2020-01-01"}, "statementRequest.dateTo": {today},
		"statementRequest.targetGoId": {"8123456789"}, "statementRequest.contentType": {"TYPE_CSV"},
		"statementRequest.encryptedSignature": {sig}}
	require.Equal(t, http.StatusOK, do(http.MethodGet, env.bridge.URL+PathStatement+"?"+v.Encode(), "Java/1.8.0_392", "").StatusCode)

	require.NoError(t, rec.Flush(ctx))
	rows, err := st.(usageRows).Usage(ctx, flGoID)
	require.NoError(t, err)
	var got []string
	for _, r := range rows {
		if r.Name == usage.FlowNotification {
			assert.GreaterOrEqual(t, r.Calls, int64(1), "notification")
			assert.Equal(t, "ok", r.Detail)
			continue
		}
		got = append(got, strings.Join(strings.Fields(fmt.Sprintf("%s %s %s %d", r.Kind, r.Name, r.Detail, r.Calls)), " "))
	}
	assert.Equal(t, []string{
		// The shop's createPayment before pay-full-v2 (no client: not
		// sent over SOAP here).
		"call createPayment ok 1",
		"call get-account-statement ok 1",
		"call pay-base-v2 ok 1",
		"call pay-base-v2 unverified 1",
		"call pay-full-v2 ok 1",
		"call return ok 1",
		"client browser 3",
		"client java Java/1.8.0_392 1",
		"client unknown 1",
		"feature channel cz_kb 1",
		"feature channel eu_gp_u 1",
		"feature charset windows-1250 1",
		"feature customerData 1",
		"feature defaultPaymentChannel 1",
		"feature lang 2",
		"feature paymentChannels 1",
		"feature statement CSV 1",
		"feature statement without currency 1",
	}, got, "the forged form counts as unverified (refused), nothing more; the real one once, as the flow")
}
