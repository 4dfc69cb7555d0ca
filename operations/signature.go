package operations

import (
	"bytes"
	"crypto/cipher"
	"crypto/des"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/text/encoding/charmap"
)

// The legacy signature ("encryptedSignature"): the fields of a message are
// joined with "|" and the merchant's secure key, hashed with SHA-1 (40 lower
// hex characters) and the hex text is encrypted with Triple DES (EDE) in ECB
// mode under the first 24 bytes of the secure key. ECB and SHA-1 are weak, but
// they are what every legacy client computes and checks, so the bridge must
// speak them exactly.

// errShortSecureKey means a secure key cannot key Triple DES.
var errShortSecureKey = errors.New("secure key must be at least 24 bytes")

// Sign returns the signature of fields under secureKey.
func Sign(secureKey string, fields ...string) (string, error) {
	block, err := tripleDES(secureKey)
	if err != nil {
		return "", err
	}
	return signWith(block, secureKey, fields), nil
}

// signWith is Sign with block, the Triple DES cipher of secureKey
// (tripleDES), already at hand.
func signWith(block cipher.Block, secureKey string, fields []string) string {
	return signSum(block, joinedSum(secureKey, fields))
}

// signSum is the signature of sum, the SHA-1 of a joined string
// (joinedSum), under block. The SHA-1 hex digest (hashHex) is 40 bytes,
// whole DES blocks: no padding. Encrypted in place, in one buffer, and
// hexed into a stack buffer: the string is the one allocation besides
// the buffer the cipher (an interface) is handed (hex.EncodeToString made
// two).
func signSum(block cipher.Block, sum [sha1.Size]byte) string {
	var plain [2 * sha1.Size]byte
	hex.Encode(plain[:], sum[:])
	ecb(block, plain[:], plain[:], block.Encrypt)
	var out [2 * len(plain)]byte
	hex.Encode(out[:], plain[:])
	return string(out[:])
}

// The in-place Sign relies on the digest's hex filling whole blocks.
var _ [0]struct{} = [(2 * sha1.Size) % des.BlockSize]struct{}{}

// Verify reports whether signature is the signature of fields under
// secureKey, hashed as UTF-8 or, failing that, as windows-1250 (see
// VerifyCompat). Hex in any letter case is accepted; the comparison is in
// constant time.
func Verify(secureKey, signature string, fields ...string) bool {
	_, ok := VerifyCompat(secureKey, signature, fields)
	return ok
}

// Charset names the encoding a client hashed the joined string in.
type Charset string

const (
	CharsetUTF8        Charset = "UTF-8"
	CharsetWindows1250 Charset = "windows-1250"
)

// VerifyCompat reports whether signature verifies over one of the field
// lists alts, and in which charset the client hashed it. Give the canonical
// list first and client variants after it (PaymentCommandFields.Untrimmed
// for the .NET library, which trims nothing).
//
// Each joined string is hashed as UTF-8 first and, failing that, as
// windows-1250: the Java library hashes in the JVM's platform charset
// (windows-1250 on a Czech Windows server) and base-integration forms are
// signed in the charset of the shop's page. A string with a character
// windows-1250 lacks, or plain ASCII (the same bytes), gets no second try.
//
// The signature is decrypted once. Trailing bytes up to and including the
// space are stripped, as the original Java service did with String.trim():
// the zero padding of the legacy libraries (also the Java library's whole
// extra block of zeros, 96 hex characters), whitespace, and PKCS#5 padding
// (bytes 1..8), which clients using their platform's default DESede cipher
// send.
func VerifyCompat(secureKey, signature string, alts ...[]string) (Charset, bool) {
	_, cs, ok := verifyFields(secureKey, signature, alts)
	return cs, ok
}

