package operations

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
	"github.com/stretchr/testify/assert"
)

func TestAppendQuery(t *testing.T) {
	for in, want := range map[string]string{
		"https://s.example/ok":             "https://s.example/ok?a=1",
		"https://s.example/ok?":            "https://s.example/ok?a=1",
		"https://s.example/ok?x=1":         "https://s.example/ok?x=1&a=1",
		"https://s.example/ok?x=1&":        "https://s.example/ok?x=1&a=1",
		"https://s.example/ok#f":           "https://s.example/ok?a=1#f",
		"https://s.example/ok?x=%20#f?g=1": "https://s.example/ok?x=%20&a=1#f?g=1",
	} {
		assert.Equal(t, want, AppendQuery(in, "a=1"), in)
	}
}

func TestReturnsToSuccess(t *testing.T) {
	for _, tc := range []struct {
		state, sub string
		ok         bool
	}{
		{"PAID", "", true}, {"AUTHORIZED", "", true}, {"PAYMENT_METHOD_CHOSEN", "_102", true},
		{"PAYMENT_METHOD_CHOSEN", "_101", true}, {"PAYMENT_METHOD_CHOSEN", "_5006", false},
		{"CREATED", "", false}, {"CANCELED", "", false}, {"TIMEOUTED", "", false}, {"REFUNDED", "", true},
	} {
		assert.Equal(t, tc.ok, returnsToSuccess(&restbackend.Payment{State: tc.state, SubState: tc.sub}), tc.state+tc.sub)
	}
}

// The notification key tells apart what the e-shop must hear about and
// nothing else: the same payment id of two payments (a gateway that numbers
// from the start again while the bridge keeps its database), and refunds
// that leave the state as it was; a repeat of one change keeps its key.
func TestNotificationKeyIdentity(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	paid := &restbackend.Payment{ID: 3000000001, State: restbackend.StatePaid}
	const oldToken = "AAAAAAAAAAAAAAAAAAAAAAAAAA"
	oldRun := store.Session{PaymentID: paid.ID, TokenHash: store.HashReturnToken(oldToken), CreatedAt: at}
	newRun := store.Session{PaymentID: paid.ID, TokenHash: store.HashReturnToken("BBBBBBBBBBBBBBBBBBBBBBBBBB"), CreatedAt: at.Add(time.Hour)}
	k := func(p *restbackend.Payment, s store.Session, refunds string) string {
		return notificationKey(8123456789, p, s, s.TokenHash, refunds)
	}
	assert.Equal(t, k(paid, oldRun, ""), k(paid, oldRun, ""), "a repeat keeps its key")
	assert.NotEqual(t, k(paid, oldRun, ""), k(paid, newRun, ""), "same id, another payment")
	assert.NotContains(t, k(paid, oldRun, ""), oldToken, "keys are logged: no token in them")
	sum := sha256.Sum256([]byte(oldToken))
	assert.Equal(t, "8123456789:3000000001:t"+hex.EncodeToString(sum[:8])+":PAID:", k(paid, oldRun, ""),
		"the key format of the release that stored tokens as sent: outbox rows keep matching")

	// Sessions from before tokens: their creation time tells them apart.
	oldRun.TokenHash, newRun.TokenHash = "", ""
	assert.NotEqual(t, k(paid, oldRun, ""), k(paid, newRun, ""))

	part := &restbackend.Payment{ID: paid.ID, State: restbackend.StatePartiallyRefunded}
	assert.NotEqual(t, k(part, newRun, "1/1000"), k(part, newRun, "2/2000"), "a second partial refund")
	assert.NotEqual(t, k(part, newRun, "2/2000"), k(part, newRun, "3/3000"), "a third partial refund")
	assert.Equal(t, k(part, newRun, "2/2000"), k(part, newRun, "2/2000"))
}
