package operations

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// fakeGateway is the core's Gateway in memory, for unit tests of single
// operations: payments by id, a refund history per payment, and every call
// recorded by name. Money moves only through its methods, so a test can
// count what the gateway did. An error set in fail[name] is returned by
// that call instead (after acting when lostReply is set: the reply of a
// call that happened is lost).
type fakeGateway struct {
	mu       sync.Mutex
	next     int64
	payments map[int64]*restbackend.Payment
	// callbacks are the callback URLs each payment was created with.
	callbacks map[int64]*restbackend.Callback
	refunds   map[int64][]restbackend.Refund
	calls     []string
	fail      map[string]error
	lostReply bool
	// answer, when set, is the result of every capture and void that acts
	// instead of FINISHED (a result a newer gateway might give).
	answer string
}

func newFakeGateway() *fakeGateway {
	return &fakeGateway{next: 3000000001, payments: map[int64]*restbackend.Payment{},
		refunds: map[int64][]restbackend.Refund{}, fail: map[string]error{}}
}

// add puts a payment of the test merchant in state into the gateway.
func (g *fakeGateway) add(state string, amount int64) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.next
	g.next++
	g.payments[id] = &restbackend.Payment{ID: id, State: state, Amount: amount, Currency: "CZK", OrderNumber: fmt.Sprint("ORD-", id),
		Target: &restbackend.Target{Type: "ACCOUNT", GoID: testGoID}, GwURL: fmt.Sprint("https://gw.example/", id)}
	return id
}

// called records name and returns its configured failure (nil: act).
func (g *fakeGateway) called(name string) (fail error, act bool) {
	g.calls = append(g.calls, name)
	err := g.fail[name]
	return err, err == nil || g.lostReply
}

func (g *fakeGateway) count(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.calls {
		if c == name {
			n++
		}
	}
	return n
}

func (g *fakeGateway) Timeout() time.Duration { return time.Second }

func (g *fakeGateway) PaymentStatus(_ context.Context, _ restbackend.Credentials, id int64) (*restbackend.Payment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err, _ := g.called("status"); err != nil {
		return nil, err
	}
	p, ok := g.payments[id]
	if !ok {
		return nil, &restbackend.APIError{Status: 404}
	}
	cp := *p
	return &cp, nil
}

func (g *fakeGateway) CreatePayment(_ context.Context, _ restbackend.Credentials, req *restbackend.PaymentRequest) (*restbackend.Payment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	err, act := g.called("create")
	if !act {
		return nil, err
	}
	id := g.next
	g.next++
	p := &restbackend.Payment{ID: id, State: restbackend.StateCreated, Amount: req.Amount, Currency: req.Currency,
		OrderNumber: req.OrderNumber, Target: &req.Target, GwURL: fmt.Sprint("https://gw.example/", id), Payer: req.Payer,
		AdditionalParams: req.AdditionalParams, Recurrence: req.Recurrence}
	g.payments[id] = p
	if g.callbacks == nil {
		g.callbacks = map[int64]*restbackend.Callback{}
	}
	g.callbacks[id] = req.Callback
	if err != nil {
		return nil, err
	}
	cp := *p
	return &cp, nil
}

func (g *fakeGateway) CreateRecurrence(_ context.Context, _ restbackend.Credentials, parentID int64, req *restbackend.RecurrenceRequest) (*restbackend.Payment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	err, act := g.called("recurrence")
	if !act {
		return nil, err
	}
	id := g.next
	g.next++
	p := &restbackend.Payment{ID: id, ParentID: parentID, State: restbackend.StatePaid, Amount: req.Amount, Currency: req.Currency,
		OrderNumber: req.OrderNumber, Target: &restbackend.Target{Type: "ACCOUNT", GoID: testGoID}}
	g.payments[id] = p
	if err != nil {
		return nil, err
	}
	cp := *p
	return &cp, nil
}

// operation moves payment id from one of from to to.
func (g *fakeGateway) operation(name string, id int64, to string, from ...string) (*restbackend.Result, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	err, act := g.called(name)
	if !act {
		return nil, err
	}
	p, ok := g.payments[id]
	if !ok {
		return nil, &restbackend.APIError{Status: 404}
	}
	for _, st := range from {
		if p.State == st {
			p.State = to
			if err != nil {
				return nil, err
			}
			if g.answer != "" {
				return &restbackend.Result{ID: id, Result: g.answer}, nil
			}
			return &restbackend.Result{ID: id, Result: restbackend.ResultFinished}, nil
		}
	}
	return &restbackend.Result{ID: id, Result: restbackend.ResultFailed}, err
}

