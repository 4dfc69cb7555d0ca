package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"go.uber.org/zap"
)

// The cost of writing every log line at once, against the buffered sink in
// the same run: access-log lines (the line every request writes) from
// concurrent goroutines through the bridge's own logger into a pipe whose
// other end a goroutine drains, as a container runtime drains stdout.
//
//	go test ./cmd/soapbridge -run '^$' -bench LogWrite -benchtime 2s -count 6
//
// The ratio unbuffered/buffered of ns/op is the price of losing no line on
// SIGKILL; flushed is the buffered sink with every warn line flushed (one
// line in 20 a warning, more than a bridge under attack writes).
func BenchmarkLogWrite(b *testing.B) {
	for _, c := range []struct {
		name       string
		buffer     int
		warnEveryN int
	}{
		{"buffered", 256 << 10, 0},
		{"unbuffered", 0, 0},
		{"buffered-warn-flushed", 256 << 10, 20},
	} {
		b.Run(c.name, func(b *testing.B) {
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			drained := make(chan struct{})
			go func() { io.Copy(io.Discard, r); close(drained) }() //nolint:errcheck // until the write end closes
			cfg := defaultConfig()
			cfg.LogBuffer = c.buffer
			sink, closeSink := logSink(w, cfg.LogBuffer)
			log, err := newLogger(cfg, sink)
			if err != nil {
				b.Fatal(err)
			}
			log = log.Named("http")
			b.ReportAllocs()
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				n := 0
				for pb.Next() {
					n++
					fields := []zap.Field{zap.String("method", "POST"), zap.String("path", "/axis/EPaymentServiceV2"),
						zap.Int("status", 200), zap.Int64("bytes", 612), zap.Float64("duration_ms", 0.734),
						zap.String("request_id", "4f6c1d2e9a0b4c7d8e1f2a3b4c5d6e7f"), zap.String("remote", "10.1.2.3:51234"),
						zap.String("client_ip", "192.0.2."+strconv.Itoa(n%250))}
					if c.warnEveryN > 0 && n%c.warnEveryN == 0 {
						log.Warn("request", fields...)
					} else {
						log.Info("request", fields...)
					}
				}
			})
			b.StopTimer()
			_ = log.Sync()
			closeSink()
			w.Close()
			<-drained
			r.Close()
		})
	}
}

// The same comparison through the whole bridge: touch calls from 64 client
// goroutines into a bridge run in this process (run(): access log, SOAP
// decode and encode), its log written into a pipe a goroutine drains.
//
//	go test ./cmd/soapbridge -run '^$' -bench TouchLogToPipe -benchtime 3s -count 4
func BenchmarkTouchLogToPipe(b *testing.B) {
	for _, c := range []struct {
		name   string
		buffer int
	}{{"buffered", 256 << 10}, {"unbuffered", 0}} {
		b.Run(c.name, func(b *testing.B) {
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			addr := make(chan string, 1)
			drained := make(chan struct{})
			go func() { // finds the listening line, then drains
				defer close(drained)
				sc := bufio.NewScanner(r)
				for sc.Scan() {
					var rec map[string]any
					if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "listening" {
						addr <- rec["addr"].(string)
						break
					}
				}
				io.Copy(io.Discard, r) //nolint:errcheck // until the write end closes
			}()
			env := map[string]string{
				"SOAPBRIDGE_LISTEN": "127.0.0.1:0", "SOAPBRIDGE_SANDBOX_LISTEN": "127.0.0.1:0", "SOAPBRIDGE_ADMIN_LISTEN": "off",
				"SOAPBRIDGE_DATABASE": filepath.Join(b.TempDir(), "bridge.db"), "SOAPBRIDGE_LOG_LEVEL": "info",
				"SOAPBRIDGE_LOG_BUFFER": strconv.Itoa(c.buffer),
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- run(ctx, nil, envOf(env), w) }()
			var url string
			select {
			case a := <-addr:
				url = "http://" + a + "/axis/EPaymentServiceV2"
			case err := <-done:
				b.Fatalf("run: %v", err)
			}
			benchPost(b, url, []byte(touchEnvelope), ">OK<")
			b.StopTimer()
			cancel()
			if err := <-done; err != nil {
				b.Error(err)
			}
			w.Close()
			<-drained
			r.Close()
		})
	}
}
