package main

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap/zapcore"
)

// defaultLogBuffer is 0: every line is written (write(2)) as it is logged,
// so a SIGKILL or an OOM kill loses none the kernel had received. The
// measured price (BenchmarkLogWrite, docs/performance.md) is small beside
// a call's own cost; an operator who wants the buffer back sets log_buffer,
// and warn and error lines are flushed at once even then.
const defaultLogBuffer = 0

// logFlushInterval bounds how long a line waits in the buffer.
const logFlushInterval = time.Second

// logSink is where the logger writes: w behind a buffer of size bytes,
// flushed when full, every logFlushInterval and by closeSink; with size 0,
// w itself, each line written at once. Both are safe for concurrent use.
// closeSink flushes what is left and stops the timer; call it last.
//
// Syncing the sink writes what is buffered and no more: the kernel has a
// line once write(2) returns, which is what survives a kill of the
// process; an fsync would cost a disk flush per warning on a file and
// fails on a pipe (EINVAL), the usual stdout of a container.
func logSink(w io.Writer, size int) (ws zapcore.WriteSyncer, closeSink func()) {
	plain := zapcore.AddSync(writeOnly{w})
	if size <= 0 {
		return zapcore.Lock(plain), func() {}
	}
	b := &zapcore.BufferedWriteSyncer{WS: plain, Size: size, FlushInterval: logFlushInterval}
	return b, func() { _ = b.Stop() }
}

// writeOnly hides the Sync (fsync) of an *os.File from zapcore.AddSync.
type writeOnly struct{ w io.Writer }

func (o writeOnly) Write(p []byte) (int, error) { return o.w.Write(p) }

// flushCore flushes its sink after every line at or above level: with a
// buffered sink, the lines an investigator needs most (a refused call, a
// failed refund, a dead notification) are never the ones a crash loses.
type flushCore struct {
	zapcore.Core
	ws    zapcore.WriteSyncer
	level zapcore.Level
}

func (c flushCore) With(fs []zapcore.Field) zapcore.Core {
	return flushCore{Core: c.Core.With(fs), ws: c.ws, level: c.level}
}

// Check registers c itself, not the core it wraps, so that Write below
// runs for the line.
func (c flushCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c flushCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	err := c.Core.Write(e, fs)
	if e.Level >= c.level {
		err = errors.Join(err, c.ws.Sync())
	}
	return err
}

// isoTime writes a line's time exactly as zapcore.ISO8601TimeEncoder
// does (layout "2006-01-02T15:04:05.000Z0700"), without formatting the
// whole layout for every line (some 2,400 instructions of an access
// line's 10,000): the date, the time to the second and the zone are
// formatted once per second and location (a zone's offset changes only at
// a whole second), the milliseconds per line. TestISOTimeIsZapISO8601
// holds the two to the same text.
func isoTime(t time.Time, enc zapcore.PrimitiveArrayEncoder) {
	sec, loc := t.Unix(), t.Location()
	s := isoLast.Load()
	if s == nil || s.unix != sec || s.loc != loc {
		s = &isoSecond{unix: sec, loc: loc}
		whole := t.Truncate(time.Second)
		s.date = whole.AppendFormat(nil, "2006-01-02T15:04:05")
		s.zone = whole.AppendFormat(nil, "Z0700")
		isoLast.Store(s)
	}
	bp := isoBufs.Get().(*[]byte)
	ms := t.Nanosecond() / 1e6
	b := append(append((*bp)[:0], s.date...), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	b = append(b, s.zone...)
	enc.AppendByteString(b) // encoders copy it: the buffer goes back to the pool
	*bp = b
	isoBufs.Put(bp)
}

// isoSecond is the text of one second of one location.
type isoSecond struct {
	unix       int64
	loc        *time.Location
	date, zone []byte
}

var (
	isoLast atomic.Pointer[isoSecond]
	isoBufs = sync.Pool{New: func() any { b := make([]byte, 0, 40); return &b }}
)
