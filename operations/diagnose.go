package operations

import (
	"bytes"
	"context"
	"crypto/des"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/text/encoding/charmap"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/internal/reqid"
	"github.com/legacybridge/soapbridge/operations/usage"
)

// Why a call was refused. Every refused call's log line ("request
// refused", keyed by the request id the reply carries in X-Request-Id)
// carries a reason code from a small fixed set (reason_code) and, for a
// signature, the diagnosis in words a support person can act on (why) and
// the legacy field at fault (field). Nothing of it reaches the caller: the
// reply stays the generic refusal, so the diagnosis is no oracle for forging
// signatures; and nothing of the key, the hash or the decrypted text is
// logged.
//
// The bridge can diagnose a signature because it holds the keys: Triple DES
// decryption with a key yields the 40 hex digits of a SHA-1 only when the
// key is the one that encrypted it, so "wrong key" and "right key, other
// values" are told apart at once; for the second the usual variants are
// tried field by field (bounded, maxDiagHashes) and the one that verifies
// is named. Diagnosis runs only on refusal, and at most diagRate per second
// per Service (a burst of diagBurst): beyond, the reason is not_diagnosed,
// so a flood of forged calls cannot turn it into a CPU sink.

// Refusal reason codes: the `reason` label of the refusal counters, so a
// fixed set (RefusalReasons).
const (
	// The signature: its form.
	ReasonSignatureMissing      = "signature_missing"       // no or an empty encryptedSignature
	ReasonSignatureMalformed    = "signature_malformed"     // not hex, or not whole 8-byte blocks
	ReasonSignatureNotEncrypted = "signature_not_encrypted" // the plain SHA-1 hex, never encrypted
	// The signature: its key.
	ReasonKeyOtherMerchant   = "key_other_merchant"   // another configured merchant's key
	ReasonKeyUnknown         = "key_unknown"          // no key of this merchant (nor of any configured one)
	ReasonKeyPreviousExpired = "key_previous_expired" // the previous key, past previous_until
	// The signature: the right key over other values.
	ReasonAmountUnits    = "value_amount_units"    // an amount ×100 or ÷100 (crowns for hellers)
	ReasonFloatString    = "value_float_string"    // an id as a float string (PHP's 8.123456789E+9)
	ReasonWhitespace     = "value_whitespace"      // a value trimmed or untrimmed
	ReasonOtherGoID      = "value_other_goid"      // another configured merchant's goid signed
	ReasonOtherOperation = "value_other_operation" // another operation's field list
	ReasonCharset        = "value_charset"         // hashed in another charset
	ReasonSessionDiffers = "value_session_differs" // another payment's session id
	ReasonValuesDiffer   = "value_differs"         // right key, no usual variant verifies
	ReasonNotDiagnosed   = "not_diagnosed"         // over the diagnosis rate
	// Other refusals.
	ReasonUnknownMerchant = "unknown_merchant" // a goid no merchant has
	ReasonInvalidRequest  = "invalid_request"  // missing or invalid values
	ReasonGatewayRefused  = "gateway_refused"  // the gateway refused the verified call
	ReasonReplay          = "replay"           // a repeat of a money call in progress or in doubt (a Server fault)
)

// RefusalReasons are every reason code, the access rules' included
// (access.Reason*): the label values of the refusal counters.
func RefusalReasons() []string {
	return []string{
		ReasonSignatureMissing, ReasonSignatureMalformed, ReasonSignatureNotEncrypted,
		ReasonKeyOtherMerchant, ReasonKeyUnknown, ReasonKeyPreviousExpired,
		ReasonAmountUnits, ReasonFloatString, ReasonWhitespace, ReasonOtherGoID, ReasonOtherOperation,
		ReasonCharset, ReasonSessionDiffers, ReasonValuesDiffer, ReasonNotDiagnosed,
		ReasonUnknownMerchant, ReasonInvalidRequest, ReasonGatewayRefused, ReasonReplay,
		access.ReasonNetwork, access.ReasonNoCredentials, access.ReasonWrongCredentials, access.ReasonBlocked,
		access.ReasonRateLimited,
	}
}

