package operations

// verified is what a request's signature told: which key signed it, in
// which charset, and the ledger's key for it.
type verified struct {
	// key is the secure key the signature verified with; replies to the
	// call are signed with it.
	key string
	// digest is what was signed, hashed with the merchant's current key
	// (digestOf): the ledger key of a money-moving call.
	digest  string
	charset Charset
}

// verify checks signature over one of alts (canonical first) with the
// merchant's secure key.
func (m Merchant) verify(signature string, alts ...[]string) (verified, bool) {
	i, cs, ok := verifyFields(m.SecureKey, signature, alts)
	if !ok {
		return verified{}, false
	}
	return verified{key: m.SecureKey, digest: digestOf(m.SecureKey, alts[i], cs), charset: cs}, true
}
