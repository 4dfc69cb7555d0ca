package restbackend

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// decodePayment decodes a Payment reply (status, creation, recurrence)
// without encoding/json's reflection: one string for the whole body, whose
// unescaped values become the fields as substrings, and one block for the
// payer, contact, card, account, target, preauthorization, recurrence and
// EET structs, so a status reply costs a handful of allocations instead of
// some thirty.
//
// It takes only what it reads exactly as encoding/json would: the members
// of the types (exact names, each once), unknown members that no field
// name matches even without regard to case (skipped, after a full syntax
// check), strings (escapes decoded as encoding/json does, invalid UTF-8
// replaced), integers within int64, true and false. Anything else — null,
// a duplicate member, a name differing from a field's in case only, a
// float where an integer goes, nesting deeper than maxDepth, any syntax
// error — returns false, and the caller decodes the body with
// encoding/json, which then sets the fields or says what is wrong.
// FuzzDecodePayment holds the two to the same result.
func decodePayment(body []byte, p *Payment) bool {
	d := jdec{s: string(body)}
	if !d.payment(p) {
		return false
	}
	d.ws()
	return d.i == len(d.s)
}

// maxDepth bounds the nesting of skipped unknown members.
const maxDepth = 32

// paymentBlock holds the structs a Payment points to, allocated together
// on first use.
type paymentBlock struct {
	payer   Payer
	contact Contact
	card    PaymentCard
	bank    BankAccount
	target  Target
	preauth Preauthorization
	rec     Recurrence
	eet     EET
	// the payer's two string lists and additional_params, sliced to
	// their length and capacity (an append copies)
	strs   [8]string
	nstrs  int
	params [4]AdditionalParam
}

type jdec struct {
	s   string
	i   int
	blk *paymentBlock
}

func (d *jdec) block() *paymentBlock {
	if d.blk == nil {
		d.blk = new(paymentBlock)
	}
	return d.blk
}

func (d *jdec) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and tells whether the next byte is c, consuming it.
func (d *jdec) next(c byte) bool {
	d.ws()
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *jdec) peek() byte {
	d.ws()
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

// member reads the key of an object's next member and its colon; done
// when the object ends instead. n counts the members read so far.
func (d *jdec) member(n int) (key string, done, ok bool) {
	if d.next('}') {
		return "", true, true
	}
	if n > 0 && !d.next(',') {
		return "", false, false
	}
	if d.peek() != '"' {
		return "", false, false
	}
	start := d.i + 1
	end, raw, ok := d.scanString()
	if !ok || raw {
		return "", false, false // an escaped key: encoding/json's
	}
	if !d.next(':') {
		return "", false, false
	}
	return d.s[start:end], false, true
}

// once marks a member seen; false on its second appearance.
func once(seen *uint32, bit uint) bool {
	if *seen&(1<<bit) != 0 {
		return false
	}
	*seen |= 1 << bit
	return true
}

// unknown skips the value of a member named none of names; a name that
// matches one without regard to case is left to encoding/json.
func (d *jdec) unknown(key string, names []string) bool {
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return false
		}
	}
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return false
		}
	}
	return d.skip(0)
}

// scanString checks the string at d.i (its opening quote) and moves past
// it; end is the index of the closing quote, raw tells that the contents
// need decoding (escapes, invalid UTF-8).
func (d *jdec) scanString() (end int, raw, ok bool) {
	s := d.s
	for j := d.i + 1; j < len(s); {
		c := s[j]
		switch {
		case c == '"':
			d.i = j + 1
			return j, raw, true
		case c == '\\':
			raw = true
			if j+1 >= len(s) {
				return 0, false, false
			}
			switch s[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if hex4(s, j+2) < 0 {
					return 0, false, false
				}
				j += 6
			default:
				return 0, false, false
			}
		case c < 0x20:
			return 0, false, false
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRuneInString(s[j:])
			if r == utf8.RuneError && size == 1 {
				raw = true
			}
			j += size
		}
	}
	return 0, false, false
}