// Diagnosis is why a call was refused.
type Diagnosis struct {
	Code  string // a RefusalReasons code
	Field string // the legacy name of the field at fault; "" when none is
	Text  string // for a support person; names no secret and no customer data
}

// Refusal is a refused call as Config.OnRefusal is told of it (metrics,
// the status page): no customer data, no signature text.
type Refusal struct {
	At        time.Time
	GoID      int64 // the configured merchant; 0 when the call named none the bridge knows
	Operation string
	Reason    string // a RefusalReasons code
	Field     string // the legacy field at fault, "" none
	RequestID string
}

// Bounds of the diagnosis.
const (
	diagRate  = 20 // diagnoses per second per Service, sustained
	diagBurst = 40
	// maxDiagHashes caps the SHA-1s one diagnosis computes over variants;
	// maxDiagKeys the other merchants' keys it decrypts with.
	maxDiagHashes = 160
	maxDiagKeys   = 64
)

// whyState is a Service's share of the diagnosis: the budget and the hook.
type whyState struct {
	mu        sync.Mutex
	tokens    float64
	last      time.Time
	now       func() time.Time // the budget's clock; time.Now when nil
	onRefusal func(Refusal)
}

// take takes one diagnosis from the budget.
func (w *whyState) take() bool {
	now := time.Now
	if w.now != nil {
		now = w.now
	}
	t := now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last.IsZero() {
		w.tokens = diagBurst
	} else if d := t.Sub(w.last); d > 0 {
		w.tokens = min(diagBurst, w.tokens+d.Seconds()*diagRate)
	}
	w.last = t
	if w.tokens < 1 {
		return false
	}
	w.tokens--
	return true
}

// signedRequest is what a refused signature was sent over: kept on the
// refusal for its diagnosis.
type signedRequest struct {
	sig  string
	alts [][]string
}

// badSignatureOf is the refusal of a request whose signature did not
// verify, carrying what it was sent over for the diagnosis.
func badSignatureOf(a auth) *refusal {
	r := badSignature(a.part)
	r.signed = &signedRequest{sig: a.sig, alts: a.signed}
	return r
}

// explain says why c was refused: the log line's fields (reason_code, and
// why and field when there is more to say), and the refusal as OnRefusal
// is told of it.
func (c *call) explain(r *refusal) []zap.Field {
	d := c.s.why(c, r)
	fs := []zap.Field{zap.String("reason_code", d.Code)}
	if d.Text != "" {
		fs = append(fs, zap.String("why", d.Text))
	}
	if d.Field != "" {
		fs = append(fs, zap.String("field", d.Field))
	}
	var goid int64
	if c.known {
		goid = c.m.GoID
	}
	c.s.NoteRefusal(c.ctx, c.op, goid, d.Code, d.Field)
	return fs
}

// replayRefused notes a repeat of c's money call refused while the first
// (or another refund of the payment) is in progress or in doubt, and is
// the reason_code of its log line.
func (c *call) replayRefused() zap.Field {
	var goid int64
	if c.known {
		goid = c.m.GoID
	}
	c.s.NoteRefusal(c.ctx, c.op, goid, ReasonReplay, "")
	return zap.String("reason_code", ReasonReplay)
}

// NoteRefusal tells OnRefusal of a refused call of op for goid (0: none
// configured); the SOAP adapter tells it of the calls its access rules
// refuse.
func (s *Service) NoteRefusal(ctx context.Context, op string, goid int64, reason, field string) {
	if s.diag.onRefusal == nil {
		return
	}
	if _, ok := s.merchant(ctx, goid); !ok {
		goid = 0
	}
	var id string
	if ctx != nil {
		id = reqid.From(ctx)
	}
	s.diag.onRefusal(Refusal{At: s.now(), GoID: goid, Operation: op, Reason: reason, Field: field, RequestID: id})
}

