package operations

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
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

// The returns and notifications of a payment are signed with the key the
// shop created it with, whatever later requests were signed with (a
// stranger's replay of an old signature re-pins nothing); notifications
// are signed when sent: once that key's overlap ends, with the current one.
func TestRotationSignsWithThePaymentsKey(t *testing.T) {
	var mu sync.Mutex
	var got []url.Values
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Query())
		mu.Unlock()
	}))
	defer shop.Close()
	gw, st, clk := newFakeGateway(), memStore(t), &fakeClock{t: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	cfg := unitConfig(t)
	cfg.Merchants[0].SecureKey, cfg.Merchants[0].PreviousSecureKey = newSecureKey, testSecureKey
	cfg.Merchants[0].PreviousUntil = "2026-11-27T10:00:00Z"
	cfg.Merchants[0].NotificationURL = shop.URL + "/notify?shop=1"
	cfg.Gateway, cfg.Store, cfg.Now = gw, st, clk.now
	s, err := New(cfg)
	require.NoError(t, err)
	m, _ := s.merchant(bg, testGoID)

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
	create := func(key, order string) int64 {
		t.Helper()
		goid, price := int64(testGoID), int64(12900)
		c := &PaymentCommand{TargetGoID: &goid, ProductName: "Kniha", TotalPrice: &price, Currency: "CZK", OrderNumber: order,
			SuccessURL: "https://shop.example/ok", FailedURL: "https://shop.example/ko"}
		c.EncryptedSignature = signedWith(t, key, c.SignatureFields()...)
		st, err := serve(bg, s, createPaymentRow, c)
		require.NoError(t, err)
		require.Equal(t, CallCompleted, st.Result, st.ResultDescription)
		assert.True(t, Verify(key, *st.EncryptedSignature, st.SignatureFields()...), "the reply is signed with the request's key")
		return *st.PaymentSessionID
	}
	statusWith := func(key string, id int64) {
		t.Helper()
		st, err := serve(bg, s, paymentStatusRow, &SessionInfo{TargetGoID: ptr(int64(testGoID)), PaymentSessionID: &id,
			EncryptedSignature: signedWith(t, key, PaymentSessionFields(FormatInt(testGoID), FormatInt(id))...)})
		require.NoError(t, err)
		require.Equal(t, CallCompleted, st.Result)
	}
	returnTo := func(id int64) url.Values {
		t.Helper()
		loc, err := s.ReturnURL(bg, CallbackRequest{GoID: FormatInt(m.GoID), PaymentID: FormatInt(id), Token: gw.returnToken(t, id)})
		require.NoError(t, err)
		u, err := url.Parse(loc)
		require.NoError(t, err)
		q := u.Query()
		q.Set("shop", "1")
		return q
	}

	assert.True(t, s.KeyOverlaps()[0].PreviousKeyUsed.IsZero())
	older := create(testSecureKey, "OBJ-OLD")
	assert.True(t, clk.now().Equal(s.KeyOverlaps()[0].PreviousKeyUsed), "the operator sees the shop still uses the old key")
	clk.add(time.Minute)
	newer := create(newSecureKey, "OBJ-NEW")
	assert.True(t, clk.now().Add(-time.Minute).Equal(s.KeyOverlaps()[0].PreviousKeyUsed), "the new key is not the previous one")
	require.Empty(t, setMerchants(s, []Merchant{cfg.Merchants[0]}, 0))
	assert.True(t, clk.now().Add(-time.Minute).Equal(s.KeyOverlaps()[0].PreviousKeyUsed), "carried over a reload")
	// Whoever replays the old key's signatures (a status call, an old
	// pay-full-v2 link) afterwards:
	statusWith(testSecureKey, older)
	_, err = s.PayFull(bg, PayFullRequest{TargetGoID: FormatInt(testGoID), PaymentSessionID: FormatInt(older),
		EncryptedSignature: signedWith(t, testSecureKey, PaymentSessionFields(FormatInt(testGoID), FormatInt(older))...)})
	require.NoError(t, err)

	gw.payments[newer].State = restbackend.StatePaid
	assert.True(t, identity(newSecureKey, returnTo(newer)), "the new payment returns signed with the key it was created with")
	require.NoError(t, s.AcceptNotification(bg, CallbackRequest{GoID: FormatInt(m.GoID), PaymentID: FormatInt(newer), Token: gw.returnToken(t, newer)}))
	assert.True(t, identity(newSecureKey, deliver()), "and is notified so")

	gw.payments[older].State = restbackend.StatePaid
	statusWith(newSecureKey, older)
	assert.True(t, identity(testSecureKey, returnTo(older)), "the old payment keeps its key while it is in force")
	require.NoError(t, s.AcceptNotification(bg, CallbackRequest{GoID: FormatInt(m.GoID), PaymentID: FormatInt(older), Token: gw.returnToken(t, older)}))
	// Queued now, sent once the old key's overlap has ended.
	clk.add(25 * time.Hour)
	assert.True(t, identity(newSecureKey, deliver()), "signed when sent: the old key has ended")
}

