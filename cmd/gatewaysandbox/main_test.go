package main

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuf is a bytes.Buffer safe to read while run writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestRunServesAndShutsDown(t *testing.T) {
	env := map[string]string{"SOAPBRIDGE_SANDBOX_LISTEN": "127.0.0.1:0", "SOAPBRIDGE_CLIENT_SECRET": "s3cret-value", "SOAPBRIDGE_LOG_LEVEL": "error"}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuf{}
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-goid", "8000000042"}, func(k string) string { return env[k] }, out, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatal(err)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"payment-all"}}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("sandbox-client", "s3cret-value")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("run did not stop")
	}
	s := out.String()
	assert.Contains(t, s, "merchant goid: 8000000042")
	assert.Contains(t, s, "client id:     sandbox-client")
	assert.NotContains(t, s, "s3cret-value", "a configured secret is never printed")
}
