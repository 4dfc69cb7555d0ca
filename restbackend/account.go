package restbackend

import "fmt"

// Account is a merchant's identity at the gateway: its goid and the OAuth2
// client that acts for it. The bridge's merchants and the sandbox's
// registrations are both accounts.
type Account struct {
	GoID         int64  `yaml:"goid"`
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
	// PreviousClientSecret is the secret in force before ClientSecret,
	// kept while a rotation is under way (Credentials.PreviousSecret).
	PreviousClientSecret string `yaml:"previous_client_secret"`
}

// Problem is one invalid setting: Field is its configuration key, Msg says
// what is wrong without quoting a secret.
type Problem struct {
	Field string
	Msg   string
}

func (p Problem) Error() string { return p.Msg }

// Problems lists what is wrong with a, in field order.
func (a Account) Problems() []Problem {
	var ps []Problem
	if a.GoID <= 0 {
		ps = append(ps, Problem{"goid", "goid must be a positive integer"})
	}
	if a.ClientID == "" {
		ps = append(ps, Problem{"client_id", "client id missing"})
	}
	if a.ClientSecret == "" {
		ps = append(ps, Problem{"client_secret", "client secret missing"})
	}
	if a.PreviousClientSecret != "" && a.PreviousClientSecret == a.ClientSecret {
		ps = append(ps, Problem{"previous_client_secret", "previous client secret is the client secret itself: a rotation keeps the secret it replaces"})
	}
	return ps
}

// Validate returns the first problem of a, or nil.
func (a Account) Validate() error {
	if ps := a.Problems(); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// Credentials are the OAuth2 client credentials of a, the previous secret
// included.
func (a Account) Credentials() Credentials {
	return Credentials{ClientID: a.ClientID, ClientSecret: a.ClientSecret, PreviousSecret: a.PreviousClientSecret}
}

// String never shows the client secret.
func (a Account) String() string {
	return fmt.Sprintf("Account{goid:%d, client:%s, secret:***}", a.GoID, a.ClientID)
}

// GoString is String, so %#v does not show the secret either.
func (a Account) GoString() string { return a.String() }
