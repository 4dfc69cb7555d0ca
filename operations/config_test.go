package operations

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Validate reports every problem of the core's settings at once, each under
// the key path a command maps to its file key, variable and flag, and
// normalizes the merchants.
func TestValidateNamesEachProblemsKey(t *testing.T) {
	const secret = "very-secret-client-value"
	short := testMerchant()
	short.SecureKey, short.ClientSecret = "short-"+secret[:4], secret
	lower := testMerchant()
	lower.GoID, lower.Currency, lower.Lang = 8000000001, "eur", "sk"
	cfg := Config{
		Merchants:    []Merchant{testMerchant(), short, {}, lower},
		DefaultGoID:  42,
		CallDeadline: 10 * time.Second,
		PublicURL:    "https://admin:" + secret + "@bridge.example",
	}
	ps := cfg.Validate(10 * time.Second)
	var keys []string
	for _, p := range ps {
		keys = append(keys, p.Key)
		assert.NotContains(t, p.Msg, secret)
		assert.NotContains(t, p.Msg, testSecureKey)
	}
	assert.Equal(t, []string{
		"merchants[1].secure_key", "merchants[1].goid",
		"merchants[2].goid", "merchants[2].client_id", "merchants[2].client_secret", "merchants[2].secure_key",
		"default_goid", "call_deadline", "public_url",
	}, keys)
	assert.Equal(t, "configured twice", ps[1].Msg)
	assert.True(t, strings.HasPrefix(ps[7].Msg, "call deadline 10s must be longer than the REST timeout 10s"))
	assert.Equal(t, "public_url: public URL: must not carry user info, a fragment or a query", ps[8].Error())
	assert.Equal(t, "EUR", cfg.Merchants[3].Currency, "normalized in place")
	assert.Equal(t, DefaultReplayWindow, cfg.Merchants[3].ReplayWindow)

	ok := unitConfig(t)
	ok.CallDeadline = DefaultCallDeadline
	assert.Empty(t, ok.Validate(10*time.Second))
	ok.CallDeadline = 0
	assert.Equal(t, []Problem{{"call_deadline", "call deadline must be positive"}}, ok.Validate(10*time.Second), "New fills the default, Validate does not")
}

// TestCallDeadlineFor: the default deadline is DefaultCallDeadline, and
// over any REST timeout, so a money-moving POST can always start; the
// configuration's default passes Validate whatever the REST timeout.
func TestCallDeadlineFor(t *testing.T) {
	assert.Equal(t, DefaultCallDeadline, CallDeadlineFor(10*time.Second))
	assert.Equal(t, 40*time.Second+DefaultCallDeadline/2, CallDeadlineFor(40*time.Second))
	for _, rest := range []time.Duration{time.Second, DefaultCallDeadline, time.Minute} {
		ok := unitConfig(t)
		ok.CallDeadline = CallDeadlineFor(rest)
		assert.Empty(t, ok.Validate(rest), "REST timeout %v", rest)
	}
}