// A payment saved before its key was kept (no KeyID) falls back to the
// key shop_keys names (what earlier versions signed with), else the
// current key.
func TestRotationLegacyPaymentsUseShopKeys(t *testing.T) {
	gw, st, clk := newFakeGateway(), memStore(t), &fakeClock{t: time.Now()}
	s := rotatedService(t, gw, st, clk, "")
	m, _ := s.merchant(bg, testGoID)
	id := gw.add(restbackend.StatePaid, 100)
	require.NoError(t, st.SaveSession(bg, store.Session{PaymentID: id, GoID: testGoID, OrderNumber: "OBJ-7", SuccessURL: "https://shop.example/ok"}))
	sess, err := st.Session(bg, id)
	require.NoError(t, err)
	assert.Equal(t, newSecureKey, s.paymentKey(bg, m, sess), "nothing recorded: the current key")

	require.NoError(t, st.SetShopKey(bg, testGoID, keyID(testSecureKey), clk.now()))
	s = rotatedService(t, gw, st, clk, "")
	m, _ = s.merchant(bg, testGoID)
	assert.Equal(t, testSecureKey, s.paymentKey(bg, m, sess), "what earlier versions learnt")
	sess.KeyID = keyID(newSecureKey)
	assert.Equal(t, newSecureKey, s.paymentKey(bg, m, sess), "a payment's own key comes first")
}

