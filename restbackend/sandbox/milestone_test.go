package sandbox

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

func TestCreatePayRefund(t *testing.T) {
	e := newEnv(t)
	p := e.create(nil)
	assert.EqualValues(t, firstPaymentID, p.ID)
	assert.Equal(t, restbackend.StateCreated, p.State)
	assert.Contains(t, p.GwURL, e.srv.URL+"/gw/v3/")
	e.mustHelper(p.ID, "pay", Action{Outcome: OutcomeSuccess})
	s := e.status(p.ID)
	assert.Equal(t, restbackend.StatePaid, s.State)
	require.NotNil(t, s.Payer.PaymentCard)
	assert.Equal(t, "418803******0003", s.Payer.PaymentCard.CardNumber)

	st, body := e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/refund", url.Values{"amount": {"400"}})
	require.Equal(t, 200, st, string(body))
	assert.Equal(t, restbackend.StatePartiallyRefunded, e.status(p.ID).State)
	st, body = e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/refund", url.Values{"amount": {"601"}})
	require.Equal(t, 409, st, string(body))
	st, _ = e.call(http.MethodPost, "/api/payments/payment/"+itoa(p.ID)+"/refund", url.Values{"amount": {"600"}})
	require.Equal(t, 200, st)
	assert.Equal(t, restbackend.StateRefunded, e.status(p.ID).State)
}
