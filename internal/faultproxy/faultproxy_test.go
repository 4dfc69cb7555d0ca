package faultproxy_test

import (
	"context"
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

func postCtx(ctx context.Context, url string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("amount=100"))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func isReset(t *testing.T, _ *http.Response, _ []byte, err error) {
	t.Helper()
	require.Error(t, err)
	assert.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF), "reset, got %v", err)
}

// Held requests are ordered by the test, not by a clock: the client gives
// up while the proxy holds its request (Delay and Hold after forwarding it,
// Hang before), and a Hold reply goes when the test releases it.
func TestDelayHangAndHold(t *testing.T) {
	up, seen := upstream(t)
	p := faultproxy.New(up.URL)
	defer p.Close()
	p.Add(faultproxy.Rule{Path: "/slow", Fault: faultproxy.Delay, Delay: time.Hour})
	p.Add(faultproxy.Rule{Path: "/hang", Fault: faultproxy.Hang})
	p.Add(faultproxy.Rule{Path: "/hold", Fault: faultproxy.Hold})

	// giveUp posts to path, cancels once the proxy holds the request and
	// waits until the proxy counted its client's n-th give-up there.
	giveUp := func(path string, n int) error {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		go func() { _, _, err := postCtx(ctx, p.URL()+path); errc <- err }()
		require.Eventually(t, func() bool { return p.Holding(http.MethodPost, path) == 1 }, time.Minute, time.Millisecond, "%s held", path)
		cancel()
		err := <-errc
		require.Eventually(t, func() bool { return p.GaveUp(http.MethodPost, path) == n && p.Holding(http.MethodPost, path) == 0 },
			time.Minute, time.Millisecond, "the proxy saw the client of %s give up", path)
		return err
	}
	assert.ErrorIs(t, giveUp("/slow", 1), context.Canceled)
	assert.Equal(t, int32(1), seen.Load(), "a delayed request was forwarded")
	assert.ErrorIs(t, giveUp("/hang", 1), context.Canceled)
	assert.Equal(t, int32(1), seen.Load(), "a hung request is not forwarded")
	assert.ErrorIs(t, giveUp("/hold", 1), context.Canceled)
	assert.Equal(t, int32(2), seen.Load(), "a held request was forwarded")
	assert.Equal(t, 2, p.Forwarded(http.MethodPost, "/*"))

	// A held reply goes when released, not before; the next is held again.
	type reply struct {
		body []byte
		err  error
	}
	got := make(chan reply, 1)
	go func() { _, b, err := postCtx(context.Background(), p.URL()+"/hold"); got <- reply{b, err} }()
	require.Eventually(t, func() bool { return p.Holding(http.MethodPost, "/hold") == 1 }, time.Minute, time.Millisecond)
	assert.Equal(t, int32(3), seen.Load(), "forwarded before it is held")
	assert.Empty(t, got, "no reply while held")
	p.Release()
	r := <-got
	require.NoError(t, r.err)
	assert.JSONEq(t, `{"id":42,"result":"FINISHED"}`, string(r.body))
	assert.Equal(t, 1, p.GaveUp(http.MethodPost, "/hold"), "a released reply is not a client that gave up")
	assert.ErrorIs(t, giveUp("/hold", 2), context.Canceled, "held again after a Release")

	// A short delay relays the reply.
	p.Clear()
	p.Add(faultproxy.Rule{Fault: faultproxy.Delay, Delay: 50 * time.Millisecond})
	resp, body, err := post(t, &http.Client{}, p.URL()+refundPath)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.JSONEq(t, `{"id":42,"result":"FINISHED"}`, string(body))
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
