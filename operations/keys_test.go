package operations

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

const newSecureKey = "NewSecureKey-abcdefghijklmn"

// rotated is the test merchant after its key was rotated: the new key in
// force, the old one (testSecureKey) still accepted until until ("" none).
func rotatedService(t *testing.T, gw Gateway, st Store, clk *fakeClock, until string) *Service {
	t.Helper()
	cfg := unitConfig(t)
	cfg.Merchants[0].SecureKey = newSecureKey
	cfg.Merchants[0].PreviousSecureKey = testSecureKey
	cfg.Merchants[0].PreviousUntil = until
	cfg.Gateway, cfg.Store, cfg.Now = gw, st, clk.now
	s, err := New(cfg)
	require.NoError(t, err)
	return s
}

func signedWith(t *testing.T, key string, fields ...string) string {
	t.Helper()
	sig, err := Sign(key, fields...)
	require.NoError(t, err)
	return sig
}

// During a rotation requests signed with either key verify, and each reply
// is signed with the key its request was signed with; once previous_until
// passes the old key is refused.
func TestRotationAcceptsBothKeys(t *testing.T) {
	gw, clk := newFakeGateway(), &fakeClock{t: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	s := rotatedService(t, gw, memStore(t), clk, "2026-11-27T10:00:00Z")
	id := gw.add(restbackend.StatePaid, 100)
	goid := int64(testGoID)
	for _, key := range []string{testSecureKey, newSecureKey} {
		in := &SessionInfo{TargetGoID: &goid, PaymentSessionID: &id,
			EncryptedSignature: signedWith(t, key, PaymentSessionFields(FormatInt(goid), FormatInt(id))...)}
		st, err := serve(bg, s, paymentStatusRow, in)
		require.NoError(t, err)
		require.Equal(t, CallCompleted, st.Result, st.ResultDescription)
		assert.True(t, Verify(key, *st.EncryptedSignature, st.SignatureFields()...), "the reply is signed with the request's key")
	}
	clk.add(25 * time.Hour)
	in := &SessionInfo{TargetGoID: &goid, PaymentSessionID: &id,
		EncryptedSignature: signedWith(t, testSecureKey, PaymentSessionFields(FormatInt(goid), FormatInt(id))...)}
	st, err := serve(bg, s, paymentStatusRow, in)
	require.NoError(t, err)
	assert.Equal(t, callFailed, st.Result, "past previous_until the old key is refused")
	assert.True(t, Verify(newSecureKey, *st.EncryptedSignature, st.SignatureFields()...), "and the refusal signed with the current key")
}

// A refund made before a reload brought the new key in, repeated after it
// with either key, is the same call: answered from the ledger, never a
// second refund.
func TestRotationKeepsTheLedgerKey(t *testing.T) {
	gw, st, clk := newFakeGateway(), memStore(t), &fakeClock{t: time.Now()}
	cfg := unitConfig(t)
	cfg.Gateway, cfg.Store, cfg.Now = gw, st, clk.now
	before, err := New(cfg)
	require.NoError(t, err)
	id := gw.add(restbackend.StatePaid, 12900)
	goid, amount := int64(testGoID), int64(3000)
	req := func(key string) *RefundRequest {
		return &RefundRequest{TargetGoID: &goid, PaymentSessionID: &id, Amount: &amount, Currency: "CZK", Description: "část",
			EncryptedSignature: signedWith(t, key, RefundRequestFields(FormatInt(goid), FormatInt(id), "3000", "CZK", "část")...)}
	}
	r, err := serve(bg, before, partiallyRefundPaymentRow, req(testSecureKey))
	require.NoError(t, err)
	require.Equal(t, Finished, r.Result)

	after := rotatedService(t, gw, st, clk, "")
	for _, key := range []string{testSecureKey, newSecureKey} {
		r, err := serve(bg, after, partiallyRefundPaymentRow, req(key))
		require.NoError(t, err)
		assert.Equal(t, Finished, r.Result)
		assert.True(t, Verify(key, *r.EncryptedSignature, PaymentResultFields(FormatInt(id), r.Result)...))
	}
	assert.Len(t, gw.refunds[id], 1, "one refund across the reload, whichever key the repeats carry")
}

// Notifications are signed when they are sent, with the key the shop last
// signed a call with; a queued one follows the shop's move to the new key.
func TestRotationSignsNotificationsWhenSent(t *testing.T) {
	var mu sync.Mutex
	var got []url.Values
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Query())
		mu.Unlock()
	}))
	defer shop.Close()
	gw, st, clk := newFakeGateway(), memStore(t), &fakeClock{t: time.Now()}
	cfg := unitConfig(t)
	cfg.Merchants[0].SecureKey, cfg.Merchants[0].PreviousSecureKey = newSecureKey, testSecureKey
	cfg.Merchants[0].NotificationURL = shop.URL + "/notify?shop=1"
	cfg.Gateway, cfg.Store, cfg.Now = gw, st, clk.now
	s, err := New(cfg)
	require.NoError(t, err)
	m, _ := s.merchant(testGoID)
	id := gw.add(restbackend.StatePaid, 100)
	require.NoError(t, st.SaveSession(bg, store.Session{PaymentID: id, GoID: testGoID, OrderNumber: "OBJ-7"}))

	identity := func(key string, q url.Values) bool {
		return q.Get("shop") == "1" && Verify(key, q.Get("encryptedSignature"),
			PaymentIdentityFields(q.Get("targetGoId"), q.Get("paymentSessionId"), q.Get("parentPaymentSessionId"), q.Get("orderNumber"))...)
	}
	deliver := func() url.Values {
		t.Helper()
		n, err := s.out.RunOnce(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		mu.Lock()
		defer mu.Unlock()
		return got[len(got)-1]
	}

	// The shop still signs with the old key: its notification too.
	_, err = serve(bg, s, paymentStatusRow, &SessionInfo{TargetGoID: ptr(int64(testGoID)), PaymentSessionID: &id,
		EncryptedSignature: signedWith(t, testSecureKey, PaymentSessionFields(FormatInt(testGoID), FormatInt(id))...)})
	require.NoError(t, err)
	require.NoError(t, s.AcceptNotification(bg, CallbackRequest{GoID: FormatInt(m.GoID), PaymentID: FormatInt(id)}))
	assert.True(t, identity(testSecureKey, deliver()), "signed with the key the shop uses")

	// Queued now, the shop moves to the new key before it is sent.
	gw.payments[id].State = restbackend.StateRefunded
	require.NoError(t, s.AcceptNotification(bg, CallbackRequest{GoID: FormatInt(m.GoID), PaymentID: FormatInt(id)}))
	_, err = serve(bg, s, paymentStatusRow, &SessionInfo{TargetGoID: ptr(int64(testGoID)), PaymentSessionID: &id,
		EncryptedSignature: signedWith(t, newSecureKey, PaymentSessionFields(FormatInt(testGoID), FormatInt(id))...)})
	require.NoError(t, err)
	q := deliver()
	assert.True(t, identity(newSecureKey, q), "signed when sent, with the key the shop moved to")
	assert.Equal(t, "OBJ-7", q.Get("orderNumber"))
}

