package operations

// Tests from a cold review that demonstrate money-safety bugs: each fails
// on the code it was written against (a second refund, or a FINISHED
// answer for a refund the gateway never made). They pass once the bug is
// fixed; do not weaken them to make them pass.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// reviewRefund is a partiallyRefundPayment of 3000 on id with desc, signed
// with key.
func reviewRefund(t *testing.T, key string, id int64, desc string) *RefundRequest {
	t.Helper()
	goid, amount := int64(testGoID), int64(3000)
	return &RefundRequest{TargetGoID: &goid, PaymentSessionID: &id, Amount: &amount, Currency: "CZK", Description: desc,
		EncryptedSignature: signedWith(t, key, RefundRequestFields(FormatInt(goid), FormatInt(id), "3000", "CZK", desc)...)}
}

// Step 1 of the documented rotation (docs/operations.md "Key rotation")
// reaches the replicas one at a time (watch_config: up to a minute; a
// rolling update: minutes). A refund served by a replica that already has
// the new key is keyed with it; the shop's repeat (reply lost) served by a
// replica that does not have it yet is keyed with the old key, finds no
// entry and refunds again.
func TestReviewRotationMixedReplicasRefundTwice(t *testing.T) {
	gw, st, clk := newFakeGateway(), memStore(t), &fakeClock{t: time.Now()}
	cfg := unitConfig(t)
	cfg.Gateway, cfg.Store, cfg.Now = gw, st, clk.now
	notYet, err := New(cfg) // key A only
	require.NoError(t, err)
	reloaded := rotatedService(t, gw, st, clk, "") // B current, A previous
	id := gw.add(restbackend.StatePaid, 12900)
	req := reviewRefund(t, testSecureKey, id, "x") // the shop still signs with A

	r, err := serve(bg, reloaded, partiallyRefundPaymentRow, req)
	require.NoError(t, err)
	require.Equal(t, Finished, r.Result)
	_, err = serve(bg, notYet, partiallyRefundPaymentRow, req) // the repeat lands on the other replica
	require.NoError(t, err)
	assert.Len(t, gw.refunds[id], 1, "one refund for one signed request, whichever replica serves the repeat")
}

// Step 3 (previous_secure_key removed) makes every entry keyed with the old
// key unreachable, although the replay window (24 h by default; in-doubt
// entries: for ever) still covers it: the same request, now signed with
// the new key, refunds again.
func TestReviewRotationAfterPreviousRemoved(t *testing.T) {
	gw, st, clk := newFakeGateway(), memStore(t), &fakeClock{t: time.Now()}
	cfg := unitConfig(t)
	cfg.Gateway, cfg.Store, cfg.Now = gw, st, clk.now
	before, err := New(cfg)
	require.NoError(t, err)
	id := gw.add(restbackend.StatePaid, 12900)
	_, err = serve(bg, before, partiallyRefundPaymentRow, reviewRefund(t, testSecureKey, id, "x"))
	require.NoError(t, err)

	cfg2 := unitConfig(t)
	cfg2.Merchants[0].SecureKey = newSecureKey
	cfg2.Gateway, cfg2.Store, cfg2.Now = gw, st, clk.now
	after, err := New(cfg2)
	require.NoError(t, err)
	clk.add(time.Hour)
	_, err = serve(bg, after, partiallyRefundPaymentRow, reviewRefund(t, newSecureKey, id, "x"))
	require.NoError(t, err)
	assert.Len(t, gw.refunds[id], 1, "one refund for one request within the replay window")
}

// failingLookup is a store whose LookupCall fails (a timeout, a dropped
// connection).
type failingLookup struct{ store.Store }

func (failingLookup) LookupCall(context.Context, store.CallKey) (store.Call, error) {
	return store.Call{}, errors.New("read timeout")
}

// During a rotation once() looks for the entry under the previous key's
// digest; a failed lookup is taken for "none" and the call claims under
// the new digest: a repeat of a call made before the reload acts again.
func TestReviewRotationLookupErrorFailsOpen(t *testing.T) {
	gw, st, clk := newFakeGateway(), memStore(t), &fakeClock{t: time.Now()}
	cfg := unitConfig(t)
	cfg.Gateway, cfg.Store, cfg.Now = gw, st, clk.now
	before, err := New(cfg)
	require.NoError(t, err)
	id := gw.add(restbackend.StatePaid, 12900)
	req := reviewRefund(t, testSecureKey, id, "x")
	_, err = serve(bg, before, partiallyRefundPaymentRow, req)
	require.NoError(t, err)

	after := rotatedService(t, gw, failingLookup{st}, clk, "")
	_, _ = serve(bg, after, partiallyRefundPaymentRow, req)
	assert.Len(t, gw.refunds[id], 1, "a ledger read that fails must not let the call act")
}

