package operations

import (
	"crypto/sha1"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// BenchmarkStatusSignatures is the signature work of one paymentStatus
// call in the core: the request's EPaymentSessionInfo verified with the
// merchant's key (Merchant.verify), the EPaymentStatus reply signed
// (signStatus). Issue 28: allocations and CPU per call,
//
//	go test ./operations -run '^$' -bench StatusSignatures -benchmem -count 6
func BenchmarkStatusSignatures(b *testing.B) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	fields := PaymentSessionFields("8123456789", "3000000001")
	sig, err := Sign(key, fields...)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	// resolved: the merchant's cipher found once, as Service.resolveOverlaps
	// finds it for the merchants it serves; not: looked up per call.
	for _, resolved := range []bool{true, false} {
		b.Run(map[bool]string{true: "resolved", false: "unresolved"}[resolved], func(b *testing.B) {
			m := Merchant{SecureKey: key}
			if resolved {
				block, _ := tripleDES(key)
				m.secure = &merchantCipher{key: key, block: block}
			}
			// The reply and the call live on the heap, as the core's do:
			// only the signatures' own allocations are counted.
			st := &PaymentStatus{PaymentSessionID: ptr(int64(3000000001)), TargetGoID: ptr(int64(8123456789)),
				ProductName: ptr("Objednávka č. 42"), TotalPrice: ptr(int64(12900)), Currency: ptr("CZK"),
				OrderNumber: ptr("42"), RecurrentPayment: ptr(false), PreAuthorization: ptr(false),
				Result: CallCompleted, SessionState: ptr("PAID"), PaymentChannel: ptr("eu_gp_u")}
			c := &call{m: m, known: true}
			benchSink = st
			b.ReportAllocs()
			for b.Loop() {
				v, ok := c.m.verify(now, sig, fields)
				if !ok {
					b.Fatal("does not verify")
				}
				c.v, c.verified = v, true
				st.EncryptedSignature = nil
				if err := signStatus(c, st, v.key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var benchSink any

// TestStatusSumIsTheFieldsSum: the reply's signature joined in place
// (statusSum, appendSignedJoin) is the one over its signature fields
// (SignatureFields, joinFields): the same bytes for absent members,
// booleans, integers, negative ones, and trimmed members with what the
// legacy libraries trim on either side or inside.
func TestStatusSumIsTheFieldsSum(t *testing.T) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	long := strings.Repeat("dlouhý název ", 60) // past the stack buffer
	for i, st := range []*PaymentStatus{
		{},
		{Result: CallCompleted},
		{PaymentSessionID: ptr(int64(3000000001)), TargetGoID: ptr(int64(8123456789)),
			ProductName: ptr("Objednávka č. 42"), TotalPrice: ptr(int64(12900)), Currency: ptr("CZK"),
			OrderNumber: ptr("42"), RecurrentPayment: ptr(false), PreAuthorization: ptr(true),
			ParentPaymentSessionID: ptr(int64(-7)), Result: CallCompleted, SessionState: ptr("PAID"),
			SessionSubState: ptr("101"), PaymentChannel: ptr("eu_gp_u")},
		{ProductName: ptr(" \t\r\n\x00\x0bkůň \x00 x\x0b\n"), OrderNumber: ptr("\n\n"), TotalPrice: ptr(int64(0)),
			RecurrentPayment: ptr(true), Currency: ptr(" CZK ")},
		{ProductName: ptr(long), OrderNumber: ptr(" " + long + " "), TargetGoID: ptr(int64(-9223372036854775808))},
	} {
		want := sha1.Sum([]byte(joinFields(key, st.SignatureFields()...)))
		assert.Equal(t, want, statusSum(st, key), "status %d", i)
		assert.Equal(t, want, joinedSum(key, st.SignatureFields()), "status %d", i)
	}
}

// TestCallSizeClass: a call's record (one per call: Service.begin) stays
// within the runtime's 640-byte size class; the next is 704. It holds a
// copy of the Merchant, so a field added to either counts.
func TestCallSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(call{}); n > 640 {
		t.Errorf("call is %d bytes, over the 640-byte size class: 64 more bytes allocated per call", n)
	}
}

// TestMerchantCipherOfItsKey: a merchant's kept cipher serves only the key
// it was made from; a copy of the Merchant given another secure key
// verifies with that key, not with the kept cipher.
func TestMerchantCipherOfItsKey(t *testing.T) {
	key, other := "Zf2mlwbW6mQLkGmDWzTXwXHU", "AnotherSecureKey-0123456789"
	fields := PaymentSessionFields("8123456789", "3000000001")
	block, err := tripleDES(key)
	if err != nil {
		t.Fatal(err)
	}
	m := Merchant{SecureKey: key, secure: &merchantCipher{key: key, block: block}}
	sig, _ := Sign(key, fields...)
	v, ok := m.verify(time.Now(), sig, fields)
	assert.True(t, ok)
	assert.Equal(t, key, v.key)
	m.SecureKey = other // a copy changed, the kept cipher still the old key's
	_, ok = m.verify(time.Now(), sig, fields)
	assert.False(t, ok, "the old key's signature")
	sig, _ = Sign(other, fields...)
	v, ok = m.verify(time.Now(), sig, fields)
	assert.True(t, ok, "the new key's signature")
	assert.Equal(t, other, v.key)
}
