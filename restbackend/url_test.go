package restbackend

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// One check serves every URL the bridge is given: callbacks a shop hands on
// (IsHTTPURL) and configured URLs (CheckURL), whose messages never quote a
// URL that may carry a password.
func TestURLChecks(t *testing.T) {
	for _, u := range []string{"https://shop.example/return?order=1#top", "http://user:pw@127.0.0.1:8080/x"} {
		assert.True(t, IsHTTPURL(u), u)
	}
	for _, u := range []string{"", "/relative", "shop.example/x", "ftp://shop.example/", "https://", "mailto:a@b.example", "http://[::1"} {
		assert.False(t, IsHTTPURL(u), u)
		assert.EqualError(t, CheckURL(u, true), "not an absolute http(s) URL", u)
	}
	assert.NoError(t, CheckURL("https://gw.example/api/", false))
	assert.NoError(t, CheckURL("https://shop.example/notify.php?shop=1", true))
	assert.EqualError(t, CheckURL("https://shop.example/notify.php?shop=1", false), "must not carry user info, a fragment or a query")
	for _, u := range []string{"https://admin:S3cret@gw.example/api", "https://shop.example/notify#x"} {
		err := CheckURL(u, true)
		assert.EqualError(t, err, "must not carry user info or a fragment", u)
		assert.NotContains(t, err.Error(), "S3cret")
	}
}

// The bridge's rest_timeout default is this package's: one figure.
func TestDefaultTimeout(t *testing.T) {
	assert.Equal(t, DefaultTimeout, New(Config{BaseURL: "http://127.0.0.1:1"}).Timeout())
}

// TestFillPath: parameters filled in order and escaped; the client's
// request paths come from the table this way.
func TestFillPath(t *testing.T) {
	assert.Equal(t, "/payments/payment/3000000001/refund", FillPath(PathRefund, "3000000001"))
	assert.Equal(t, "/eshops/eshop/8123456789/payment-instruments/C%2FZ%20K", FillPath(PathInstruments, "8123456789", "C/Z K"))
	assert.Equal(t, "/eshops/eshop/1/payment-instruments/{currency}", FillPath(PathInstruments, "1"))
	assert.Equal(t, PathStatement, FillPath(PathStatement, "ignored"))
}

// TestPaymentPathIsFillPath: paymentPath fills a payment's path as
// FillPath does, for every payment path and any id.
func TestPaymentPathIsFillPath(t *testing.T) {
	for _, p := range []string{PathPayment, PathRefund, PathRefunds, PathCreateRecurrence, PathVoidRecurrence, PathCapture,
		PathVoidAuthorization, PathCreatePayment, PathCard} {
		for _, id := range []int64{0, 1, -5, 3000000001, math.MaxInt64, math.MinInt64} {
			if got, want := paymentPath(p, id), FillPath(p, strconv.FormatInt(id, 10)); got != want {
				t.Errorf("paymentPath(%q, %d) = %q, FillPath %q", p, id, got, want)
			}
		}
	}
}