func TestRotationSettingsRefused(t *testing.T) {
	m := testMerchant()
	m.PreviousSecureKey = m.SecureKey
	m.PreviousUntil = "tomorrow"
	m.Normalize()
	var keys []string
	for _, p := range m.Problems() {
		keys = append(keys, p.Key)
		assert.NotContains(t, p.Msg, testSecureKey)
	}
	assert.Equal(t, []string{"previous_secure_key", "previous_until"}, keys)
}

// flakyShopKeys is a store whose first writes of a shop's key fail.
type flakyShopKeys struct {
	store.Store
	mu    sync.Mutex
	fails int
}

func (f *flakyShopKeys) SetShopKey(ctx context.Context, goid int64, id string, at time.Time) error {
	f.mu.Lock()
	fail := f.fails > 0
	f.fails--
	f.mu.Unlock()
	if fail {
		return errors.New("database is locked")
	}
	return f.Store.SetShopKey(ctx, goid, id, at)
}

// A shop key that could not be written is written by the next call of the
// shop: the replica does not take it for known until it is stored, else
// the other replicas would sign the shop's notifications with its old key
// until the rotation ends.
func TestRotationShopKeyWriteRetried(t *testing.T) {
	st := &flakyShopKeys{Store: memStore(t), fails: 1}
	clk := &fakeClock{t: time.Now()}
	s := rotatedService(t, newFakeGateway(), st, clk, "")
	m, _ := s.merchant(testGoID)
	shopKey := func() string {
		t.Helper()
		id, _, err := st.ShopKey(bg, testGoID)
		if errors.Is(err, store.ErrNotFound) {
			return ""
		}
		require.NoError(t, err)
		return id
	}

	s.keySeen(bg, m, newSecureKey)
	assert.Empty(t, shopKey(), "the write failed")
	s.keySeen(bg, m, newSecureKey)
	assert.Equal(t, keyID(newSecureKey), shopKey(), "the next call wrote it")
}

// A reload that changes a key must keep the key in force as the previous
// one, until a time still to come: else shops signing with it would be
// refused from the reload on.
func TestRotationReloadRefusals(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	cfg := unitConfig(t)
	cfg.Now = clk.now
	s, err := New(cfg)
	require.NoError(t, err)
	keyOf := func(ps []Problem) []string {
		var keys []string
		for _, p := range ps {
			keys = append(keys, p.Key)
			assert.NotContains(t, p.Msg, testSecureKey)
			assert.NotContains(t, p.Msg, newSecureKey)
		}
		return keys
	}

	m := testMerchant()
	m.SecureKey = newSecureKey
	assert.Equal(t, []string{"merchants[0].previous_secure_key"}, keyOf(s.SetMerchants([]Merchant{m}, 0)), "the old key dropped")
	m.PreviousSecureKey, m.PreviousUntil = testSecureKey, "2026-11-26T11:59:59Z"
	assert.Equal(t, []string{"merchants[0].previous_until"}, keyOf(s.SetMerchants([]Merchant{m}, 0)), "kept until a time past")
	m.PreviousUntil = "2026-11-27T12:00:00Z"
	assert.Empty(t, s.SetMerchants([]Merchant{m}, 0))
	in, _ := s.merchant(testGoID)
	assert.Equal(t, []string{newSecureKey, testSecureKey}, in.keys(clk.now()), "both accepted until tomorrow")
}