// A previous key without previous_until is accepted for
// DefaultPreviousOverlap from when a bridge first saw it, which a restart
// does not extend; an end once passed is final: a reload (or a restart)
// that drops or moves previous_until does not bring the key back.
func TestRotationOverlapBoundAndFinal(t *testing.T) {
	gw, st := newFakeGateway(), memStore(t)
	clk := &fakeClock{t: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	s := rotatedService(t, gw, st, clk, "")
	in := func(s *Service) []string {
		m, _ := s.merchant(bg, testGoID)
		return m.keys(clk.now())
	}
	assert.Equal(t, []string{newSecureKey, testSecureKey}, in(s))
	require.Len(t, s.KeyOverlaps(), 1)
	assert.Equal(t, clk.now().Add(DefaultPreviousOverlap), s.KeyOverlaps()[0].EndsAt)
	assert.True(t, s.KeyOverlaps()[0].Default)

	clk.add(DefaultPreviousOverlap - time.Hour)
	s = rotatedService(t, gw, st, clk, "") // a restart
	assert.Equal(t, []string{newSecureKey, testSecureKey}, in(s))
	clk.add(time.Hour)
	assert.Equal(t, []string{newSecureKey}, in(s), "the bound counts from the first sighting, not the restart")
	assert.Empty(t, s.KeyOverlaps())
	s = rotatedService(t, gw, st, clk, "")
	assert.Equal(t, []string{newSecureKey}, in(s), "nor does a later restart revive it")

	// An explicit end: passed, then a reload that drops or moves it.
	st2 := memStore(t)
	s = rotatedService(t, gw, st2, clk, "2026-12-27T10:00:00Z")
	clk.add(48 * time.Hour)
	assert.Equal(t, []string{newSecureKey}, in(s), "previous_until passed")
	m := testMerchant()
	m.SecureKey, m.PreviousSecureKey = newSecureKey, testSecureKey
	require.Empty(t, setMerchants(s, []Merchant{m}, 0), "a reload without previous_until")
	assert.Equal(t, []string{newSecureKey}, in(s), "does not revive the old key")
	m.PreviousUntil = clk.now().Add(24 * time.Hour).Format(time.RFC3339)
	require.Empty(t, setMerchants(s, []Merchant{m}, 0))
	assert.Equal(t, []string{newSecureKey}, in(s), "nor does one that moves previous_until later")

	// Moved while still to come: the operator may extend a rotation.
	st3 := memStore(t)
	s = rotatedService(t, gw, st3, clk, clk.now().Add(time.Hour).Format(time.RFC3339))
	m.PreviousUntil = clk.now().Add(48 * time.Hour).Format(time.RFC3339)
	require.Empty(t, setMerchants(s, []Merchant{m}, 0))
	clk.add(24 * time.Hour)
	assert.Equal(t, []string{newSecureKey, testSecureKey}, in(s), "extended before it ended")
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
	assert.Equal(t, []string{"merchants[0].previous_secure_key"}, keyOf(setMerchants(s, []Merchant{m}, 0)), "the old key dropped")
	m.PreviousSecureKey, m.PreviousUntil = testSecureKey, "2026-11-26T11:59:59Z"
	assert.Equal(t, []string{"merchants[0].previous_until"}, keyOf(setMerchants(s, []Merchant{m}, 0)), "kept until a time past")
	m.PreviousUntil = "2026-11-27T12:00:00Z"
	assert.Empty(t, setMerchants(s, []Merchant{m}, 0))
	in, _ := s.merchant(bg, testGoID)
	assert.Equal(t, []string{newSecureKey, testSecureKey}, in.keys(clk.now()), "both accepted until tomorrow")
}

// setMerchants builds ms whole against the set in force and puts it in
// force, as a reload does; the problems when refused (nothing changes).
func setMerchants(s *Service, ms []Merchant, defaultGoID int64) []Problem {
	set, ps := s.Merchants(nil, ms, defaultGoID)
	if len(ps) > 0 {
		return ps
	}
	s.Use(set)
	return nil
}

// A call carrying a merchant set (WithMerchants) is served by it alone:
// a set built and put in force meanwhile changes nothing for it. A set
// refused by Merchants is never built, and nothing changes.
func TestCallPinnedToOneMerchantSet(t *testing.T) {
	s, gw, _ := fakeService(t)
	id := gw.add(restbackend.StatePaid, 12900)
	pinned := s.InForce()

	other := testMerchant()
	other.GoID = testGoID + 1
	bad := testMerchant()
	bad.SecureKey = "short"
	_, ps := s.Merchants(nil, []Merchant{other, bad}, 0)
	require.NotEmpty(t, ps, "an invalid set is refused whole")
	assert.Same(t, pinned, s.InForce(), "and nothing changed")

	next, ps := s.Merchants(nil, []Merchant{other}, 0)
	require.Empty(t, ps)
	s.Use(next)

	got, err := serve(WithMerchants(bg, pinned), s, paymentStatusRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.Equal(t, CallCompleted, got.Result, "the pinned set still has the merchant")
	got, err = serve(bg, s, paymentStatusRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.Contains(t, *got.ResultDescription, "unknown targetGoId", "an unpinned call sees the set in force")
}

// overlapReadsFail is a store whose reads of goid's key overlaps fail (a
// connection lost), the rest of it real.
type overlapReadsFail struct {
	store.Store
	goid int64
}

func (s overlapReadsFail) KeyOverlap(ctx context.Context, goid int64, kind, keyID string) (store.KeyOverlap, error) {
	if goid == s.goid {
		return store.KeyOverlap{}, errors.New("connection reset by peer")
	}
	return s.Store.KeyOverlap(ctx, goid, kind, keyID)
}

// A refused reload writes no key overlap, on SQLite and PostgreSQL: not
// one refused for its configuration (a key changed without the one in
// force kept), nor one refused because the store could not read a later
// merchant's overlap after an earlier merchant's rotation was resolved.
// One that applies records it.
func TestRefusedReloadWritesNoKeyOverlap(t *testing.T) {
	for name, dsn := range map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "k.db") },
		"postgres": func(t *testing.T) string { return testenv.PostgresSchema(t) },
	} {
		t.Run(name, func(t *testing.T) {
			real := openObStore(t, dsn(t))
			const otherGoID = testGoID + 1
			clk := &fakeClock{t: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
			cfg := unitConfig(t)
			other := testMerchant()
			other.GoID, other.ClientID = otherGoID, "other-client"
			cfg.Merchants = append(cfg.Merchants, other)
			cfg.Gateway, cfg.Store, cfg.Now = newFakeGateway(), overlapReadsFail{real, otherGoID}, clk.now
			s, err := New(cfg)
			require.NoError(t, err)
			recorded := func() bool {
				_, err := real.KeyOverlap(bg, testGoID, overlapKey, keyID(testSecureKey))
				if errors.Is(err, store.ErrNotFound) {
					return false
				}
				require.NoError(t, err)
				return true
			}

			rotated := testMerchant()
			rotated.SecureKey, rotated.PreviousSecureKey = newSecureKey, testSecureKey
			dropped := other
			dropped.SecureKey = newSecureKey // the key in force not kept
			require.NotEmpty(t, setMerchants(s, []Merchant{rotated, dropped}, 0), "refused for its configuration")
			assert.False(t, recorded(), "a reload refused for its configuration writes nothing")

			alsoRotated := other
			alsoRotated.SecureKey, alsoRotated.PreviousSecureKey = newSecureKey, other.SecureKey
			ps := setMerchants(s, []Merchant{rotated, alsoRotated}, 0)
			require.Len(t, ps, 1, "refused: the store cannot read the second merchant's overlap")
			assert.Equal(t, "merchants[1].previous_secure_key", ps[0].Key)
			assert.False(t, recorded(), "nor does one refused for the store, though the first merchant's rotation came before")

			require.Empty(t, setMerchants(s, []Merchant{rotated, other}, 0))
			assert.True(t, recorded(), "a reload that applies records its overlap")
		})
	}
}
