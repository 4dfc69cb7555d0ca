package main

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// While draining, every reply says Connection: close (the balancer stops
// reusing the connection) and /healthz answers 503; before, neither.
func TestDrainingClosesConnectionsAfterReplies(t *testing.T) {
	var draining atomic.Bool
	e := echo.New()
	e.GET("/healthz", healthzUnless(draining.Load))
	srv := httptest.NewServer(closeWhenDraining(e, draining.Load))
	defer srv.Close()
	get := func() *http.Response {
		resp, err := http.Get(srv.URL + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	resp := get()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.False(t, resp.Close, "keep-alive while serving")
	draining.Store(true)
	resp = get()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.True(t, resp.Close, "Connection: close while draining")
}
