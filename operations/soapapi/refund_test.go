package soapapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// extraRefunds adds entries to the gateway's refund history replies, for
// histories the sandbox does not produce (failed refunds, a history that
// already covers the amount while the state still says partial).
type extraRefunds struct {
	next  http.RoundTripper
	extra []restbackend.Refund
}

var refundsPath = regexp.MustCompile(`^/api/payments/payment/\d+/refunds$`)

func (x extraRefunds) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := x.next.RoundTrip(req)
	if err != nil || !refundsPath.MatchString(req.URL.Path) || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var l []restbackend.Refund
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, err
	}
	body, _ = json.Marshal(append(l, x.extra...))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// The whole refund after a partial one (50.00 of 129.00) refunds what the
// history says is left: failed refunds returned nothing, and when nothing
// is left it answers FAILED without a refund call.
func TestRefundWholeAfterPartialHistory(t *testing.T) {
	cases := []struct {
		name     string
		extra    []restbackend.Refund
		result   string
		refunded string // the amount of the refund call, "" for none
		desc     string
	}{
		{name: "failed refund not counted", extra: []restbackend.Refund{{ID: 9, Amount: 7900, State: restbackend.ResultFailed}},
			result: operations.Finished, refunded: "amount=7900"},
		{name: "nothing left", extra: []restbackend.Refund{{ID: 9, Amount: 7900, State: restbackend.ResultFinished}},
			result: operations.Failed, desc: "payment 3000000001 has nothing left to refund: 12900 of 12900 CZK already refunded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			refundedPartly(h)
			h.rec.next = extraRefunds{next: h.rec.next, extra: tc.extra}
			h.rec.reset()
			call := decodeFile(t, filepath.Join(goldenDir, "refundPayment", "request.xml"))
			resp, err := h.api.Invoke(context.Background(), call)
			require.NoError(t, err)
			assert.Equal(t, tc.result, resp.Return.Field("result").Text)
			calls := h.rec.String()
			if tc.refunded == "" {
				assert.NotContains(t, calls, "/refund\n", "no refund call")
				assert.Equal(t, tc.desc, resp.Return.Field("resultDescription").Text)
			} else {
				assert.Contains(t, calls, "/refund\n")
				assert.Contains(t, calls, tc.refunded)
			}
		})
	}
}