// why is the diagnosis of c's refusal r.
func (s *Service) why(c *call, r *refusal) Diagnosis {
	switch {
	case r.code != "":
		return Diagnosis{Code: r.code}
	case r.badSig && r.signed != nil:
		if !s.diag.take() {
			return Diagnosis{Code: ReasonNotDiagnosed, Text: "not diagnosed (rate): more refused signatures than the bridge explains per second"}
		}
		return s.diagnose(s.set(c.ctx), c.op, c.m, r.signed.sig, r.signed.alts)
	case r.badSig:
		return Diagnosis{Code: ReasonNotDiagnosed, Text: "not diagnosed"}
	case c.goid != nil && !c.known:
		return Diagnosis{Code: ReasonUnknownMerchant}
	}
	return Diagnosis{Code: ReasonInvalidRequest}
}

// Signature kinds: the field lists of the legacy protocol by legacy name,
// and the operations (and browser flows) that sign each.
type sigKind struct {
	name   string
	ops    []string
	fields []string
}

var commandFieldNames = []string{"targetGoId", "productName", "totalPrice", "currency", "orderNumber", "failedURL", "successURL",
	"preAuthorization", "recurrentPayment", "recurrenceDateTo", "recurrenceCycle", "recurrencePeriod", "paymentChannels"}

var sigKinds = []sigKind{
	{"paymentSession", []string{"paymentStatus", "paymentStatusWCust", "capturePayment", "voidAuthorization", "voidRecurrentPayment",
		"refundPayment", usage.FlowPayFull}, []string{"targetGoId", "paymentSessionId"}},
	{"refundRequest", []string{"refundPayment", "partiallyRefundPayment"},
		[]string{"targetGoId", "paymentSessionId", "amount", "currency", "description"}},
	{"recurrenceRequest", []string{"createRecurrentPayment"},
		[]string{"parentPaymentSessionId", "targetGoId", "orderNumber", "totalPrice"}},
	{"paymentCommand", []string{"createPayment", usage.FlowPayBase}, commandFieldNames},
	{"buyerCreate", []string{"createBuyer"}, []string{"eshopGoId", "buyerUsername", "buyerEmail"}},
	{"statementRequest", []string{usage.FlowStatement}, []string{"dateFrom", "dateTo", "goid", "currency"}},
	// What the bridge signs returns and notifications with: a shop that
	// signs its requests as it verifies those.
	{"paymentIdentity", nil, []string{"targetGoId", "paymentSessionId", "parentPaymentSessionId", "orderNumber"}},
}

// kindOf is the kind op signs with n fields, and the field names (a
// shorter list, the statement without currency, takes the first n).
func kindOf(op string, n int) (sigKind, []string) {
	for _, k := range sigKinds {
		if slices.Contains(k.ops, op) && len(k.fields) >= n && (len(k.fields) == n || k.name == "statementRequest") {
			return k, k.fields[:n]
		}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = "field " + strconv.Itoa(i+1)
	}
	return sigKind{}, names
}

// concept is what a field means across kinds: the goid and the amount have
// several names.
func concept(name string) string {
	switch name {
	case "targetGoId", "eshopGoId", "goid":
		return "goid"
	case "totalPrice", "amount":
		return "amount"
	}
	return name
}

