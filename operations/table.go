package operations

import "context"

// table is every legacy operation, one row each (refundPayment has two
// forms); the WSDL table (package wsdl) describes the same operations on the
// wire, and the SOAP adapter binds the two by name and input type.
var table = []Operation{
	createPaymentRow,
	paymentStatusRow,
	paymentStatusWCustRow,
	capturePaymentRow,
	voidAuthorizationRow,
	voidRecurrentPaymentRow,
	createRecurrentPaymentRow,
	refundPaymentRow,
	refundPaymentRequestRow,
	partiallyRefundPaymentRow,
	createBuyerRow,
	paymentMethodListRow,
	touchRow,
}

// paymentMethodListRow: the methods of the default merchant (the operation
// names none). A refusal of the gateway cannot be told in a bare array:
// every failure is a Server fault.
var paymentMethodListRow = &row[noInput, []PaymentMethod]{
	name: "paymentMethodList",
	reply: func(ctx context.Context, c *call, _ *noInput) ([]PaymentMethod, error) {
		return c.s.methodList(ctx)
	},
	fail: func(*call, *noInput, *refusal) []PaymentMethod { return nil },
}

// touchReply is what touch answers.
const touchReply = "OK"

// touchRow: a liveness string; the gateway is not asked.
var touchRow = &row[noInput, string]{
	name:  "touch",
	reply: func(context.Context, *call, *noInput) (string, error) { return touchReply, nil },
	fail:  func(*call, *noInput, *refusal) string { return "" },
}
