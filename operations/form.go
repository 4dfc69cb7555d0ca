package operations

import (
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/legacybridge/soapbridge/wsdl"
)

// notInForm are the EPaymentCommand members the base-integration form
// does not carry (legacy-protocol.md, "Base integration"): never read from
// it.
var notInForm = map[string]bool{"partnerGoId": true}

// PaymentCommandFromForm reads the legacy base-integration form
// (pay-base-v2): the EPaymentCommand members as paymentCommand.<name> and
// its customer as paymentCommand.customerData.<name>, each value exactly as
// sent, the members as the WSDL table lists them. Numbers and booleans are
// read as SOAP reads them; the first malformed one is the command's
// Invalid.
func PaymentCommandFromForm(form url.Values) *PaymentCommand {
	c := &PaymentCommand{}
	tt, _ := wsdl.Find("EPaymentCommand")
	readForm(form, "paymentCommand", tt, reflect.ValueOf(c).Elem(), c.invalid)
	return c
}

// readForm sets the members of v, a struct bound to table type tt, from
// the form fields prefix.<member>; it reports whether any was sent.
func readForm(form url.Values, prefix string, tt wsdl.Type, v reflect.Value, invalid func(string)) bool {
	fields := LegacyFields(v.Type())
	present := false
	for _, f := range tt.Fields {
		if notInForm[f.Name] {
			continue
		}
		key := prefix + "." + f.Name
		dst := v.FieldByIndex(fields[f.Name])
		vs, sent := form[key]
		text := ""
		if sent {
			present, text = true, vs[0]
		}
		_, local, _ := strings.Cut(f.Type, ":")
		switch local {
		case "string":
			dst.SetString(text)
		case "long", "int":
			t := strings.TrimSpace(text)
			if t == "" {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimPrefix(t, "+"), 10, 64)
			if err != nil {
				invalid(key + " is not a number")
				continue
			}
			dst.Set(reflect.ValueOf(&n))
		case "boolean":
			var b bool
			switch strings.ToLower(strings.TrimSpace(text)) {
			case "":
				continue
			case "true", "1":
				b = true
			case "false", "0":
			default:
				invalid(key + " is not a boolean")
				continue
			}
			dst.Set(reflect.ValueOf(&b))
		default: // a structure: customerData
			nt, _ := wsdl.Find(local)
			nested := reflect.New(dst.Type().Elem())
			if readForm(form, key, nt, nested.Elem(), invalid) {
				dst.Set(nested)
				present = true
			}
		}
	}
	return present
}

func (c *PaymentCommand) invalid(msg string) {
	if c.Invalid == "" {
		c.Invalid = msg
	}
}