// diagnose says why sig does not verify as m's signature over alts
// (canonical first) for op. It is bounded (maxDiagKeys, maxDiagHashes).
func (s *Service) diagnose(set *MerchantSet, op string, m Merchant, sig string, alts [][]string) Diagnosis {
	sig = strings.TrimSpace(sig)
	if sig == "" {
		return Diagnosis{Code: ReasonSignatureMissing, Field: "encryptedSignature",
			Text: "encryptedSignature is missing or empty: the shop must sign the request (the fields and its secure key joined with |, SHA-1, encrypted with Triple DES, as hex)"}
	}
	raw, err := hex.DecodeString(sig)
	if err != nil {
		return Diagnosis{Code: ReasonSignatureMalformed, Field: "encryptedSignature",
			Text: fmt.Sprintf("encryptedSignature is not hexadecimal (%d characters): the shop must send the encrypted SHA-1 as hex digits", len(sig))}
	}
	if len(raw) == sha1.Size {
		over := "not over the fields as sent either"
		for _, key := range []string{m.SecureKey, m.PreviousSecureKey} {
			for _, f := range alts {
				if key != "" && strings.EqualFold(sig, hashHex(key, f)) {
					over = "over the right fields and key"
				}
			}
		}
		return Diagnosis{Code: ReasonSignatureNotEncrypted, Field: "encryptedSignature",
			Text: "encryptedSignature is a plain SHA-1 hex (40 digits, " + over + "): the shop must encrypt the hash with Triple DES under its secure key before sending it"}
	}
	if len(raw)%des.BlockSize != 0 {
		return Diagnosis{Code: ReasonSignatureMalformed, Field: "encryptedSignature",
			Text: fmt.Sprintf("encryptedSignature has %d hex digits, not whole 8-byte Triple DES blocks (80 or 96 expected): it is cut or padded wrongly", len(sig))}
	}
	now := s.now()
	for _, key := range []string{m.SecureKey, m.PreviousSecureKey} {
		h, ok := decryptsToHash(key, raw)
		if !ok {
			continue
		}
		if key == m.PreviousSecureKey && !m.previousKeyInForce(now) {
			until := "its previous_until"
			if !m.keyEnds.IsZero() {
				until = m.keyEnds.UTC().Format(time.RFC3339)
			}
			return Diagnosis{Code: ReasonKeyPreviousExpired, Field: "encryptedSignature",
				Text: "signed with the merchant's previous secure key, accepted only until " + until +
					" (previous_until, or 30 days after the bridge first saw it): the shop must sign with its current secure key"}
		}
		return s.diagnoseValues(set, op, m, key, h, alts)
	}
	tried := 0
	for _, o := range otherMerchants(set, m.GoID) {
		for _, key := range []string{o.SecureKey, o.PreviousSecureKey} {
			if key == "" || tried == maxDiagKeys {
				continue
			}
			tried++
			if _, ok := decryptsToHash(key, raw); ok {
				return Diagnosis{Code: ReasonKeyOtherMerchant, Field: "encryptedSignature",
					Text: fmt.Sprintf("signed with the secure key of another merchant configured here (goid %d): the shop copied the wrong merchant's key; it must sign with the secure key of goid %d", o.GoID, m.GoID)}
			}
		}
	}
	return Diagnosis{Code: ReasonKeyUnknown, Field: "encryptedSignature",
		Text: fmt.Sprintf("signed with no secure key of goid %d (nor of any merchant configured here): the shop's secure key is wrong or mistyped, or the call is forged; compare the shop's key with secure_key of goid %d", m.GoID, m.GoID)}
}

// otherMerchants are the merchants of set (the one the call pinned, not
// the one in force now) but goid, the first maxDiagKeys by goid (a
// diagnosis tries them in a fixed order).
func otherMerchants(set *MerchantSet, goid int64) []Merchant {
	goids := make([]int64, 0, len(set.byGoID))
	for g := range set.byGoID {
		if g != goid {
			goids = append(goids, g)
		}
	}
	slices.Sort(goids)
	out := make([]Merchant, 0, min(len(goids), maxDiagKeys))
	for _, g := range goids[:min(len(goids), maxDiagKeys)] {
		out = append(out, set.byGoID[g])
	}
	return out
}

// decryptsToHash reports whether raw decrypts under key to the 40 hex
// digits of a SHA-1, the sign that key encrypted it; and that hex in lower
// case. The trailing bytes verify strips are stripped.
func decryptsToHash(key string, raw []byte) (string, bool) {
	block, err := tripleDES(key)
	if err != nil {
		return "", false
	}
	plain := make([]byte, len(raw))
	// The first block tells a wrong key at once: 8 random bytes are all
	// hex digits once in 3·10⁸.
	block.Decrypt(plain[:des.BlockSize], raw[:des.BlockSize])
	if !isHex(plain[:des.BlockSize]) {
		return "", false
	}
	ecb(block, plain[des.BlockSize:], raw[des.BlockSize:], block.Decrypt)
	plain = bytes.TrimRightFunc(plain, func(r rune) bool { return r <= ' ' })
	if len(plain) != 2*sha1.Size || !isHex(plain) {
		return "", false
	}
	return strings.ToLower(string(plain)), true
}

