package operations

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vector is one entry of the legacy client library's own signature vectors.
type vector struct {
	Kind               string         `json:"kind"`
	Fields             map[string]any `json:"fields"`
	SecureKey          string         `json:"secureKey"`
	Concatenated       string         `json:"concatenated"`
	SHA1Hex            string         `json:"sha1Hex"`
	EncryptedSignature string         `json:"encryptedSignature"`
}

// render turns a JSON field value into its joined-string form.
func render(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		return FormatBool(&x)
	case float64:
		return FormatInt(int64(x))
	case string:
		return x
	}
	panic(fmt.Sprintf("unexpected %T", v))
}

func vectorFields(t *testing.T, v vector) []string {
	f := func(name string) string {
		val, ok := v.Fields[name]
		require.True(t, ok, "vector %s lacks %s", v.Kind, name)
		return render(val)
	}
	switch v.Kind {
	case "paymentSession":
		return PaymentSessionFields(f("targetGoId"), f("paymentSessionId"))
	case "paymentCommand":
		return PaymentCommandFields{TargetGoID: f("targetGoId"), ProductName: f("productName"), TotalPrice: f("totalPrice"),
			Currency: f("currency"), OrderNumber: f("orderNumber"), FailedURL: f("failedURL"), SuccessURL: f("successURL"),
			PreAuthorization: f("preAuthorization"), RecurrentPayment: f("recurrentPayment"), RecurrenceDateTo: f("recurrenceDateTo"),
			RecurrenceCycle: f("recurrenceCycle"), RecurrencePeriod: f("recurrencePeriod"), PaymentChannels: f("paymentChannels")}.Fields()
	case "paymentStatus":
		// As a client reads a reply: booleans as sent, true/false.
		return PaymentStatusReplyFields(func(name string) string {
			if b, ok := v.Fields[name].(bool); ok {
				return strconv.FormatBool(b)
			}
			return f(name)
		})
	case "paymentResult":
		return PaymentResultFields(f("paymentSessionId"), f("result"))
	case "paymentIdentity":
		return PaymentIdentityFields(f("targetGoId"), f("paymentSessionId"), f("parentPaymentSessionId"), f("orderNumber"))
	case "recurrenceRequest":
		return RecurrenceRequestFields(f("parentPaymentSessionId"), f("targetGoId"), f("orderNumber"), f("totalPrice"))
	case "refundRequest":
		return RefundRequestFields(f("targetGoId"), f("paymentSessionId"), f("amount"), f("currency"), f("description"))
	case "statementRequest":
		return StatementRequestFields(f("dateFrom"), f("dateTo"), f("targetGoId"), f("currency"))
	}
	t.Fatalf("unknown vector kind %q", v.Kind)
	return nil
}

func loadVectors(t *testing.T) []vector {
	raw, err := os.ReadFile("../testdata/signatures/legacy-vectors.json")
	require.NoError(t, err)
	var vs []vector
	require.NoError(t, json.Unmarshal(raw, &vs))
	require.NotEmpty(t, vs)
	return vs
}

// TestLegacySignatureVectors checks every vector the legacy client library
// produced: the joined string, its hash, our signature and our verification.
func TestLegacySignatureVectors(t *testing.T) {
	kinds := map[string]bool{}
	for i, v := range loadVectors(t) {
		kinds[v.Kind] = true
		t.Run(fmt.Sprintf("%02d_%s", i, v.Kind), func(t *testing.T) {
			fields := vectorFields(t, v)
			assert.Equal(t, v.Concatenated, joinFields(v.SecureKey, fields...))
			sum := sha1.Sum([]byte(v.Concatenated))
			assert.Equal(t, v.SHA1Hex, hex.EncodeToString(sum[:]))
			sig, err := Sign(v.SecureKey, fields...)
			require.NoError(t, err)
			assert.Equal(t, v.EncryptedSignature, sig)
			assert.True(t, Verify(v.SecureKey, v.EncryptedSignature, fields...))
		})
	}
	for _, k := range []string{"paymentSession", "paymentCommand", "paymentStatus", "paymentResult",
		"paymentIdentity", "recurrenceRequest", "refundRequest", "statementRequest"} {
		assert.True(t, kinds[k], "no vector of kind %s", k)
	}
}

// TestVerifyRejects makes sure a signature fails on any change.
func TestVerifyRejects(t *testing.T) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	fields := PaymentSessionFields("8123456789", "3000000001")
	sig, err := Sign(key, fields...)
	require.NoError(t, err)
	assert.True(t, Verify(key, sig, fields...))
	assert.True(t, Verify(key, " "+bytesUpper(sig)+"\n", fields...), "hex case and surrounding space are tolerated")
	assert.False(t, Verify(key, sig, PaymentSessionFields("8123456789", "3000000002")...), "other payment")
	assert.False(t, Verify("Zf2mlwbW6mQLkGmDWzTXwXHX", sig, fields...), "other key")
	assert.False(t, Verify(key, sig[:78], fields...), "truncated")
	assert.False(t, Verify(key, "zz"+sig[2:], fields...), "not hex")
	assert.False(t, Verify(key, "", fields...), "empty")
	assert.False(t, Verify("short", sig, fields...), "short key")
	_, err = Sign("short", fields...)
	assert.ErrorIs(t, err, errShortSecureKey)
}