func (g *fakeGateway) Capture(_ context.Context, _ restbackend.Credentials, id int64, _ *restbackend.CaptureRequest) (*restbackend.Result, error) {
	return g.operation("capture", id, restbackend.StatePaid, restbackend.StateAuthorized)
}

func (g *fakeGateway) VoidAuthorization(_ context.Context, _ restbackend.Credentials, id int64) (*restbackend.Result, error) {
	return g.operation("void", id, restbackend.StateCanceled, restbackend.StateAuthorized)
}

func (g *fakeGateway) VoidRecurrence(_ context.Context, _ restbackend.Credentials, id int64) (*restbackend.Result, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	err, act := g.called("void-recurrence")
	if !act {
		return nil, err
	}
	p := g.payments[id]
	if p == nil || p.Recurrence == nil {
		return &restbackend.Result{ID: id, Result: restbackend.ResultFailed}, err
	}
	p.Recurrence.RecurrenceState = "STOPPED"
	return &restbackend.Result{ID: id, Result: restbackend.ResultFinished}, err
}

func (g *fakeGateway) Refund(_ context.Context, _ restbackend.Credentials, id, amount int64) (*restbackend.Result, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	err, act := g.called("refund")
	if !act {
		return nil, err
	}
	p := g.payments[id]
	if p == nil {
		return nil, &restbackend.APIError{Status: 404}
	}
	refunded := refundedSum(g.refunds[id])
	if amount > p.Amount-refunded {
		return nil, &restbackend.APIError{Status: 409}
	}
	g.refunds[id] = append(g.refunds[id], restbackend.Refund{ID: g.next, Amount: amount, State: restbackend.RefundSucceeded})
	g.next++
	p.State = restbackend.StatePartiallyRefunded
	if refunded+amount == p.Amount {
		p.State = restbackend.StateRefunded
	}
	return &restbackend.Result{ID: id, Result: restbackend.ResultFinished}, err
}

func (g *fakeGateway) RefundHistory(_ context.Context, _ restbackend.Credentials, id int64) ([]restbackend.Refund, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err, _ := g.called("refund-history"); err != nil {
		return nil, err
	}
	return append([]restbackend.Refund(nil), g.refunds[id]...), nil
}

func (g *fakeGateway) PaymentInstruments(_ context.Context, _ restbackend.Credentials, _ int64, _ string) (*restbackend.InstrumentList, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err, _ := g.called("instruments"); err != nil {
		return nil, err
	}
	return &restbackend.InstrumentList{EnabledPaymentInstruments: []restbackend.Instrument{
		{PaymentInstrument: restbackend.InstrumentPaymentCard, Label: map[string]string{"cs": "Platební karta"}},
		{PaymentInstrument: restbackend.InstrumentBankAccount, Label: map[string]string{"cs": "Převod"},
			EnabledSwifts: []restbackend.Swift{{Swift: "KOMBCZPP", Label: map[string]string{"cs": "KB"}, IsOnline: true}}},
	}}, nil
}

func (g *fakeGateway) AccountStatementStream(_ context.Context, _ restbackend.Credentials, _ *restbackend.StatementRequest) (io.ReadCloser, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err, _ := g.called("statement"); err != nil {
		return nil, err
	}
	return io.NopCloser(strings.NewReader("statement")), nil
}

// fakeService is a Service on a fake gateway and an in-memory store.
func fakeService(t *testing.T) (*Service, *fakeGateway, store.Store) {
	t.Helper()
	gw, st := newFakeGateway(), memStore(t)
	cfg := unitConfig(t)
	cfg.Gateway, cfg.Store = gw, st
	s, err := New(cfg)
	require.NoError(t, err)
	return s, gw, st
}

// returnToken is the return token the bridge gave the gateway for payment id
// (the store keeps only its hash).
func (g *fakeGateway) returnToken(t *testing.T, id int64) string {
	t.Helper()
	g.mu.Lock()
	cb := g.callbacks[id]
	g.mu.Unlock()
	require.NotNil(t, cb, "payment %d created with callbacks", id)
	u, err := url.Parse(cb.ReturnURL)
	require.NoError(t, err)
	return u.Query().Get(CallbackTokenParam)
}
