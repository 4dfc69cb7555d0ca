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
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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

// TestISOTimeIsZapISO8601: isoTime writes every time as
// zapcore.ISO8601TimeEncoder does, in the JSON and console encoders: in
// several zones (offsets of half and three quarters of an hour, west of
// Greenwich, a local mean time with seconds in its offset), across a
// daylight-saving change, for times read back one after another within a
// second and from second to second (the cached second), and far from now.
func TestISOTimeIsZapISO8601(t *testing.T) {
	var locs []*time.Location
	for _, name := range []string{"UTC", "Europe/Prague", "America/St_Johns", "Asia/Kathmandu", "Pacific/Chatham", "America/Los_Angeles"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatalf("zone %s: %v", name, err)
		}
		locs = append(locs, loc)
	}
	locs = append(locs, time.Local, time.FixedZone("", -(3*3600+30*60)), time.FixedZone("LMT", 3464))
	starts := []time.Time{
		time.Date(2026, 3, 29, 0, 59, 58, 0, time.UTC),  // Prague: CET to CEST at 01:00 UTC
		time.Date(2026, 10, 25, 0, 59, 58, 0, time.UTC), // and back
		time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(12345, 6, 7, 8, 9, 10, 0, time.UTC),
		time.Now(),
	}
	steps := []time.Duration{0, time.Nanosecond, 999 * time.Microsecond, time.Millisecond, 7 * time.Millisecond, 333 * time.Millisecond, time.Second, 1500 * time.Millisecond}
	zapCfg, ourCfg := zap.NewProductionEncoderConfig(), zap.NewProductionEncoderConfig()
	zapCfg.EncodeTime, ourCfg.EncodeTime = zapcore.ISO8601TimeEncoder, isoTime
	encoders := map[string][2]zapcore.Encoder{
		"json":    {zapcore.NewJSONEncoder(zapCfg), zapcore.NewJSONEncoder(ourCfg)},
		"console": {zapcore.NewConsoleEncoder(zapCfg), zapcore.NewConsoleEncoder(ourCfg)},
	}
	n := 0
	for name, enc := range encoders {
		for _, start := range starts {
			at := start
			for i := 0; i < 40; i++ {
				at = at.Add(steps[i%len(steps)])
				for _, loc := range locs { // the same second in one zone after another
					want, err := enc[0].EncodeEntry(zapcore.Entry{Time: at.In(loc), Message: "m"}, nil)
					if err != nil {
						t.Fatal(err)
					}
					got, err := enc[1].EncodeEntry(zapcore.Entry{Time: at.In(loc), Message: "m"}, nil)
					if err != nil {
						t.Fatal(err)
					}
					if got.String() != want.String() {
						t.Fatalf("%s, %v: %q, zap writes %q", name, at.In(loc), got, want)
					}
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("nothing compared")
	}
}