func bytesUpper(s string) string { return string(bytes.ToUpper([]byte(s))) }

// TestVectorsMatchShared keeps the project's copy of the vectors equal to
// the reference set when it is at hand.
func TestVectorsMatchShared(t *testing.T) {
	ref, err := os.ReadFile("../../shared/reference/signature-vectors.json")
	if err != nil {
		t.Skip("reference vectors not beside the project: ", err)
	}
	own, err := os.ReadFile("../testdata/signatures/legacy-vectors.json")
	require.NoError(t, err)
	assert.JSONEq(t, string(ref), string(own))
}

func BenchmarkSign(b *testing.B) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	st := PaymentStatus{TargetGoID: ptr(int64(8123456789)), ProductName: ptr("Objednávka"), TotalPrice: ptr(int64(12900)),
		Currency: ptr("CZK"), OrderNumber: ptr("42"), RecurrentPayment: ptr(false), PreAuthorization: ptr(false),
		Result: CallCompleted, SessionState: ptr("PAID")}
	fields := st.SignatureFields()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sign(key, fields...); err != nil {
			b.Fatal(err)
		}
	}
}

// TestVerifyAcceptsPKCS5Padding: a client whose platform cipher pads with
// PKCS#5 sends 48 encrypted bytes; the original service trimmed them away.
func TestVerifyAcceptsPKCS5Padding(t *testing.T) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	fields := PaymentSessionFields("8123456789", "3000000001")
	block, err := tripleDES(key)
	require.NoError(t, err)
	plain := append([]byte(hashHex(key, fields)), bytes.Repeat([]byte{8}, 8)...)
	out := make([]byte, len(plain))
	ecb(block, out, plain, block.Encrypt)
	sig := hex.EncodeToString(out)
	require.Len(t, sig, 96)
	assert.True(t, Verify(key, sig, fields...))
	assert.False(t, Verify(key, sig, PaymentSessionFields("8123456789", "3000000002")...))
}

// TestStatusSignatureOneOrder: the bridge signing an EPaymentStatus and a
// client verifying the reply member by member join the same fields in the
// same order, the WSDL table's; so do a command's typed and text forms.
func TestStatusSignatureOneOrder(t *testing.T) {
	st := &PaymentStatus{TargetGoID: ptr(int64(8123456789)), ProductName: ptr(" Kniha "), TotalPrice: ptr(int64(12900)),
		Currency: ptr("CZK"), OrderNumber: ptr(" 42 "), RecurrentPayment: ptr(true), PreAuthorization: ptr(false),
		Result: CallCompleted, SessionState: ptr("PAID"), PaymentChannel: ptr("eu_gp_u"), P1: ptr("not signed")}
	member := func(name string) string {
		f := reflect.ValueOf(st).Elem().FieldByIndex(LegacyFields(reflect.TypeFor[PaymentStatus]())[name])
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				return ""
			}
			f = f.Elem()
		}
		return fmt.Sprint(f.Interface()) // booleans as a reply carries them: true/false
	}
	want := []string{"8123456789", "Kniha", "12900", "CZK", "42", "1", "", "0", "CALL_COMPLETED", "PAID", "", "eu_gp_u"}
	assert.Equal(t, want, st.SignatureFields())
	assert.Equal(t, want, PaymentStatusReplyFields(member))

	c := &PaymentCommand{TargetGoID: ptr(int64(1)), ProductName: " Kniha ", TotalPrice: ptr(int64(100)), Currency: "CZK",
		PreAuthorization: ptr(true), RecurrencePeriod: ptr(int64(3)), PaymentChannels: "eu_gp_u ", P1: "not signed"}
	text := PaymentCommandFields{TargetGoID: "1", ProductName: " Kniha ", TotalPrice: "100", Currency: "CZK",
		PreAuthorization: "1", RecurrencePeriod: "3", PaymentChannels: "eu_gp_u "}
	assert.Equal(t, []string{"1", "Kniha", "100", "CZK", "", "", "", "1", "", "", "", "3", "eu_gp_u"}, c.SignatureFields())
	assert.Equal(t, c.SignatureFields(), text.Fields())
	assert.Equal(t, c.signedFields()[1], text.Untrimmed())
	assert.Equal(t, " Kniha ", text.Untrimmed()[1])
}