// SignedDigest reports whether signature verifies over fields (as Verify)
// and returns what it verified: the SHA-1 hex the client signed.
func SignedDigest(secureKey, signature string, alts ...[]string) (string, bool) {
	i, cs, ok := verifyFields(secureKey, signature, alts)
	if !ok {
		return "", false
	}
	return digestOf(secureKey, alts[i], cs), true
}

// verifyFields reports whether signature verifies over one of alts, which
// one (its index) and in which charset.
func verifyFields(secureKey, signature string, alts [][]string) (int, Charset, bool) {
	block, err := tripleDES(secureKey)
	if err != nil {
		return 0, "", false
	}
	return verifyFieldsWith(block, secureKey, signature, alts)
}

// verifyFieldsWith is verifyFields with block, the Triple DES cipher of
// secureKey (tripleDES), already at hand.
func verifyFieldsWith(block cipher.Block, secureKey, signature string, alts [][]string) (int, Charset, bool) {
	// Decoded and decrypted in one buffer of 64 bytes each when the
	// signature fits it (the usual 40 bytes, the Java library's 48). One
	// array, not two: handed to the cipher (an interface), it goes to the
	// heap, in one allocation.
	var bufs [2 * 64]byte
	raw, ok := decodeHex(bufs[:0:64], strings.TrimSpace(signature))
	if !ok || len(raw) == 0 || len(raw)%des.BlockSize != 0 {
		return 0, "", false
	}
	plain := bufs[64:64]
	if len(raw) > 64 {
		plain = make([]byte, len(raw))
	}
	plain = plain[:len(raw)]
	ecb(block, plain, raw, block.Decrypt)
	plain = bytes.TrimRightFunc(plain, func(r rune) bool { return r <= ' ' })
	for i, fields := range alts {
		if sumEquals(plain, joinedSum(secureKey, fields)) {
			return i, CharsetUTF8, true
		}
	}
	for i, fields := range alts {
		if cp, ok := windows1250(joinFields(secureKey, fields...)); ok && hashEquals(plain, cp) {
			return i, CharsetWindows1250, true
		}
	}
	return 0, "", false
}

// windows1250 is s in windows-1250; false for plain ASCII (the same bytes:
// no second try) and for a string with a character windows-1250 lacks.
func windows1250(s string) ([]byte, bool) {
	if isASCII(s) {
		return nil, false
	}
	cp, err := charmap.Windows1250.NewEncoder().String(s)
	if err != nil {
		return nil, false
	}
	return []byte(cp), true
}

// digestOf is the SHA-1 hex of fields joined with secureKey, hashed in
// charset: what a client signing them in that charset encrypted. Money
// paths key their ledger on it rather than on the fields' text, since the
// windows-1250 fallback accepts one signature for two texts (the UTF-8
// original and its mojibake, whose windows-1250 bytes are the original's
// UTF-8 bytes): both are the same signed request.
func digestOf(secureKey string, fields []string, charset Charset) string {
	var sum [sha1.Size]byte
	if charset == CharsetWindows1250 {
		joined := joinFields(secureKey, fields...)
		b := []byte(joined)
		if cp, ok := windows1250(joined); ok {
			b = cp
		}
		sum = sha1.Sum(b)
	} else {
		sum = joinedSum(secureKey, fields)
	}
	return hex.EncodeToString(sum[:])
}

func hashEquals(plain, joined []byte) bool {
	return sumEquals(plain, sha1.Sum(joined))
}

// sumEquals tells in constant time whether plain is the hex of sum.
func sumEquals(plain []byte, sum [sha1.Size]byte) bool {
	var want [2 * sha1.Size]byte
	hex.Encode(want[:], sum[:])
	return subtle.ConstantTimeCompare(plain, want[:]) == 1
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// joinFields is the string that is hashed: fields and the key joined by "|".
func joinFields(secureKey string, fields ...string) string {
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f)
		b.WriteByte('|')
	}
	b.WriteString(secureKey)
	return b.String()
}