// historyFailing fails the refund history reads numbered in failAt.
type historyFailing struct {
	*fakeGateway
	n      int
	failAt map[int]bool
}

func (g *historyFailing) RefundHistory(ctx context.Context, cr restbackend.Credentials, id int64) ([]restbackend.Refund, error) {
	g.n++
	if g.failAt[g.n] {
		return nil, errors.New("history read reset")
	}
	return g.fakeGateway.RefundHistory(ctx, cr, id)
}

// Refund A (3000, "item 1") never reaches the gateway, but the bridge cannot
// tell (reply lost, history unreadable): A is in doubt and the refund lock
// is released. The shop refunds another item of the same price (B: 3000,
// "item 2"). Were B to run beside unsettled A, A's repeat would reconcile
// by A's baseline, see exactly one new refund of 3000 (B's) and answer
// FINISHED for a refund the gateway never made. So B first settles A as A's
// repeat would (by A's baseline): refused while the history cannot be
// read; then A is found not done and released, and B acts. A's repeat then
// acts for itself: two refunds, each answered for itself.
func TestReviewRefundReconcileTakesAnotherRefund(t *testing.T) {
	fg := newFakeGateway()
	gw := &historyFailing{fakeGateway: fg, failAt: map[int]bool{2: true, 3: true}} // A's reconciliation, B's first settling
	cfg := unitConfig(t)
	cfg.Gateway, cfg.Store = gw, memStore(t)
	s, err := New(cfg)
	require.NoError(t, err)
	id := fg.add(restbackend.StatePaid, 12900)

	fg.fail["refund"] = errLostReply // not performed, outcome unknown to the bridge
	_, err = serve(bg, s, partiallyRefundPaymentRow, reviewRefund(t, testSecureKey, id, "item 1"))
	require.Equal(t, errOutcomeUnknown, err)
	delete(fg.fail, "refund")

	_, err = serve(bg, s, partiallyRefundPaymentRow, reviewRefund(t, testSecureKey, id, "item 2"))
	assert.Equal(t, errRefundUnsettled, err, "B waits while A cannot be settled")
	assert.Empty(t, fg.refunds[id], "nothing refunded yet")

	r, err := serve(bg, s, partiallyRefundPaymentRow, reviewRefund(t, testSecureKey, id, "item 2"))
	require.NoError(t, err, "B settles A (not done) and acts")
	assert.Equal(t, Finished, r.Result)
	require.Len(t, fg.refunds[id], 1)
	r, err = serve(bg, s, partiallyRefundPaymentRow, reviewRefund(t, testSecureKey, id, "item 1"))
	require.NoError(t, err, "A was released: its repeat acts")
	assert.Equal(t, Finished, r.Result)
	assert.Len(t, fg.refunds[id], 2, "each refund once")
}

// Refund A reached the gateway but its reply was lost and the history could
// not be read: A is in doubt. Refund B of the payment settles A as done
// (its baseline shows one new refund of its amount) before it acts, so A's
// repeat, whenever it comes, is answered from the ledger: no second refund
// of A, and B refunded once.
func TestRefundSettlesAnEarlierRefundInDoubt(t *testing.T) {
	fg := newFakeGateway()
	gw := &historyFailing{fakeGateway: fg, failAt: map[int]bool{2: true}} // A's reconciliation read
	cfg := unitConfig(t)
	cfg.Gateway, cfg.Store = gw, memStore(t)
	s, err := New(cfg)
	require.NoError(t, err)
	id := fg.add(restbackend.StatePaid, 12900)

	fg.fail["refund"], fg.lostReply = errLostReply, true // performed, reply lost
	_, err = serve(bg, s, partiallyRefundPaymentRow, reviewRefund(t, testSecureKey, id, "item 1"))
	require.Equal(t, errOutcomeUnknown, err)
	delete(fg.fail, "refund")
	fg.lostReply = false
	require.Len(t, fg.refunds[id], 1)

	r, err := serve(bg, s, partiallyRefundPaymentRow, reviewRefund(t, testSecureKey, id, "item 2"))
	require.NoError(t, err)
	assert.Equal(t, Finished, r.Result)
	require.Len(t, fg.refunds[id], 2)
	r, err = serve(bg, s, partiallyRefundPaymentRow, reviewRefund(t, testSecureKey, id, "item 1"))
	require.NoError(t, err)
	assert.Equal(t, Finished, r.Result, "A answered from the ledger")
	assert.Len(t, fg.refunds[id], 2, "no second refund of A")
}
