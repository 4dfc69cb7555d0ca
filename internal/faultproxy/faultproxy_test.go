package faultproxy_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/faultproxy"
)

const refundPath = "/api/payments/payment/42/refund"

// upstream answers every request with an operation result about payment
// 42 and counts what it saw.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", string(body))
		io.WriteString(w, `{"id":42,"result":"FINISHED"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func post(t *testing.T, client *http.Client, url string) (*http.Response, []byte, error) {
	t.Helper()
	resp, err := client.Post(url, "application/x-www-form-urlencoded", strings.NewReader("amount=100"))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestFaults(t *testing.T) {
	cases := []struct {
		fault faultproxy.Fault
		check func(t *testing.T, resp *http.Response, body []byte, err error)
	}{
		{faultproxy.Pass, func(t *testing.T, resp *http.Response, body []byte, err error) {
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode)
			assert.JSONEq(t, `{"id":42,"result":"FINISHED"}`, string(body))
			assert.Equal(t, "amount=100", resp.Header.Get("X-Echo"), "the body reaches the upstream")
		}},
		{faultproxy.ResetBefore, isReset},
		{faultproxy.ResetAfter, isReset},
		{faultproxy.ServerErrorBefore, func(t *testing.T, resp *http.Response, body []byte, err error) {
			require.NoError(t, err)
			assert.Equal(t, 500, resp.StatusCode)
			assert.Contains(t, string(body), `"error_code":100`)
		}},
		{faultproxy.BadGatewayAfter, func(t *testing.T, resp *http.Response, body []byte, err error) {
			require.NoError(t, err)
			assert.Equal(t, 502, resp.StatusCode)
			assert.Equal(t, "text/html", resp.Header.Get("Content-Type"))
		}},
		{faultproxy.Truncate, func(t *testing.T, resp *http.Response, body []byte, err error) {
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			require.NotNil(t, resp)
			assert.Equal(t, 200, resp.StatusCode)
			assert.Less(t, len(body), len(`{"id":42,"result":"FINISHED"}`))
		}},
		{faultproxy.Malformed, func(t *testing.T, resp *http.Response, body []byte, err error) {
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode)
			assert.False(t, json.Valid(body))
		}},
		{faultproxy.WrongID, func(t *testing.T, resp *http.Response, body []byte, err error) {
			require.NoError(t, err)
			assert.JSONEq(t, `{"id":1042,"result":"FINISHED"}`, string(body))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.fault.String(), func(t *testing.T) {
			up, seen := upstream(t)
			p := faultproxy.New(up.URL)
			defer p.Close()
			p.Add(faultproxy.Rule{Method: http.MethodPost, Path: "/api/payments/payment/*/refund", Fault: tc.fault, Times: 1})

			resp, body, err := post(t, &http.Client{}, p.URL()+refundPath)
			tc.check(t, resp, body, err)
			want := 0
			if tc.fault.Forwards() {
				want = 1
			}
			assert.Equal(t, int32(want), seen.Load(), "upstream saw")
			assert.Equal(t, want, p.Forwarded(http.MethodPost, "/api/payments/payment/*/refund"))

			// Times: 1 — the next request passes.
			resp, body, err = post(t, &http.Client{}, p.URL()+refundPath)
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode)
			assert.JSONEq(t, `{"id":42,"result":"FINISHED"}`, string(body))
			assert.Equal(t, want+1, p.Forwarded(http.MethodPost, "/api/payments/payment/*/refund"))
		})
	}
}

func isReset(t *testing.T, _ *http.Response, _ []byte, err error) {
	t.Helper()
	require.Error(t, err)
	assert.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF), "reset, got %v", err)
}

func TestDelayAndHang(t *testing.T) {
	up, seen := upstream(t)
	p := faultproxy.New(up.URL)
	defer p.Close()
	p.Add(faultproxy.Rule{Path: "/slow", Fault: faultproxy.Delay, Delay: time.Hour})
	p.Add(faultproxy.Rule{Path: "/hang", Fault: faultproxy.Hang})

	c := &http.Client{Timeout: 200 * time.Millisecond}
	_, _, err := post(t, c, p.URL()+"/slow")
	assert.True(t, isTimeout(err), "the client gives up while the reply is held: %v", err)
	assert.Equal(t, int32(1), seen.Load(), "a delayed request was forwarded")
	_, _, err = post(t, c, p.URL()+"/hang")
	assert.True(t, isTimeout(err), "%v", err)
	assert.Equal(t, int32(1), seen.Load(), "a hung request is not forwarded")
	assert.Equal(t, 1, p.Forwarded(http.MethodPost, "/*"))

	// A short delay relays the reply.
	p.Clear()
	p.Add(faultproxy.Rule{Fault: faultproxy.Delay, Delay: 50 * time.Millisecond})
	resp, body, err := post(t, &http.Client{}, p.URL()+refundPath)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.JSONEq(t, `{"id":42,"result":"FINISHED"}`, string(body))
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// Rules match on method and path; Forwarded counts by method and pattern.
func TestRuleMatching(t *testing.T) {
	up, _ := upstream(t)
	p := faultproxy.New(up.URL)
	defer p.Close()
	p.Add(faultproxy.Rule{Method: http.MethodPost, Path: "/api/payments/payment/*/capture", Fault: faultproxy.ServerErrorBefore})

	resp, err := http.Get(p.URL() + "/api/payments/payment/42/capture")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "a GET does not match a POST rule")
	r2, _, err := post(t, &http.Client{}, p.URL()+"/api/payments/payment/42/capture")
	require.NoError(t, err)
	assert.Equal(t, 500, r2.StatusCode)
	r3, _, err := post(t, &http.Client{}, p.URL()+"/api/payments/payment/42/capture")
	require.NoError(t, err)
	assert.Equal(t, 500, r3.StatusCode, "Times 0: every matching request")
	r4, _, err := post(t, &http.Client{}, p.URL()+refundPath)
	require.NoError(t, err)
	assert.Equal(t, 200, r4.StatusCode, "another path passes")

	assert.Equal(t, 1, p.Forwarded(http.MethodGet, "/api/payments/payment/*/capture"))
	assert.Equal(t, 0, p.Forwarded(http.MethodPost, "/api/payments/payment/*/capture"))
	assert.Equal(t, 1, p.Forwarded(http.MethodPost, "/api/payments/payment/*/refund"))
}