// hex4 is the value of the four hex digits at s[i:], or -1.
func hex4(s string, i int) rune {
	if i+4 > len(s) {
		return -1
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// str reads a string value.
func (d *jdec) str() (string, bool) {
	if d.peek() != '"' {
		return "", false
	}
	start := d.i + 1
	end, raw, ok := d.scanString()
	if !ok {
		return "", false
	}
	if !raw {
		return d.s[start:end], true
	}
	return unquote(d.s[start:end]), true
}

// unquote decodes the contents of a string scanString has checked, as
// encoding/json's unquote does: a lone or mismatched surrogate and an
// invalid UTF-8 byte become U+FFFD.
func unquote(s string) string {
	b := make([]byte, 0, len(s)+utf8.UTFMax)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			e := s[i+1]
			i += 2
			switch e {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(s, i)
				i += 4
				if utf16.IsSurrogate(r) {
					if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(s, i+2)); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, r)
			default: // '"', '\\', '/'
				b = append(b, e)
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			b = utf8.AppendRune(b, r)
			i += size
		}
	}
	return string(b)
}

// int64 reads an integer that fits an int64 (no fraction, no exponent:
// encoding/json refuses those for an integer field).
func (d *jdec) int64() (int64, bool) {
	d.ws()
	s := d.s
	j := d.i
	if j < len(s) && s[j] == '-' {
		j++
	}
	switch {
	case j >= len(s) || s[j] < '0' || s[j] > '9':
		return 0, false
	case s[j] == '0':
		j++
	default:
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
	}
	if j < len(s) && (s[j] == '.' || s[j] == 'e' || s[j] == 'E' || (s[j] >= '0' && s[j] <= '9')) {
		return 0, false
	}
	n, err := strconv.ParseInt(s[d.i:j], 10, 64)
	if err != nil {
		return 0, false
	}
	d.i = j
	return n, true
}

func (d *jdec) literal(lit string) bool {
	d.ws()
	if !strings.HasPrefix(d.s[d.i:], lit) {
		return false
	}
	d.i += len(lit)
	return true
}

func (d *jdec) bool() (bool, bool) {
	switch d.peek() {
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	}
	return false, false
}

// strings reads an array of strings.
func (d *jdec) strings() ([]string, bool) {
	if !d.next('[') {
		return nil, false
	}
	var tmp [16]string
	n := 0
	for !d.next(']') {
		if n > 0 && !d.next(',') {
			return nil, false
		}
		if n == len(tmp) {
			return nil, false
		}
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		tmp[n] = s
		n++
	}
	b := d.block()
	var out []string
	if b.nstrs+n <= len(b.strs) {
		out = b.strs[b.nstrs : b.nstrs+n : b.nstrs+n]
		b.nstrs += n
	} else {
		out = make([]string, n)
	}
	copy(out, tmp[:n])
	return out, true
}