// joinedSum is the SHA-1 of joinFields(secureKey, fields...), joined in a
// stack buffer when it fits (the usual signed strings do).
func joinedSum(secureKey string, fields []string) [sha1.Size]byte {
	var buf [512]byte
	b := buf[:0]
	for _, f := range fields {
		b = append(b, f...)
		b = append(b, '|')
	}
	b = append(b, secureKey...)
	return sha1.Sum(b)
}

// decodeHex appends the bytes of the hex s to dst, as hex.DecodeString
// decodes them (either letter case); false for an odd length or a
// character that is not a hex digit.
func decodeHex(dst []byte, s string) ([]byte, bool) {
	if len(s)%2 != 0 {
		return nil, false
	}
	for i := 0; i < len(s); i += 2 {
		hi, ok1 := hexDigit(s[i])
		lo, ok2 := hexDigit(s[i+1])
		if !ok1 || !ok2 {
			return nil, false
		}
		dst = append(dst, hi<<4|lo)
	}
	return dst, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func hashHex(secureKey string, fields []string) string {
	sum := joinedSum(secureKey, fields)
	return hex.EncodeToString(sum[:])
}

// ciphers caches the Triple DES cipher per key: building the key schedule
// costs more than the rest of a signature, and every call needs one. Keyed
// by a hash so the cache holds no key text; bounded, since keys come from
// the merchant configuration and a changed key must not grow it forever.
var ciphers struct {
	m sync.Map // [sha256.Size]byte → cipher.Block
	n atomic.Int32
}

const maxCachedCiphers = 256

func tripleDES(secureKey string) (cipher.Block, error) {
	if len(secureKey) < 24 {
		return nil, errShortSecureKey
	}
	key := []byte(secureKey[:24])
	id := sha256.Sum256(key)
	if b, ok := ciphers.m.Load(id); ok {
		return b.(cipher.Block), nil
	}
	block, err := des.NewTripleDESCipher(key)
	if err != nil {
		return nil, err
	}
	// The stdlib block cipher is read-only after construction, so one value
	// serves concurrent calls.
	if ciphers.n.Load() < maxCachedCiphers {
		if _, loaded := ciphers.m.LoadOrStore(id, block); !loaded {
			ciphers.n.Add(1)
		}
	}
	return block, nil
}

// ecb applies fn block by block; the standard library offers no ECB mode on
// purpose, and the legacy scheme needs nothing more.
func ecb(block cipher.Block, dst, src []byte, fn func(dst, src []byte)) {
	bs := block.BlockSize()
	for i := 0; i < len(src); i += bs {
		fn(dst[i:i+bs], src[i:i+bs])
	}
}

// Field renderers of the joined string.

// FormatInt renders an integer in plain decimal.
func FormatInt(n int64) string { return strconv.FormatInt(n, 10) }

// formatOptInt renders an optional integer; absent is empty.
func formatOptInt(n *int64) string {
	if n == nil {
		return ""
	}
	return FormatInt(*n)
}

// FormatBool renders an optional boolean as "1", "0" or "" (absent).
func FormatBool(b *bool) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return "1"
	}
	return "0"
}

// trim removes the whitespace the legacy library strips from marked fields.
func trim(s string) string { return strings.Trim(s, trimCutset) }

// trimCutset is what trim strips.
const trimCutset = " \t\r\n\x00\x0b"

// Field orders of the signature kinds (legacy-protocol.md). Optional values
// are passed already rendered, so callers sign exactly what they send.

// PaymentSessionFields: paymentStatus, paymentStatusWCust, capturePayment,
// voidAuthorization, refundPayment (sessionInfo), voidRecurrentPayment, pay-full-v2.
func PaymentSessionFields(goid, paymentSessionID string) []string {
	return []string{goid, paymentSessionID}
}

