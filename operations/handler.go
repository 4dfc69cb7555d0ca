package operations

import (
	"context"
	"errors"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/soapenc"
)

// SOAPHandler serves POST requests of the SOAP endpoint: it decodes the
// envelope, dispatches by the RPC element's local name (every operation has
// an empty SOAPAction) and writes the reply or a fault.
func (s *Service) SOAPHandler() echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		// Log lines of this call carry the request id of the access log.
		ctx := withLogger(req.Context(), s.log.With(zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID))))
		call, err := soapenc.ReadRequest(req, s.limits)
		if err != nil {
			var f *soapenc.Fault
			if !errors.As(err, &f) {
				f = clientFault("unreadable request")
			}
			s.logFor(ctx).Info("bad SOAP request", zap.String("fault", f.String))
			soapenc.WriteFault(c.Response(), f)
			return nil
		}
		// A client that hangs up must not cut a gateway call short: a
		// POST aborted midway has an unknown outcome, and the session write
		// after it must still happen. The REST client's timeout bounds it.
		resp, err := s.Invoke(context.WithoutCancel(ctx), call)
		if err != nil {
			var f *soapenc.Fault
			if !errors.As(err, &f) {
				f = serverFault("internal error")
			}
			soapenc.WriteFault(c.Response(), f)
			return nil
		}
		soapenc.WriteResponse(c.Response(), resp)
		return nil
	}
}

type loggerKey struct{}

// withLogger makes l the logger of the operation run under ctx.
func withLogger(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// logFor is the logger of the request behind ctx (with its request id), or
// the service's own.
func (s *Service) logFor(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*zap.Logger); ok {
		return l
	}
	return s.log
}
