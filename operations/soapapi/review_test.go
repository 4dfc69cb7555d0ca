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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noParentID stands for the real gateway, whose status reply of a recurring
// child need not carry parent_id (the specification lists it for the
// create-recurrence reply only): it drops parent_id from GET status replies.
type noParentID struct{ next http.RoundTripper }

var statusPath = regexp.MustCompile(`^/api/payments/payment/\d+$`)

func (n noParentID) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := n.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !statusPath.MatchString(req.URL.Path) || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if json.Unmarshal(body, &m) == nil {
		delete(m, "parent_id")
		body, _ = json.Marshal(m)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// paymentStatus of an on-demand child reports its parent from the bridge's
// session when the gateway's status reply has no parent_id, as the return
// redirect and the notification of the same child already do.
func TestReviewChildStatusParentFromSession(t *testing.T) {
	h := newHarness(t)
	recurringPaid(h)
	resp, err := h.api.Invoke(context.Background(), decodeFile(t, filepath.Join(goldenDir, "createRecurrentPayment", "request.xml")))
	require.NoError(t, err)
	require.Equal(t, operations.CallCompleted, resp.Return.Field("result").Text)
	child, _, _ := resp.Return.Field("paymentSessionId").Int64()

	h.rec.next = noParentID{h.rec.next}
	st := statusOf(t, h, child)
	require.NotNil(t, st.ParentPaymentSessionID, "parentPaymentSessionId of a recurring child")
	assert.Equal(t, int64(3000000001), *st.ParentPaymentSessionID)
	assert.Equal(t, "Objednávka č. 42 – žluťoučký kůň", *st.ProductName)
	assert.True(t, operations.Verify(captureKey, *st.EncryptedSignature, st.SignatureFields()...))
}
