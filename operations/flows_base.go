package operations

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/soapenc"
)

// payBaseFields are the EPaymentCommand members the legacy base-integration
// form carries as paymentCommand.<name>.
var payBaseFields = []string{
	"targetGoId", "productName", "totalPrice", "currency", "orderNumber",
	"successURL", "failedURL", "paymentChannels", "defaultPaymentChannel",
	"encryptedSignature", "preAuthorization", "recurrentPayment",
	"recurrenceDateTo", "recurrenceCycle", "recurrencePeriod",
	"p1", "p2", "p3", "p4", "lang",
}

// payBaseCustomer are the customerData members (paymentCommand.customerData.<name>).
var payBaseCustomer = []string{
	"firstName", "lastName", "city", "street", "postalCode", "countryCode", "email", "phoneNumber",
}

// payBaseCall turns the form into the createPayment call a SOAP client
// would have made, so the form is read, checked and mapped by exactly the
// code that serves createPayment. Fields not in the form are absent.
func payBaseCall(r *http.Request) *soapenc.Call {
	cmd := soapenc.NewStruct("paymentCommand", soapenc.QName{Space: NSProvider, Local: "EPaymentCommand"})
	for _, name := range payBaseFields {
		if vs, ok := r.Form["paymentCommand."+name]; ok {
			cmd.Fields = append(cmd.Fields, &soapenc.Value{Name: name, Kind: soapenc.KindString, Text: vs[0]})
		}
	}
	cust := soapenc.NewStruct("customerData", soapenc.QName{Space: NSProvider, Local: "ECustomerData"})
	for _, name := range payBaseCustomer {
		if vs, ok := r.Form["paymentCommand.customerData."+name]; ok {
			cust.Fields = append(cust.Fields, &soapenc.Value{Name: name, Kind: soapenc.KindString, Text: vs[0]})
		}
	}
	if len(cust.Fields) > 0 {
		cmd.Fields = append(cmd.Fields, cust)
	}
	return &soapenc.Call{Operation: soapenc.QName{Space: NSInput, Local: "createPayment"}, Params: []*soapenc.Value{cmd}}
}

// payBase serves the base integration: the e-shop's page posts (or links)
// the paymentCommand.* fields; the payment is created as createPayment
// would create it and the customer is sent to its gateway page.
func (f *Flows) payBase(c echo.Context) error {
	if _, err := flowForm(c); err != nil {
		return f.page(c, err)
	}
	call := payBaseCall(c.Request())
	get := c.Request().Form.Get
	m, err := f.merchantOf("paymentCommand.targetGoId", get("paymentCommand.targetGoId"))
	if err != nil {
		return f.page(c, err)
	}
	// Checked here too (createPayment checks it again) so that a forged
	// form is told apart from a malformed one.
	cmd, r := readPaymentCommand(call)
	if r != nil {
		return f.page(c, &pageError{http.StatusBadRequest, "Chybný požadavek: " + r.desc + ".", "Bad request: " + r.desc + "."})
	}
	if !Verify(m.SecureKey, cmd.Signature, cmd.signatureFields()...) {
		return f.page(c, pageBadSignature())
	}
	// Detached from the browser's connection like a SOAP call: a customer
	// who leaves mid-call must not cut the create POST short (its outcome
	// would be unknown) nor the session write after it. The REST client's
	// timeout bounds each gateway call.
	ctx := context.WithoutCancel(c.Request().Context())
	resp, err := f.svc.Invoke(ctx, call)
	if err != nil {
		// A fault: the gateway or the session store failed.
		f.logFor(ctx).Warn("pay-base-v2: createPayment failed", zap.Int64("goid", m.GoID), zap.Error(err))
		return f.page(c, pageUnavailable())
	}
	ret := resp.Return
	result, _ := ret.Field("result").String()
	id, ok, _ := ret.Field("paymentSessionId").Int64()
	if result != CallCompleted || !ok {
		desc, _ := ret.Field("resultDescription").String()
		desc = strings.TrimSpace(desc)
		if desc == "" {
			desc = "payment not created"
		}
		return f.page(c, &pageError{http.StatusBadRequest, "Platbu nelze založit: " + desc + ".", "The payment cannot be created: " + desc + "."})
	}
	// The create reply of the legacy status has no gateway URL; the
	// payment's status has.
	p, err := f.status(ctx, m, id)
	if err != nil {
		return f.page(c, err)
	}
	return f.toGateway(c, p)
}
