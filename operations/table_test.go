package operations

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

// One short test per row of the table, against the fake gateway: what the
// operation asks of the gateway and what it answers. The SOAP and HTTP
// paths of the same operations are the golden and end-to-end tests.

var bg = context.Background()

func signed(t *testing.T, fields ...string) string {
	t.Helper()
	sig, err := Sign(testSecureKey, fields...)
	require.NoError(t, err)
	return sig
}

// sessionInfo is a signed EPaymentSessionInfo of payment id.
func sessionInfo(t *testing.T, id int64) *SessionInfo {
	goid := int64(testGoID)
	return &SessionInfo{TargetGoID: &goid, PaymentSessionID: &id,
		EncryptedSignature: signed(t, PaymentSessionFields(FormatInt(goid), FormatInt(id))...)}
}

// refundRequest is a signed ERefundRequest of amount CZK of payment id.
func refundRequest(t *testing.T, id, amount int64, desc string) *RefundRequest {
	goid := int64(testGoID)
	return &RefundRequest{TargetGoID: &goid, PaymentSessionID: &id, Amount: &amount, Currency: "CZK", Description: desc,
		EncryptedSignature: signed(t, RefundRequestFields(FormatInt(goid), FormatInt(id), FormatInt(amount), "CZK", desc)...)}
}

func verifiesAsStatus(t *testing.T, st *PaymentStatus) {
	t.Helper()
	require.NotNil(t, st.EncryptedSignature)
	assert.True(t, Verify(testSecureKey, *st.EncryptedSignature, st.SignatureFields()...), "reply signed with the merchant's key")
}

func verifiesAsResult(t *testing.T, r *PaymentResult) {
	t.Helper()
	require.NotNil(t, r.EncryptedSignature)
	assert.True(t, Verify(testSecureKey, *r.EncryptedSignature, PaymentResultFields(formatOptInt(r.PaymentSessionID), r.Result)...))
}

