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
		call, err := soapenc.ReadRequest(req, s.limits)
		if err != nil {
			var f *soapenc.Fault
			if !errors.As(err, &f) {
				f = clientFault("unreadable request")
			}
			s.log.Info("bad SOAP request", zap.String("fault", f.String))
			soapenc.WriteFault(c.Response(), f)
			return nil
		}
		// A client that hangs up must not cut a gateway call short: a
		// POST aborted midway has an unknown outcome, and the session write
		// after it must still happen. The REST client's timeout bounds it.
		resp, err := s.Invoke(context.WithoutCancel(req.Context()), call)
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