func isHex(p []byte) bool {
	for _, b := range p {
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F') {
			return false
		}
	}
	return true
}

// variant is one list of fields a shop may have signed instead, and what
// to say when it verifies.
type variant struct {
	fields []string
	enc    func(string) ([]byte, bool) // the charset; UTF-8 when nil
	code   string
	field  string
	text   string
}

// diagnoseValues: key is right (it decrypts sig to hash), so the shop
// hashed other values; try the usual variants of alts, at most
// maxDiagHashes, and name the first that verifies.
func (s *Service) diagnoseValues(set *MerchantSet, op string, m Merchant, key, hash string, alts [][]string) Diagnosis {
	if len(alts) == 0 {
		return Diagnosis{Code: ReasonValuesDiffer, Text: "signed with the right secure key over other values"}
	}
	kind, names := kindOf(op, len(alts[0]))
	vs := valueVariants(kind, names, alts, otherMerchants(set, m.GoID))
	n := 0
	for _, v := range vs {
		if n == maxDiagHashes {
			break
		}
		n++
		b := []byte(joinFields(key, v.fields...))
		if v.enc != nil {
			var ok bool
			if b, ok = v.enc(string(b)); !ok {
				continue
			}
		}
		sum := sha1.Sum(b)
		if hex.EncodeToString(sum[:]) == hash {
			return Diagnosis{Code: v.code, Field: v.field, Text: "signed with the right secure key, but " + v.text}
		}
	}
	for i, name := range names {
		if name == "paymentSessionId" && kind.name == "paymentSession" {
			return Diagnosis{Code: ReasonSessionDiffers, Field: names[i],
				Text: "signed with the right secure key over another paymentSessionId: the signature was made for another payment (copied or cached); the shop must sign each call with the payment's own session id"}
		}
	}
	return Diagnosis{Code: ReasonValuesDiffer,
		Text: fmt.Sprintf("signed with the right secure key over other values; none of the %d usual variants verifies: compare the shop's field list and order (%s) with the protocol's", n, strings.Join(names, "|"))}
}

