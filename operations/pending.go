package operations

import (
	"context"

	"github.com/legacybridge/soapbridge/soapenc"
)

// TEMPORARY: operations not written yet answer a Server fault.

func (s *Service) createPayment(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error) {
	return nil, serverFault("createPayment not implemented yet")
}

func (s *Service) createRecurrentPayment(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error) {
	return nil, serverFault("createRecurrentPayment not implemented yet")
}

func (s *Service) paymentMethodList(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error) {
	return nil, serverFault("paymentMethodList not implemented yet")
}

func (s *Service) createBuyer(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error) {
	return nil, serverFault("createBuyer not implemented yet")
}
