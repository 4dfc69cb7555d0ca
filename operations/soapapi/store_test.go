package soapapi

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/soapenc"
	"github.com/legacybridge/soapbridge/store"
	"github.com/legacybridge/soapbridge/wsdl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failStore fails every session write once on is set.
type failStore struct {
	operations.Store
	on atomic.Bool
}

func (f *failStore) SaveSession(ctx context.Context, s store.Session) error {
	if f.on.Load() {
		return errors.New("disk full")
	}
	return f.Store.SaveSession(ctx, s)
}

// failingHarness is a harness whose session writes fail once fs.on is set.
func failingHarness(t *testing.T) (*harness, *failStore) {
	fs := &failStore{}
	h := newHarnessWith(t, func(c *operations.Config) { fs.Store = c.Store; c.Store = fs })
	return h, fs
}

// statusOf is the paymentStatus reply of payment id of the test merchant.
func statusOf(t *testing.T, h *harness, id int64) *operations.PaymentStatus {
	t.Helper()
	goid := int64(testGoID)
	sig, err := operations.Sign(captureKey, operations.PaymentSessionFields(operations.FormatInt(goid), operations.FormatInt(id))...)
	require.NoError(t, err)
	st, err := invoke[*operations.PaymentStatus](t, h.svc, "paymentStatus", &operations.SessionInfo{TargetGoID: &goid, PaymentSessionID: &id, EncryptedSignature: sig})
	require.NoError(t, err)
	require.Equal(t, operations.CallCompleted, st.Result, st.ResultDescription)
	return st
}

// A payment created while the session cannot be recorded is answered with
// a Server fault: it stays unpaid and nobody is sent to pay it.
func TestCreatePaymentStoreFailure(t *testing.T) {
	h, fs := failingHarness(t)
	fs.on.Store(true)
	call := decodeFile(t, filepath.Join(goldenDir, "createPayment", "request.xml"))
	_, err := h.api.Invoke(context.Background(), call)
	var f *soapenc.Fault
	require.ErrorAs(t, err, &f)
	assert.Equal(t, "Server", f.Code)
	assert.Equal(t, "session store unavailable", f.String)
	assert.Contains(t, h.rec.String(), "POST /api/payments/payment\n")
}

// A recurring child may already be charged: a failed session write still
// answers success, and its status inherits productName from the parent.
func TestCreateRecurrentPaymentStoreFailure(t *testing.T) {
	h, fs := failingHarness(t)
	recurringPaid(h)
	fs.on.Store(true)
	call := decodeFile(t, filepath.Join(goldenDir, "createRecurrentPayment", "request.xml"))
	resp, err := h.api.Invoke(context.Background(), call)
	require.NoError(t, err)
	assert.Equal(t, operations.CallCompleted, resp.Return.Field("result").Text)
	child, _, _ := resp.Return.Field("paymentSessionId").Int64()

	_, err = h.st.Session(context.Background(), child)
	require.ErrorIs(t, err, store.ErrNotFound)
	st := statusOf(t, h, child)
	assert.Equal(t, "Objednávka č. 42 – žluťoučký kůň", *st.ProductName)
	assert.Equal(t, int64(3000000001), *st.ParentPaymentSessionID)
}

func TestPaymentMethodListCached(t *testing.T) {
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	h := newHarnessWith(t, func(c *operations.Config) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	call := &soapenc.Call{Operation: soapenc.QName{Space: wsdl.NSInput, Local: "paymentMethodList"}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := h.api.Invoke(context.Background(), call)
			assert.NoError(t, err)
			assert.NotEmpty(t, resp.Return.Fields)
		}()
	}
	wg.Wait()
	gets := func() int {
		h.rec.mu.Lock()
		defer h.rec.mu.Unlock()
		n := 0
		for _, c := range h.rec.calls {
			if len(c) > 4 && c[:4] == "GET " {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 1, gets(), "concurrent callers share one load")
	mu.Lock()
	now = now.Add(5*time.Minute + time.Second) // the method list TTL
	mu.Unlock()
	_, err := h.api.Invoke(context.Background(), call)
	require.NoError(t, err)
	assert.Equal(t, 2, gets(), "reloaded after the TTL")
}

// A failed load is not cached.
func TestPaymentMethodListGatewayDown(t *testing.T) {
	h := newHarness(t)
	h.rec.down = true
	call := &soapenc.Call{Operation: soapenc.QName{Space: wsdl.NSInput, Local: "paymentMethodList"}}
	_, err := h.api.Invoke(context.Background(), call)
	var f *soapenc.Fault
	require.ErrorAs(t, err, &f)
	assert.Equal(t, "Server", f.Code)
	h.rec.down = false
	_, err = h.api.Invoke(context.Background(), call)
	require.NoError(t, err)
}
