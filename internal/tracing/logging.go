package tracing

import (
	"sync"
	"time"

	"github.com/go-logr/zapr"
	"go.opentelemetry.io/otel"
	"go.uber.org/zap"
)

// errorEvery bounds the OpenTelemetry errors logged: an unreachable
// collector fails every export (one batch every few seconds), and one line
// a minute says as much as all of them.
const errorEvery = time.Minute

// LogTo sends what OpenTelemetry reports (export failures through its
// error handler, its internal errors through its logr logger) to log as
// JSON lines like every other, instead of the plain text OpenTelemetry
// writes to stderr by default. Errors are logged at warn level, at most one
// a minute with the count of those not logged.
func LogTo(log *zap.Logger) {
	h := &errorLog{log: log}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(h.handle))
	otel.SetLogger(zapr.NewLogger(log))
}

type errorLog struct {
	log        *zap.Logger
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (h *errorLog) handle(err error) {
	h.mu.Lock()
	now := time.Now()
	if !h.last.IsZero() && now.Sub(h.last) < errorEvery {
		h.suppressed++
		h.mu.Unlock()
		return
	}
	n := h.suppressed
	h.last, h.suppressed = now, 0
	h.mu.Unlock()
	h.log.Warn("OpenTelemetry error (spans may be lost)", zap.Error(err), zap.Int("errors_not_logged_since_last", n))
}