// PaymentCommandFields: createPayment and the pay-base-v2 form, each value
// as sent; the order and the trimmed ones are the WSDL table's
// (EPaymentCommand's signature).
type PaymentCommandFields struct {
	TargetGoID       string `legacy:"targetGoId"`
	ProductName      string `legacy:"productName"`
	TotalPrice       string `legacy:"totalPrice"`
	Currency         string `legacy:"currency"`
	OrderNumber      string `legacy:"orderNumber"`
	FailedURL        string `legacy:"failedURL"`
	SuccessURL       string `legacy:"successURL"`
	PreAuthorization string `legacy:"preAuthorization"`
	RecurrentPayment string `legacy:"recurrentPayment"`
	RecurrenceDateTo string `legacy:"recurrenceDateTo"`
	RecurrenceCycle  string `legacy:"recurrenceCycle"`
	RecurrencePeriod string `legacy:"recurrencePeriod"`
	PaymentChannels  string `legacy:"paymentChannels"`
}

// Fields returns the joined order, trimming the marked fields.
func (c PaymentCommandFields) Fields() []string {
	return signedValues("EPaymentCommand", reflect.ValueOf(c), true)
}

// Untrimmed returns the joined order with every value as sent: the .NET
// library trims nothing before signing. Verify with it as an alternative
// after Fields (VerifyCompat).
func (c PaymentCommandFields) Untrimmed() []string {
	return signedValues("EPaymentCommand", reflect.ValueOf(c), false)
}

// PaymentStatusReplyFields are the paymentStatus signature fields of an
// EPaymentStatus reply read back member by member, as a client verifying
// it hashes them: member returns a member's text by its legacy name ("" when
// absent or nil), booleans as sent ("true"/"false"). The members and their
// order are the WSDL table's (EPaymentStatus's signature).
func PaymentStatusReplyFields(member func(name string) string) []string {
	out := make([]string, len(statusReplySignature))
	for i, m := range statusReplySignature {
		v := member(m.name)
		switch {
		case m.flag && v == "true":
			v = "1"
		case m.flag && v == "false":
			v = "0"
		case m.flag:
			v = ""
		case m.trim:
			v = trim(v)
		}
		out[i] = v
	}
	return out
}

// PaymentResultFields: every EPaymentResult reply.
func PaymentResultFields(paymentSessionID, result string) []string {
	return []string{paymentSessionID, trim(result)}
}

// PaymentIdentityFields: return redirects and notifications to the e-shop.
func PaymentIdentityFields(goid, paymentSessionID, parentPaymentSessionID, orderNumber string) []string {
	return []string{goid, paymentSessionID, parentPaymentSessionID, trim(orderNumber)}
}

// RecurrenceRequestFields: createRecurrentPayment requests.
func RecurrenceRequestFields(parentPaymentSessionID, goid, orderNumber, totalPrice string) []string {
	return []string{parentPaymentSessionID, goid, orderNumber, totalPrice}
}

// RefundRequestFields: partiallyRefundPayment and refundPayment (refundRequest form).
func RefundRequestFields(goid, paymentSessionID, amount, currency, description string) []string {
	return []string{goid, paymentSessionID, amount, currency, description}
}

// StatementRequestFields: the statement download.
func StatementRequestFields(dateFrom, dateTo, goid, currency string) []string {
	return []string{dateFrom, dateTo, goid, currency}
}

// StatementRequestFieldsNoCurrency: the statement download of the Java 2.4
// and .NET libraries, which send no currency and sign four fields.
func StatementRequestFieldsNoCurrency(dateFrom, dateTo, goid string) []string {
	return []string{dateFrom, dateTo, goid}
}

// CreateBuyerFields: the createBuyer request as the Java 2.4 library signs
// it (eshopGoId|buyerUsername|buyerEmail|secureKey); the protocol itself
// publishes no scheme for it.
func CreateBuyerFields(eshopGoID, buyerUsername, buyerEmail string) []string {
	return []string{eshopGoID, buyerUsername, buyerEmail}
}
