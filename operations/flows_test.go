package operations

import (
	"testing"

	"github.com/legacybridge/soapbridge/restbackend"
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
