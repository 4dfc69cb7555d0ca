package operations

import (
	"net/url"
	"strconv"
	"strings"
)

// PaymentCommandFromForm reads the legacy base-integration form
// (pay-base-v2): the EPaymentCommand members as paymentCommand.<name> and
// its customer as paymentCommand.customerData.<name>, each value exactly as
// sent. Numbers and booleans are read as SOAP reads them; the first
// malformed one is the command's Invalid.
func PaymentCommandFromForm(form url.Values) *PaymentCommand {
	c := &PaymentCommand{}
	str := func(name string) string { return form.Get("paymentCommand." + name) }
	long := func(name string) *int64 {
		t := strings.TrimSpace(str(name))
		if t == "" {
			return nil
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(t, "+"), 10, 64)
		if err != nil {
			c.invalid("paymentCommand." + name + " is not a number")
			return nil
		}
		return &n
	}
	boolean := func(name string) *bool {
		var b bool
		switch strings.ToLower(strings.TrimSpace(str(name))) {
		case "":
			return nil
		case "true", "1":
			b = true
		case "false", "0":
		default:
			c.invalid("paymentCommand." + name + " is not a boolean")
			return nil
		}
		return &b
	}
	c.TargetGoID = long("targetGoId")
	c.Currency = str("currency")
	c.DefaultPaymentChannel = str("defaultPaymentChannel")
	c.EncryptedSignature = str("encryptedSignature")
	c.FailedURL = str("failedURL")
	c.Lang = str("lang")
	c.OrderNumber = str("orderNumber")
	c.PaymentChannels = str("paymentChannels")
	c.PreAuthorization = boolean("preAuthorization")
	c.ProductName = str("productName")
	c.RecurrenceCycle = str("recurrenceCycle")
	c.RecurrenceDateTo = str("recurrenceDateTo")
	c.RecurrencePeriod = long("recurrencePeriod")
	c.RecurrentPayment = boolean("recurrentPayment")
	c.SuccessURL = str("successURL")
	c.TotalPrice = long("totalPrice")
	c.P1, c.P2, c.P3, c.P4 = str("p1"), str("p2"), str("p3"), str("p4")

	cd := CustomerData{}
	present := false
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"firstName", &cd.FirstName}, {"lastName", &cd.LastName}, {"city", &cd.City}, {"street", &cd.Street},
		{"postalCode", &cd.PostalCode}, {"countryCode", &cd.CountryCode}, {"email", &cd.Email}, {"phoneNumber", &cd.PhoneNumber},
	} {
		if vs, ok := form["paymentCommand.customerData."+f.name]; ok {
			*f.dst, present = vs[0], true
		}
	}
	if present {
		c.CustomerData = &cd
	}
	return c
}

func (c *PaymentCommand) invalid(msg string) {
	if c.Invalid == "" {
		c.Invalid = msg
	}
}