func TestRowPaymentStatus(t *testing.T) {
	s, gw, st := fakeService(t)
	id := gw.add(restbackend.StatePaid, 12900)
	require.NoError(t, st.SaveSession(bg, store.Session{PaymentID: id, GoID: testGoID, ProductName: "Kniha"}))
	got, err := serve(bg, s, paymentStatusRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.Equal(t, CallCompleted, got.Result)
	assert.Equal(t, "PAID", *got.SessionState)
	assert.Equal(t, "Kniha", *got.ProductName, "productName from the bridge's session")
	verifiesAsStatus(t, got)

	// Forged: refused with a signed CALL_FAILED, and the gateway is not asked.
	in := sessionInfo(t, id)
	in.EncryptedSignature = sessionInfo(t, id+1).EncryptedSignature
	got, err = serve(bg, s, paymentStatusRow, in)
	require.NoError(t, err)
	assert.Equal(t, callFailed, got.Result)
	assert.Contains(t, *got.ResultDescription, "invalid encryptedSignature of paymentSessionInfo")
	verifiesAsStatus(t, got)
	assert.Equal(t, 1, gw.count("status"))

	// Unknown goid: refused, not signed (no key known).
	other := int64(42)
	in.TargetGoID = &other
	got, err = serve(bg, s, paymentStatusRow, in)
	require.NoError(t, err)
	assert.Nil(t, got.EncryptedSignature)
	assert.Contains(t, *got.ResultDescription, "unknown targetGoId 42")
}

func TestRowPaymentStatusWCust(t *testing.T) {
	s, gw, _ := fakeService(t)
	id := gw.add(restbackend.StatePaid, 100)
	gw.payments[id].Payer = &restbackend.Payer{Contact: &restbackend.Contact{FirstName: "Jiří", Email: "jiri@example.cz"}}
	got, err := serve(bg, s, paymentStatusWCustRow, sessionInfo(t, id))
	require.NoError(t, err)
	require.NotNil(t, got.CustomerData)
	assert.Equal(t, "Jiří", got.CustomerData.FirstName)
	verifiesAsStatus(t, &got.PaymentStatus)

	got, err = serve(bg, s, paymentStatusWCustRow, nil)
	require.NoError(t, err)
	assert.Equal(t, "missing paymentSessionInfo", *got.ResultDescription)
}

func TestRowCapturePayment(t *testing.T) {
	s, gw, _ := fakeService(t)
	id := gw.add(restbackend.StateAuthorized, 100)
	got, err := serve(bg, s, capturePaymentRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.Equal(t, Finished, got.Result)
	verifiesAsResult(t, got)
	again, err := serve(bg, s, capturePaymentRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.Equal(t, got, again, "a repeat is answered from the ledger")
	assert.Equal(t, 1, gw.count("capture"), "captured once")
}

// A result the bridge does not know (a newer gateway's) is no FAILED,
// which a shop takes for final: the call is reconciled by the payment's
// state, and answered with what the state tells.
func TestRowCaptureUnknownResult(t *testing.T) {
	s, gw, _ := fakeService(t)
	gw.answer = "PROCESSING"
	id := gw.add(restbackend.StateAuthorized, 100)
	got, err := serve(bg, s, capturePaymentRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.Equal(t, Finished, got.Result, "the state says PAID: captured")
	assert.Equal(t, 1, gw.count("capture"))

	// Where the state tells nothing yet, the outcome stays unknown: a fault,
	// then the repeat reconciles.
	id2 := gw.add(restbackend.StateAuthorized, 100)
	gw.fail["status"] = errors.New("gateway down")
	_, err = serve(bg, s, capturePaymentRow, sessionInfo(t, id2))
	assert.Equal(t, errOutcomeUnknown, err)
	delete(gw.fail, "status")
	got, err = serve(bg, s, capturePaymentRow, sessionInfo(t, id2))
	require.NoError(t, err)
	assert.Equal(t, Finished, got.Result)
	assert.Equal(t, 2, gw.count("capture"), "each payment captured once")
}

func TestRowVoidAuthorization(t *testing.T) {
	s, gw, _ := fakeService(t)
	id := gw.add(restbackend.StateAuthorized, 100)
	got, err := serve(bg, s, voidAuthorizationRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.Equal(t, Finished, got.Result)
	assert.Equal(t, restbackend.StateCanceled, gw.payments[id].State)

	// A reply lost after the gateway voided: reconciled by the state.
	id2 := gw.add(restbackend.StateAuthorized, 100)
	gw.fail["void"], gw.lostReply = errors.New("connection reset"), true
	got, err = serve(bg, s, voidAuthorizationRow, sessionInfo(t, id2))
	require.NoError(t, err)
	assert.Equal(t, Finished, got.Result, "the state tells the void happened")
}

func TestRowVoidRecurrentPayment(t *testing.T) {
	s, gw, _ := fakeService(t)
	id := gw.add(restbackend.StatePaid, 100)
	gw.payments[id].Recurrence = &restbackend.Recurrence{RecurrenceCycle: "ON_DEMAND", RecurrenceState: "STARTED"}
	got, err := serve(bg, s, voidRecurrentPaymentRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.Equal(t, Finished, got.Result)
	verifiesAsResult(t, got)

	// The .NET library's scheme, as the merchant chose.
	cfg := unitConfig(t)
	cfg.Merchants[0].VoidRecurrentReply = ReplyPaymentSession
	cfg.Gateway, cfg.Store = gw, memStore(t)
	s2, err := New(cfg)
	require.NoError(t, err)
	got, err = serve(bg, s2, voidRecurrentPaymentRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.True(t, Verify(testSecureKey, *got.EncryptedSignature, PaymentSessionFields(FormatInt(testGoID), FormatInt(id))...))
}

func TestRowRefundPayment(t *testing.T) {
	s, gw, _ := fakeService(t)
	id := gw.add(restbackend.StatePaid, 12900)
	got, err := serve(bg, s, refundPaymentRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.Equal(t, Finished, got.Result)
	assert.Equal(t, []restbackend.Refund{{ID: gw.refunds[id][0].ID, Amount: 12900, State: restbackend.RefundSucceeded}}, gw.refunds[id],
		"the whole amount refunded")
	got, err = serve(bg, s, refundPaymentRow, sessionInfo(t, id))
	require.NoError(t, err)
	assert.Equal(t, Finished, got.Result, "answered from the ledger")
	assert.Equal(t, 1, gw.count("refund"))
}

func TestRowRefundRequests(t *testing.T) {
	for name, refund := range map[string]func(*Service, *RefundRequest) (*PaymentResult, error){
		"partiallyRefundPayment": func(s *Service, in *RefundRequest) (*PaymentResult, error) {
			return serve(bg, s, partiallyRefundPaymentRow, in)
		},
		"refundPayment(refundRequest)": func(s *Service, in *RefundRequest) (*PaymentResult, error) {
			return serve(bg, s, refundPaymentRequestRow, in)
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, gw, _ := fakeService(t)
			id := gw.add(restbackend.StatePaid, 12900)
			got, err := refund(s, refundRequest(t, id, 3000, "first"))
			require.NoError(t, err)
			assert.Equal(t, Finished, got.Result)
			verifiesAsResult(t, got)
			got, err = refund(s, refundRequest(t, id, 3000, "first"))
			require.NoError(t, err)
			assert.Equal(t, Finished, got.Result)
			assert.Len(t, gw.refunds[id], 1, "the same signed request refunds once")
			_, err = refund(s, refundRequest(t, id, 3000, "second"))
			require.NoError(t, err)
			assert.Len(t, gw.refunds[id], 2, "another description is another refund")

			got, err = refund(s, refundRequest(t, id, 0, "zero"))
			require.NoError(t, err)
			assert.Equal(t, "refundRequest.amount must be positive", *got.ResultDescription)
			in := refundRequest(t, id, 100, "euro")
			in.Currency = "EUR"
			in.EncryptedSignature = signed(t, RefundRequestFields(FormatInt(testGoID), FormatInt(id), "100", "EUR", "euro")...)
			got, err = refund(s, in)
			require.NoError(t, err)
			assert.Contains(t, *got.ResultDescription, "does not match the payment's currency CZK")
			assert.Equal(t, 2, gw.count("refund"), "refused requests reach no refund")
		})
	}
}

func TestRowCreatePayment(t *testing.T) {
	s, gw, st := fakeService(t)
	goid, price := int64(testGoID), int64(12900)
	c := &PaymentCommand{TargetGoID: &goid, ProductName: "Kniha", TotalPrice: &price, Currency: "CZK", OrderNumber: "OBJ-1",
		SuccessURL: "https://shop.example/ok", FailedURL: "https://shop.example/ko", PaymentChannels: "eu_gp_u"}
	c.EncryptedSignature = signed(t, c.SignatureFields()...)
	got, err := serve(bg, s, createPaymentRow, c)
	require.NoError(t, err)
	require.Equal(t, CallCompleted, got.Result, got.ResultDescription)
	verifiesAsStatus(t, got)
	sess, err := st.Session(bg, *got.PaymentSessionID)
	require.NoError(t, err, "the session is saved before the shop learns the payment")
	assert.Equal(t, "https://shop.example/ok", sess.SuccessURL)

	again, err := serve(bg, s, createPaymentRow, c)
	require.NoError(t, err)
	assert.Equal(t, *got.PaymentSessionID, *again.PaymentSessionID, "a repeat while CREATED answers the same payment")
	assert.Equal(t, 1, gw.count("create"))

	bad := *c
	bad.OrderNumber = "OBJ-2" // the signature covers OBJ-1
	got, err = serve(bg, s, createPaymentRow, &bad)
	require.NoError(t, err)
	assert.Equal(t, callFailed, got.Result)
	assert.Equal(t, 1, gw.count("create"), "a forged command creates nothing")
}

func TestRowCreateRecurrentPayment(t *testing.T) {
	s, gw, st := fakeService(t)
	parent, rr := recurrenceOf(t, gw, st, "R-1")
	got, err := serve(bg, s, createRecurrentPaymentRow, rr)
	require.NoError(t, err)
	require.Equal(t, CallCompleted, got.Result, got.ResultDescription)
	assert.Equal(t, parent, *got.ParentPaymentSessionID)
	assert.Equal(t, "Předplatné", *got.ProductName, "the parent's productName")
	verifiesAsStatus(t, got)
	again, err := serve(bg, s, createRecurrentPaymentRow, rr)
	require.NoError(t, err)
	assert.Equal(t, *got.PaymentSessionID, *again.PaymentSessionID)
	assert.Equal(t, 1, gw.count("recurrence"), "charged once")
}

func TestRowCreateBuyer(t *testing.T) {
	s, gw, _ := fakeService(t)
	goid, email := int64(testGoID), "buyer@example.cz"
	got, err := serve(bg, s, createBuyerRow, &BuyerCreate{EshopGoID: &goid, BuyerEmail: &email,
		EncryptedSignature: signed(t, CreateBuyerFields(FormatInt(goid), "", email)...)})
	require.NoError(t, err)
	assert.Equal(t, Failed, got.Result)
	assert.Equal(t, createBuyerNotSupported, *got.ResultDescription)
	assert.Nil(t, got.EncryptedSignature, "no reply scheme is published")
	assert.Equal(t, &email, got.BuyerEmail)
	assert.Empty(t, gw.calls)
}

func TestRowPaymentMethodList(t *testing.T) {
	s, _, _ := fakeService(t)
	ms, err := serve(bg, s, paymentMethodListRow, nil)
	require.NoError(t, err)
	var codes []string
	for _, m := range ms {
		codes = append(codes, m.Code)
	}
	assert.Equal(t, []string{"eu_gp_u", "cz_kb", "eu_bank"}, codes)
}

func TestRowTouch(t *testing.T) {
	s, gw, _ := fakeService(t)
	got, err := serve(bg, s, touchRow, nil)
	require.NoError(t, err)
	assert.Equal(t, "OK", got)
	assert.Empty(t, gw.calls)
}

// observed records what the pipeline tells its observer.
type observed struct{ got []CallOutcome }

func (o *observed) Observe(_ context.Context, c CallOutcome) { o.got = append(o.got, c) }

// The pipeline tells the observer every call's result, with the goid only
// when it is a configured merchant.
func TestPipelineObserves(t *testing.T) {
	obs := &observed{}
	cfg := unitConfig(t)
	gw := newFakeGateway()
	cfg.Gateway, cfg.Observer = gw, obs
	s, err := New(cfg)
	require.NoError(t, err)
	id := gw.add(restbackend.StatePaid, 100)
	_, _ = serve(bg, s, paymentStatusRow, sessionInfo(t, id))
	forged := sessionInfo(t, id)
	forged.EncryptedSignature = "00"
	_, _ = serve(bg, s, paymentStatusRow, forged)
	other := int64(42)
	forged.TargetGoID = &other
	_, _ = serve(bg, s, capturePaymentRow, forged)
	gw.fail["status"] = errors.New("gateway down")
	_, _ = serve(bg, s, paymentStatusRow, sessionInfo(t, id))
	var got []CallOutcome
	for _, o := range obs.got {
		o.Duration = 0
		got = append(got, o)
	}
	assert.Equal(t, []CallOutcome{
		{Operation: "paymentStatus", GoID: testGoID, Result: ResultOK},
		{Operation: "paymentStatus", GoID: testGoID, Result: ResultBadSignature},
		{Operation: "capturePayment", Result: ResultRefused},
		{Operation: "paymentStatus", GoID: testGoID, Result: ResultServerError},
	}, got)
}

// recurrenceOf makes a paid parent of 500 CZK whose session the bridge
// holds, and a signed createRecurrentPayment of 500 on it for order.
func recurrenceOf(t *testing.T, gw *fakeGateway, st store.Store, order string) (int64, *RecurrenceRequest) {
	t.Helper()
	parent := gw.add(restbackend.StatePaid, 500)
	require.NoError(t, st.SaveSession(bg, store.Session{PaymentID: parent, GoID: testGoID, ProductName: "Předplatné", Currency: "CZK"}))
	goid, price := int64(testGoID), int64(500)
	return parent, &RecurrenceRequest{TargetGoID: &goid, ParentPaymentSessionID: &parent, OrderNumber: order, TotalPrice: &price,
		EncryptedSignature: signed(t, RecurrenceRequestFields(FormatInt(parent), FormatInt(goid), order, "500")...)}
}

// A createRecurrentPayment whose reply was lost after the gateway charged:
// answered "retry later" (not "read paymentStatus": the shop has no id to
// read) until the gateway's notification of the child reaches the bridge;
// then the same call is answered with the child, and nothing is charged
// twice.
func TestRowCreateRecurrentPaymentLostReply(t *testing.T) {
	s, gw, st := fakeService(t)
	parent, rr := recurrenceOf(t, gw, st, "R-2")
	gw.fail["recurrence"], gw.lostReply = errors.New("connection reset after the request was sent"), true

	_, err := serve(bg, s, createRecurrentPaymentRow, rr)
	assert.Equal(t, errRecurrenceUnconfirmed, err)
	assert.Contains(t, err.Error(), "retry the same call later")
	_, err = serve(bg, s, createRecurrentPaymentRow, rr)
	assert.Equal(t, errRecurrenceUnconfirmed, err, "nothing learnt yet: still unknown")

	// The gateway notifies the child; the bridge records its session.
	child := gw.next - 1
	require.Equal(t, parent, gw.payments[child].ParentID)
	require.NoError(t, st.SaveSession(bg, store.Session{PaymentID: child, ParentID: parent, GoID: testGoID,
		ProductName: "Předplatné", OrderNumber: "R-2", Amount: 500, Currency: "CZK", CreatedAt: s.now()}))

	got, err := serve(bg, s, createRecurrentPaymentRow, rr)
	require.NoError(t, err)
	require.Equal(t, CallCompleted, got.Result, got.ResultDescription)
	assert.Equal(t, child, *got.PaymentSessionID, "the retry answers the child")
	assert.Equal(t, "Předplatné", *got.ProductName)
	verifiesAsStatus(t, got)
	again, err := serve(bg, s, createRecurrentPaymentRow, rr)
	require.NoError(t, err)
	assert.Equal(t, child, *again.PaymentSessionID, "settled: answered from the ledger")
	assert.Equal(t, 1, gw.count("recurrence"), "charged once")
}

// A createRecurrentPayment the gateway never confirms: repeats hear "retry
// later" for an hour, then that the confirmation is not coming (and what
// to do), still without a second charge. A child recorded by a replica
// whose clock runs behind (its time a little before the call's ledger
// entry) is still the call's child.
func TestRowCreateRecurrentPaymentNeverConfirmed(t *testing.T) {
	s, gw, st := fakeService(t)
	now := s.now()
	s.now = func() time.Time { return now }
	parent, rr := recurrenceOf(t, gw, st, "R-3")
	gw.fail["recurrence"], gw.lostReply = errors.New("connection reset after the request was sent"), true

	_, err := serve(bg, s, createRecurrentPaymentRow, rr)
	assert.Equal(t, errRecurrenceUnconfirmed, err)
	now = now.Add(recurrenceConfirmWithin - time.Second)
	_, err = serve(bg, s, createRecurrentPaymentRow, rr)
	assert.Equal(t, errRecurrenceUnconfirmed, err, "within the hour: still coming")
	now = now.Add(time.Second)
	_, err = serve(bg, s, createRecurrentPaymentRow, rr)
	assert.Equal(t, errRecurrenceNeverConfirmed, err)
	assert.Contains(t, err.Error(), "never creates it")
	assert.Equal(t, 1, gw.count("recurrence"), "never a second charge")

	// The child turns up after all, recorded with a clock 30 s behind.
	child := gw.next - 1
	made := now.Add(-recurrenceConfirmWithin - 30*time.Second)
	require.NoError(t, st.SaveSession(bg, store.Session{PaymentID: child, ParentID: parent, GoID: testGoID,
		ProductName: "Předplatné", OrderNumber: "R-3", Amount: 500, Currency: "CZK", CreatedAt: made}))
	got, err := serve(bg, s, createRecurrentPaymentRow, rr)
	require.NoError(t, err)
	assert.Equal(t, child, *got.PaymentSessionID)
	assert.Equal(t, 1, gw.count("recurrence"))
}

// The same recurrence asked again after the shortest replay window the
// configuration allows, its reply lost this time: the child of the first
// call is older than the window and not taken for the new one, whose
// outcome stays unknown until its own child is known.
func TestRowCreateRecurrentPaymentAfterItsWindow(t *testing.T) {
	gw, st := newFakeGateway(), memStore(t)
	clk := &fakeClock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	cfg := unitConfig(t)
	cfg.Gateway, cfg.Store, cfg.Now = gw, st, clk.now
	window := StaleAfter(DefaultCallDeadline, gw.Timeout()) + childClockSkew + time.Second
	cfg.Merchants[0].ReplayWindow = window
	s, err := New(cfg)
	require.NoError(t, err)
	_, rr := recurrenceOf(t, gw, st, "R-4")

	first, err := serve(bg, s, createRecurrentPaymentRow, rr)
	require.NoError(t, err)
	clk.add(window + time.Second)
	gw.fail["recurrence"], gw.lostReply = errors.New("connection reset after the request was sent"), true
	_, err = serve(bg, s, createRecurrentPaymentRow, rr)
	assert.Equal(t, errRecurrenceUnconfirmed, err, "not answered with the first call's child %d", *first.PaymentSessionID)
	assert.Equal(t, 2, gw.count("recurrence"))
}