// skip checks and skips any value.
func (d *jdec) skip(depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch c := d.peek(); {
	case c == '"':
		_, _, ok := d.scanString()
		return ok
	case c == '{':
		d.i++
		for n := 0; ; n++ {
			_, done, ok := d.member(n)
			if !ok {
				return false
			}
			if done {
				return true
			}
			if !d.skip(depth + 1) {
				return false
			}
		}
	case c == '[':
		d.i++
		for n := 0; !d.next(']'); n++ {
			if n > 0 && !d.next(',') {
				return false
			}
			if !d.skip(depth + 1) {
				return false
			}
		}
		return true
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return false
}

// number skips a JSON number.
func (d *jdec) number() bool {
	s := d.s
	j := d.i
	digits := func() bool {
		k := j
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j > k
	}
	if s[j] == '-' {
		j++
	}
	if j < len(s) && s[j] == '0' {
		j++
	} else if !digits() {
		return false
	}
	if j < len(s) && s[j] == '.' {
		j++
		if !digits() {
			return false
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if !digits() {
			return false
		}
	}
	d.i = j
	return true
}

var paymentNames = []string{"id", "parent_id", "order_number", "state", "sub_state", "amount", "currency",
	"payment_instrument", "payer", "target", "additional_params", "lang", "recurrence", "preauthorization", "eet", "gw_url"}

func (d *jdec) payment(p *Payment) bool {
	return d.object(paymentNames, func(i int) (ok bool) {
		switch paymentNames[i] {
		case "id":
			p.ID, ok = d.int64()
		case "parent_id":
			p.ParentID, ok = d.int64()
		case "order_number":
			p.OrderNumber, ok = d.str()
		case "state":
			p.State, ok = d.str()
		case "sub_state":
			p.SubState, ok = d.str()
		case "amount":
			p.Amount, ok = d.int64()
		case "currency":
			p.Currency, ok = d.str()
		case "payment_instrument":
			p.PaymentInstrument, ok = d.str()
		case "payer":
			ok = d.payer(&d.block().payer)
			if ok {
				p.Payer = &d.blk.payer
			}
		case "target":
			ok = d.target(&d.block().target)
			if ok {
				p.Target = &d.blk.target
			}
		case "additional_params":
			p.AdditionalParams, ok = d.params()
		case "lang":
			p.Lang, ok = d.str()
		case "recurrence":
			ok = d.recurrence(&d.block().rec)
			if ok {
				p.Recurrence = &d.blk.rec
			}
		case "preauthorization":
			ok = d.preauth(&d.block().preauth)
			if ok {
				p.Preauthorization = &d.blk.preauth
			}
		case "eet":
			ok = d.eet(&d.block().eet)
			if ok {
				p.EET = &d.blk.eet
			}
		case "gw_url":
			p.GwURL, ok = d.str()
		}
		return ok
	})
}

var payerNames = []string{"allowed_payment_instruments", "default_payment_instrument", "allowed_swifts", "default_swift",
	"contact", "verify_pin", "allowed_card_token", "request_card_token", "payment_card", "bank_account"}

func (d *jdec) payer(p *Payer) bool {
	return d.object(payerNames, func(i int) (ok bool) {
		switch payerNames[i] {
		case "allowed_payment_instruments":
			p.AllowedPaymentInstruments, ok = d.strings()
		case "default_payment_instrument":
			p.DefaultPaymentInstrument, ok = d.str()
		case "allowed_swifts":
			p.AllowedSwifts, ok = d.strings()
		case "default_swift":
			p.DefaultSwift, ok = d.str()
		case "contact":
			ok = d.contact(&d.block().contact)
			if ok {
				p.Contact = &d.blk.contact
			}
		case "verify_pin":
			p.VerifyPin, ok = d.str()
		case "allowed_card_token":
			p.AllowedCardToken, ok = d.str()
		case "request_card_token":
			p.RequestCardToken, ok = d.bool()
		case "payment_card":
			ok = d.card(&d.block().card)
			if ok {
				p.PaymentCard = &d.blk.card
			}
		case "bank_account":
			ok = d.bank(&d.block().bank)
			if ok {
				p.BankAccount = &d.blk.bank
			}
		}
		return ok
	})
}

// object reads an object whose known members are names: value(i) reads
// the value of the member named names[i], each at most once (a duplicate
// is encoding/json's); a member named none of them is skipped (unknown).
func (d *jdec) object(names []string, value func(i int) bool) bool {
	if !d.next('{') {
		return false
	}
	var seen uint32
	for n := 0; ; n++ {
		key, done, ok := d.member(n)
		if !ok {
			return false
		}
		if done {
			return true
		}
		if i := slices.Index(names, key); i < 0 {
			ok = d.unknown(key, names)
		} else {
			ok = once(&seen, uint(i)) && value(i)
		}
		if !ok {
			return false
		}
	}
}

// stringMembers reads an object whose members are all strings: fields[i]
// is the member named names[i].
func (d *jdec) stringMembers(names []string, fields []*string) bool {
	return d.object(names, func(i int) (ok bool) {
		*fields[i], ok = d.str()
		return ok
	})
}

var contactNames = []string{"first_name", "last_name", "email", "phone_number", "city", "street", "postal_code", "country_code"}

func (d *jdec) contact(c *Contact) bool {
	return d.stringMembers(contactNames, []*string{&c.FirstName, &c.LastName, &c.Email, &c.PhoneNumber,
		&c.City, &c.Street, &c.PostalCode, &c.CountryCode})
}

var cardNames = []string{"card_number", "card_expiration", "card_brand", "card_issuer_country", "card_issuer_bank",
	"3ds_result", "card_token"}

func (d *jdec) card(c *PaymentCard) bool {
	return d.stringMembers(cardNames, []*string{&c.CardNumber, &c.CardExpiration, &c.CardBrand,
		&c.CardIssuerCountry, &c.CardIssuerBank, &c.ThreeDSResult, &c.CardToken})
}

var bankNames = []string{"iban", "bic", "prefix", "account_number", "bank_code", "account_name"}

func (d *jdec) bank(b *BankAccount) bool {
	return d.stringMembers(bankNames, []*string{&b.IBAN, &b.BIC, &b.PrefixNumber, &b.AccountNumber,
		&b.BankCode, &b.AccountName})
}

var targetNames = []string{"type", "goid"}

func (d *jdec) target(t *Target) bool {
	return d.object(targetNames, func(i int) (ok bool) {
		switch targetNames[i] {
		case "type":
			t.Type, ok = d.str()
		case "goid":
			t.GoID, ok = d.int64()
		}
		return ok
	})
}

// params reads additional_params.
func (d *jdec) params() ([]AdditionalParam, bool) {
	if !d.next('[') {
		return nil, false
	}
	var tmp [8]AdditionalParam
	n := 0
	for !d.next(']') {
		if n > 0 && !d.next(',') {
			return nil, false
		}
		if n == len(tmp) || !d.stringMembers(paramNames, []*string{&tmp[n].Name, &tmp[n].Value}) {
			return nil, false
		}
		n++
	}
	var out []AdditionalParam
	if b := d.block(); n <= len(b.params) {
		out = b.params[:n:n]
	} else {
		out = make([]AdditionalParam, n)
	}
	copy(out, tmp[:n])
	return out, true
}

var paramNames = []string{"name", "value"}

var recurrenceNames = []string{"recurrence_cycle", "recurrence_period", "recurrence_date_to", "recurrence_state"}

func (d *jdec) recurrence(r *Recurrence) bool {
	return d.object(recurrenceNames, func(i int) (ok bool) {
		switch recurrenceNames[i] {
		case "recurrence_cycle":
			r.RecurrenceCycle, ok = d.str()
		case "recurrence_period":
			r.RecurrencePeriod, ok = d.int64()
		case "recurrence_date_to":
			r.RecurrenceDateTo, ok = d.str()
		case "recurrence_state":
			r.RecurrenceState, ok = d.str()
		}
		return ok
	})
}

var preauthNames = []string{"requested", "state"}

func (d *jdec) preauth(p *Preauthorization) bool {
	return d.object(preauthNames, func(i int) (ok bool) {
		switch preauthNames[i] {
		case "requested":
			p.Requested, ok = d.bool()
		case "state":
			p.State, ok = d.str()
		}
		return ok
	})
}

var eetNames = []string{"celk_trzba", "zakl_dan1", "dan1", "zakl_dan2", "dan2", "mena"}

func (d *jdec) eet(e *EET) bool {
	ints := [...]*int64{&e.CelkTrzba, &e.ZaklDan1, &e.Dan1, &e.ZaklDan2, &e.Dan2}
	return d.object(eetNames, func(i int) (ok bool) {
		if i < len(ints) {
			*ints[i], ok = d.int64()
		} else {
			e.Mena, ok = d.str()
		}
		return ok
	})
}
