package main

import (
	"io"
	"time"

	"go.uber.org/zap/zapcore"
)

// defaultLogBuffer is how many bytes of log lines the bridge gathers before
// writing them. Unbuffered, every access-log line was a write(2) under
// zap's lock: the most contended mutex under load, about one request
// queued on it at any moment (issue 14).
const defaultLogBuffer = 256 << 10

// logFlushInterval bounds how long a line waits in the buffer.
const logFlushInterval = time.Second

// logSink is where the logger writes: w behind a buffer of size bytes,
// flushed when full, every logFlushInterval and by closeSink; with size 0,
// w itself, each line written at once. Both are safe for concurrent use.
// closeSink flushes what is left and stops the timer; call it last.
func logSink(w io.Writer, size int) (ws zapcore.WriteSyncer, closeSink func()) {
	if size <= 0 {
		return zapcore.Lock(zapcore.AddSync(w)), func() {}
	}
	b := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(w), Size: size, FlushInterval: logFlushInterval}
	return b, func() { _ = b.Stop() }
}