// valueVariants are the variants a diagnosis tries, most telling first:
// one field at a time, then the whole list in another charset, then
// another operation's field list.
func valueVariants(kind sigKind, names []string, alts [][]string, others []Merchant) []variant {
	canon := alts[0]
	var vs []variant
	one := func(i int, val, code, text string) {
		f := slices.Clone(canon)
		f[i] = val
		vs = append(vs, variant{fields: f, code: code, field: names[i], text: names[i] + " " + text})
	}
	for i, name := range names {
		v := canon[i]
		switch concept(name) {
		case "amount":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				if n%100 == 0 {
					one(i, strconv.FormatInt(n/100, 10), ReasonAmountUnits, "was signed as the amount ÷100 (in crowns, the value sent is in hellers): the shop must sign the amount it sends, in hellers")
				}
				one(i, fmt.Sprintf("%d.%02d", n/100, n%100), ReasonAmountUnits, "was signed as a decimal amount ÷100 (crowns with a decimal point): the shop must sign the amount it sends, in hellers, as an integer")
				if n < 1<<56 {
					one(i, strconv.FormatInt(n*100, 10), ReasonAmountUnits, "was signed as the amount ×100 (the value sent is in crowns, the signed one in hellers): the shop must send and sign the same amount, in hellers")
				}
			}
		case "goid", "paymentSessionId", "parentPaymentSessionId":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				for _, f := range floatStrings(n) {
					one(i, f, ReasonFloatString, "was signed as a float string ("+floatShape(f)+"): the shop must sign it as an integer (in PHP a string or (string)(int), never a float)")
				}
			}
			if concept(name) == "goid" {
				for j, o := range others {
					if j == 8 {
						break
					}
					one(i, strconv.FormatInt(o.GoID, 10), ReasonOtherGoID, fmt.Sprintf("was signed as goid %d, another merchant configured here: the shop must sign the goid it sends", o.GoID))
				}
			}
		}
		if t := trim(v); t != v {
			one(i, t, ReasonWhitespace, "was signed trimmed of surrounding whitespace and sent with it: the shop must send the value it signs (trim it before sending)")
		}
		if len(alts) > 1 && len(alts[1]) == len(canon) && alts[1][i] != v {
			one(i, alts[1][i], ReasonWhitespace, "was signed with its surrounding whitespace while the others were trimmed: the shop must trim it before signing (or send it trimmed)")
		}
		if v != "" && trim(v) == v && !isNumeric(v) {
			one(i, v+" ", ReasonWhitespace, "was signed with a trailing space it was not sent with: the shop must sign the value it sends")
			one(i, v+"\n", ReasonWhitespace, "was signed with a trailing line break it was not sent with: the shop must sign the value it sends")
		}
	}
	if nonASCII := firstNonASCII(names, canon); nonASCII != "" {
		for _, cs := range []struct {
			name string
			cm   *charmap.Charmap
		}{{"ISO-8859-2", charmap.ISO8859_2}, {"windows-1252", charmap.Windows1252}, {"ISO-8859-1", charmap.ISO8859_1}} {
			cm := cs.cm
			for _, f := range alts {
				vs = append(vs, variant{fields: f, code: ReasonCharset, field: nonASCII,
					enc: func(s string) ([]byte, bool) {
						b, err := cm.NewEncoder().String(s)
						return []byte(b), err == nil
					},
					text: "the text was hashed in " + cs.name + " (" + nonASCII + " has non-ASCII characters): the shop must hash the joined text in UTF-8 (or windows-1250)"})
			}
		}
	}
	vals := map[string]string{}
	for i, name := range names {
		vals[concept(name)] = canon[i]
	}
	for _, k := range sigKinds {
		if k.name == kind.name || k.name == "paymentCommand" || k.name == "statementRequest" {
			continue
		}
		f, ok := fieldsOf(k, vals)
		if !ok || slices.Equal(f, canon) {
			continue
		}
		vs = append(vs, variant{fields: f, code: ReasonOtherOperation, text: "over the field list of another operation (" + k.name + ": " +
			strings.Join(k.fields, "|") + "): the shop must sign " + strings.Join(names, "|")})
	}
	return vs
}

// fieldsOf is k's field list filled from vals (by concept); false when a
// value k needs is not known. A session id stands for a parent and back;
// description and parentPaymentSessionId may be empty.
func fieldsOf(k sigKind, vals map[string]string) ([]string, bool) {
	f := make([]string, len(k.fields))
	for i, name := range k.fields {
		c := concept(name)
		v, ok := vals[c]
		switch {
		case ok:
		case c == "paymentSessionId":
			v, ok = vals["parentPaymentSessionId"]
		case c == "parentPaymentSessionId" && k.name == "recurrenceRequest":
			v, ok = vals["paymentSessionId"]
		case c == "parentPaymentSessionId", c == "description":
			v, ok = "", true
		}
		if !ok {
			return nil, false
		}
		f[i] = v
	}
	return f, true
}

// floatStrings are n as float strings legacy clients produce: PHP's
// (8.123456789E+9), Java's Double.toString (8.123456789E9) and a plain
// float (8123456789.0).
func floatStrings(n int64) []string {
	e := strconv.FormatFloat(float64(n), 'E', -1, 64) // 8.123456789E+09
	mant, exp, _ := strings.Cut(e, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	x, _ := strconv.Atoi(exp)
	return []string{mant + "E+" + strconv.Itoa(x), mant + "E" + strconv.Itoa(x), strconv.FormatInt(n, 10) + ".0"}
}

// floatShape describes a float string without its digits.
func floatShape(f string) string {
	switch {
	case strings.Contains(f, "E+"):
		return "PHP's d.dddE+N form"
	case strings.Contains(f, "E"):
		return "Java's d.dddEN form"
	}
	return "with a trailing .0"
}

func isNumeric(v string) bool {
	_, err := strconv.ParseInt(v, 10, 64)
	return err == nil
}

// firstNonASCII names the first field whose value is not plain ASCII.
func firstNonASCII(names, vals []string) string {
	for i, v := range vals {
		if !isASCII(v) {
			return names[i]
		}
	}
	return ""
}
