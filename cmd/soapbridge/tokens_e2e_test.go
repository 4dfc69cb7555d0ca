package main

// Return tokens at rest: after real flows through the binary (payments
// created over SOAP, paid, notified and returned), on SQLite and on
// PostgreSQL, the database holds nothing a stranger could send to
// /callback/return.

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/web"
)

// tokenRecorder is a reverse proxy to a gateway that keeps the return URL
// of every payment the bridge creates through it: the only place, besides
// the gateway, where the bridge's return tokens exist.
type tokenRecorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	ret []string // return_url of each create, in order
}

func newTokenRecorder(t *testing.T, gateway string) *tokenRecorder {
	target, err := url.Parse(gateway)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	r := &tokenRecorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && req.URL.Path == "/api/payments/payment" {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			var create struct {
				Callback struct {
					ReturnURL string `json:"return_url"`
				} `json:"callback"`
			}
			if json.Unmarshal(body, &create) == nil && create.Callback.ReturnURL != "" {
				r.mu.Lock()
				r.ret = append(r.ret, create.Callback.ReturnURL)
				r.mu.Unlock()
			}
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *tokenRecorder) returnURLs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ret...)
}

// dbValues is every value of every table of the bridge's database, as text.
func dbValues(t *testing.T, dsn string) map[string][]string {
	t.Helper()
	driver, list := "sqlite", `SELECT name FROM sqlite_master WHERE type = 'table'`
	if strings.HasPrefix(dsn, "postgres") {
		driver, list = "pgx", `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`
	}
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	defer db.Close()
	var tables []string
	rows, err := db.Query(list)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	out := map[string][]string{}
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM ` + table)
		require.NoError(t, err, table)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				out[table+"."+cols[i]] = append(out[table+"."+cols[i]], fmt.Sprint(v))
			}
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return out
}

func TestNoUsableReturnTokenInDatabase(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			dsn := filepath.Join(t.TempDir(), "bridge.db")
			if name == "postgres" {
				dsn = testenv.PostgresSchema(t)
			}
			gw := startGatewaySandbox(t)
			rec := newTokenRecorder(t, gw.URL)
			shop := newFlowShop(t)
			b := startBridge(t, withDB(dsn), withEnv("SOAPBRIDGE_GATEWAY_URL="+rec.srv.URL+"/api",
				"SOAPBRIDGE_NOTIFICATION_URL="+shop.srv.URL+"/notify"))
			shop.setBridge(b.URL)
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

			// Two payments; one paid: its notification (the gateway's call
			// with the token) reaches the shop, and its customer's return
			// with the token is the shop's signed success redirect.
			paid := flowCreate(t, shop, "REST-1")
			unpaid := flowCreate(t, shop, "REST-2")
			flowPay(t, gw.URL, paid)
			shop.waitNotification(t, paid)
			urls := rec.returnURLs()
			require.Len(t, urls, 2)
			var tokens []string
			for _, u := range urls {
				pu, err := url.Parse(u)
				require.NoError(t, err)
				tok := pu.Query().Get(operations.CallbackTokenParam)
				require.NotEmpty(t, tok, u)
				tokens = append(tokens, tok)
			}
			resp, err := noFollow.Get(operations.AppendQuery(urls[0], "id="+paid))
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusFound, resp.StatusCode, "the customer's return with the token")
			assert.Contains(t, resp.Header.Get("Location"), shop.srv.URL+"/ok")
			b.Stop()

			// Everything the database holds: no token, in any column.
			values := dbValues(t, dsn)
			require.NotEmpty(t, values["session_tokens.return_token"])
			for col, vs := range values {
				for _, v := range vs {
					for _, tok := range tokens {
						assert.NotContains(t, strings.ToUpper(v), tok, "%s holds a return token", col)
					}
				}
			}

			// And what is there opens nothing: each stored value sent as
			// the token of either payment is the unknown-payment 404.
			b = startBridge(t, withDB(dsn), withEnv("SOAPBRIDGE_GATEWAY_URL="+rec.srv.URL+"/api",
				"SOAPBRIDGE_NOTIFICATION_URL="+shop.srv.URL+"/notify"))
			for _, v := range values["session_tokens.return_token"] {
				for _, id := range []string{paid, unpaid} {
					for _, path := range []string{web.PathReturn, web.PathNotify} {
						u := b.URL + path + "?goid=" + demoGoID + "&" + operations.CallbackTokenParam + "=" + url.QueryEscape(v) + "&id=" + id
						resp, err := noFollow.Get(u)
						require.NoError(t, err)
						resp.Body.Close()
						assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s with a stored value", path)
					}
				}
			}
		})
	}
}