// TestVerifyLongSignatureAndHexCases: a signature longer than verifyFields'
// stack buffer (zero blocks after the digest, trimmed as the Java library's
// padding is) verifies, in either letter case; odd lengths and non-hex
// characters do not, as hex.DecodeString refuses them.
func TestVerifyLongSignatureAndHexCases(t *testing.T) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	fields := PaymentSessionFields("8123456789", "3000000001")
	block, err := tripleDES(key)
	require.NoError(t, err)
	plain := append([]byte(hashHex(key, fields)), make([]byte, 40)...) // 80 bytes: over 64
	out := make([]byte, len(plain))
	ecb(block, out, plain, block.Encrypt)
	sig := hex.EncodeToString(out)
	assert.True(t, Verify(key, sig, fields...))
	assert.True(t, Verify(key, strings.ToUpper(sig), fields...))
	assert.False(t, Verify(key, sig, PaymentSessionFields("8123456789", "3000000002")...))
	short, err := Sign(key, fields...)
	require.NoError(t, err)
	assert.True(t, Verify(key, " "+strings.ToUpper(short)+"\n", fields...))
	for _, bad := range []string{short[1:], short[:len(short)-1] + "g", "x" + short[1:], short + "0"} {
		assert.False(t, Verify(key, bad, fields...), bad)
	}
}

// FuzzDecodeHex: decodeHex decodes what hex.DecodeString decodes and
// refuses what it refuses.
func FuzzDecodeHex(f *testing.F) {
	for _, s := range []string{"", "0a", "0A", "abcdef0123456789ABCDEF", "0", "zz", "0g", "é0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf [8]byte
		got, ok := decodeHex(buf[:0], s)
		want, err := hex.DecodeString(s)
		if ok != (err == nil) || (ok && !bytes.Equal(got, want)) {
			t.Fatalf("decodeHex(%q) = %x, %v; hex.DecodeString %x, %v", s, got, ok, want, err)
		}
	})
}

// TestSessionAuthSignsPaymentSessionFields: the field list sessionAuth
// verifies is PaymentSessionFields' of the request's values, and the
// payment id is needed under the part's name.
func TestSessionAuthSignsPaymentSessionFields(t *testing.T) {
	goid, id := int64(8123456789), int64(3000000001)
	a := sessionAuth("paymentSessionInfo")(&SessionInfo{TargetGoID: &goid, PaymentSessionID: &id, EncryptedSignature: "ab"})
	require.Equal(t, [][]string{PaymentSessionFields("8123456789", "3000000001")}, a.signed)
	require.Equal(t, []need{{"paymentSessionInfo.paymentSessionId", true}}, a.need)
	require.Equal(t, "ab", a.sig)
	a = sessionAuth("sessionInfo")(&SessionInfo{TargetGoID: &goid})
	require.Equal(t, [][]string{PaymentSessionFields("8123456789", "")}, a.signed)
	require.Equal(t, []need{{"sessionInfo.paymentSessionId", false}}, a.need)
}

// TestJoinedSumIsSHA1OfJoined: the digests signed, verified and kept in the
// ledger (digestOf) are SHA-1 of joinFields' string, whether it fits
// joinedSum's stack buffer or not, in both charsets.
func TestJoinedSumIsSHA1OfJoined(t *testing.T) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	for _, fields := range [][]string{nil, {""}, {"8123456789", "3000000001"}, {"žluťoučký kůň", strings.Repeat("x", 600)}} {
		want := sha1.Sum([]byte(joinFields(key, fields...)))
		assert.Equal(t, want, joinedSum(key, fields))
		assert.Equal(t, hex.EncodeToString(want[:]), digestOf(key, fields, CharsetUTF8))
		cp, ok := windows1250(joinFields(key, fields...))
		if ok {
			w := sha1.Sum(cp)
			assert.Equal(t, hex.EncodeToString(w[:]), digestOf(key, fields, CharsetWindows1250))
		} else {
			assert.Equal(t, hex.EncodeToString(want[:]), digestOf(key, fields, CharsetWindows1250))
		}
	}
}

// TestSignStatusWithVerifiedCipher: a status signed with the cipher its
// request verified with is the status Sign makes, and a reply signed with
// another key than the verified one does not take the verified cipher.
func TestSignStatusWithVerifiedCipher(t *testing.T) {
	k1, k2 := "DemoSecureKey-0123456789", "OtherSecureKey-987654321"
	b1, err := tripleDES(k1)
	if err != nil {
		t.Fatal(err)
	}
	goid, id, price := int64(8123456789), int64(3000000001), int64(12900)
	s, cur := "x", "CZK"
	for _, key := range []string{k1, k2} {
		st := &PaymentStatus{TargetGoID: &goid, PaymentSessionID: &id, TotalPrice: &price, Currency: &cur,
			ProductName: &s, OrderNumber: &s, Result: "CALL_COMPLETED", SessionState: &s}
		c := &call{v: verified{key: k1, block: b1}}
		if err := signStatus(c, st, key); err != nil {
			t.Fatal(err)
		}
		want, err := Sign(key, st.SignatureFields()...)
		if err != nil {
			t.Fatal(err)
		}
		if st.EncryptedSignature == nil || *st.EncryptedSignature != want {
			t.Errorf("key %s: signed %v, Sign %s", key[:5], st.EncryptedSignature, want)
		}
	}
	if err := signStatus(&call{}, &PaymentStatus{}, "short"); err == nil {
		t.Error("a short key signed a status")
	}
}
