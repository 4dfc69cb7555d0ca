package restbackend

import (
	"net/url"
	"strconv"
	"strings"
)

// Paths of the REST interface below its root (".../api"), each once: the
// client builds its requests from them, the sandbox gateway routes them and
// the usage report's mapping names them. A {name} is a path parameter
// (FillPath).
const (
	PathToken             = "/oauth2/token"
	PathCreatePayment     = "/payments/payment"
	PathPayment           = PathCreatePayment + "/{id}"
	PathRefund            = PathPayment + "/refund"
	PathRefunds           = PathPayment + "/refunds"
	PathCreateRecurrence  = PathPayment + "/create-recurrence"
	PathVoidRecurrence    = PathPayment + "/void-recurrence"
	PathCapture           = PathPayment + "/capture"
	PathVoidAuthorization = PathPayment + "/void-authorization"
	PathAllInstruments    = "/eshops/eshop/{goid}/payment-instruments"
	PathInstruments       = PathAllInstruments + "/{currency}"
	PathCard              = "/payments/cards/{card}"
	PathStatement         = "/accounts/account-statement"
)

// FillPath returns path with its parameters replaced, in order, by values,
// each path-escaped. Parameters beyond values stay as they are.
func FillPath(path string, values ...string) string {
	var b strings.Builder
	b.Grow(len(path) + 16)
	for _, v := range values {
		i := strings.IndexByte(path, '{')
		j := strings.IndexByte(path, '}')
		if i < 0 || j < i {
			break
		}
		b.WriteString(path[:i])
		b.WriteString(url.PathEscape(v))
		path = path[j+1:]
	}
	b.WriteString(path)
	return b.String()
}

// paymentPath is path (one of the Path* of a payment) for payment id:
// FillPath(path, strconv.FormatInt(id, 10)) in one allocation (digits and
// a minus sign need no escaping).
func paymentPath(path string, id int64) string {
	i := strings.IndexByte(path, '{')
	j := strings.IndexByte(path, '}')
	if i < 0 || j < i {
		return path
	}
	var buf [96]byte
	b := append(buf[:0], path[:i]...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, path[j+1:]...)
	return string(b)
}
