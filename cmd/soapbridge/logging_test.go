package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"

	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/legacybridge/soapbridge/restbackend"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With the buffer on (the default), lines wait for the timer or the
// shutdown, and none is lost at exit: the access-log line of the last call
// and "stopped" are written when run returns.
func TestBufferedLogFlushedAtShutdown(t *testing.T) {
	b := startInProcess(t, map[string]string{"SOAPBRIDGE_LOG_BUFFER": "1048576", "SOAPBRIDGE_LOG_LEVEL": "info"})
	resp, err := http.Post(b.URL+"/axis/EPaymentServiceV2", "text/xml; charset=utf-8", strings.NewReader(touchEnvelope))
	require.NoError(t, err)
	rid := resp.Header.Get("X-Request-Id")
	resp.Body.Close()
	require.NotEmpty(t, rid)
	b.stop()
	select {
	case err := <-b.done:
		require.NoError(t, err)
		b.done <- err // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return")
	}
	logged := b.log.String()
	assert.Contains(t, logged, `"request_id":"`+rid+`"`, "the last access-log line was flushed")
	assert.Contains(t, logged, `"msg":"stopped"`)
}

// The timer flushes a quiet bridge's lines without a shutdown.
func TestBufferedLogFlushedByTimer(t *testing.T) {
	var out logLines
	out.changed = make(chan struct{})
	ws, closeSink := logSink(&out, 1<<20)
	defer closeSink()
	_, err := ws.Write([]byte("line one\n"))
	require.NoError(t, err)
	assert.Empty(t, out.String(), "buffered, not written at once")
	assert.Eventually(t, func() bool { return out.String() == "line one\n" }, 10*logFlushInterval, 50*time.Millisecond)
}

func TestUnbufferedLogWritesAtOnce(t *testing.T) {
	var out logLines
	out.changed = make(chan struct{})
	ws, closeSink := logSink(&out, 0)
	defer closeSink()
	_, err := ws.Write([]byte("line one\n"))
	require.NoError(t, err)
	assert.Equal(t, "line one\n", out.String())
}

func TestPerformanceSettings(t *testing.T) {
	cfg, err := loadConfig(nil, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, defaultLogBuffer, cfg.LogBuffer)
	assert.Equal(t, restbackend.DefaultMaxIdleConns, cfg.RESTMaxIdleConns)

	cfg, err = loadConfig([]string{"-log-buffer", "0"}, envOf(map[string]string{"SOAPBRIDGE_REST_MAX_IDLE_CONNS": "64"}))
	require.NoError(t, err)
	assert.Equal(t, 0, cfg.LogBuffer)
	assert.Equal(t, 64, cfg.RESTMaxIdleConns)

	for _, env := range []map[string]string{{"SOAPBRIDGE_LOG_BUFFER": "-1"}, {"SOAPBRIDGE_REST_MAX_IDLE_CONNS": "0"}} {
		_, err := loadConfig(nil, envOf(env))
		assert.Error(t, err, env)
	}
}

// GOGC and GOMEMLIMIT from the environment win over the defaults.
func TestGCDefaultsYieldToEnvironment(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))

	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	applyGCDefaults(envOf(map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB"}))
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: left to the runtime")
	assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))

	debug.SetMemoryLimit(math.MaxInt64)
	applyGCDefaults(envOf(map[string]string{"GOGC": "100"}))
	assert.Equal(t, int64(defaultMemLimitMB<<20), debug.SetMemoryLimit(math.MaxInt64))
}

// The headroom is Go's GOGC 100 (as much as the collector scans) but never
// under the floor.
func TestGCPercentFor(t *testing.T) {
	const floor = 32 << 20
	assert.Equal(t, gcPercentMax, gcPercentFor(0, floor), "nothing scanned yet")
	assert.Equal(t, gcPercentMax, gcPercentFor(1<<20, floor), "an idle heap: capped")
	assert.Equal(t, 400, gcPercentFor(8<<20, floor), "8 MiB scanned: the floor's 32 MiB of headroom")
	assert.Equal(t, 100, gcPercentFor(32<<20, floor))
	assert.Equal(t, 100, gcPercentFor(300<<20, floor), "a large heap: Go's own 100")
}

// After each collection GOGC follows what it scanned: a large live heap
// gets Go's 100-like headroom, the same process idle the floor's.
func TestGCPacingFollowsEachCollection(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const floor = 64 << 20
	p := startGCPacing(floor)
	defer p.stop()
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	percent := func() int {
		metrics.Read(gogc)
		return int(gogc[0].Value.Uint64())
	}

	held := make([][]byte, 48) // 48 MiB live: GOGC near 64/48 × 100
	for i := range held {
		held[i] = make([]byte, 1<<20)
	}
	// A sentinel armed while a collection marks survives it: collect
	// until the pacing has seen one with the heap held.
	var got int
	require.Eventually(t, func() bool {
		runtime.GC()
		got = percent()
		return got >= 100 && got <= 140
	}, 10*time.Second, 10*time.Millisecond, "48 MiB live, floor 64 MiB: GOGC about 64/48 × 100")
	runtime.KeepAlive(held)

	held = nil
	require.Eventually(t, func() bool {
		runtime.GC()
		got = percent()
		return got >= 400
	}, 10*time.Second, 10*time.Millisecond, "the heap released: GOGC back near its cap")
}
