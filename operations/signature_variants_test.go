package operations

import (
	"golang.org/x/text/encoding/charmap"

	"bytes"
	"crypto/des"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// variantVector is one entry of testdata/signatures/variants.json, computed
// by variants.py beside it with Python's hashlib and cryptography.
type variantVector struct {
	Name               string            `json:"name"`
	Client             string            `json:"client"`
	Kind               string            `json:"kind"`
	Fields             map[string]string `json:"fields"`
	SecureKey          string            `json:"secureKey"`
	Charset            Charset           `json:"charset"`
	Padding            string            `json:"padding"`
	Concatenated       string            `json:"concatenated"`
	EncryptedSignature string            `json:"encryptedSignature"`
}

const variantsFile = "../testdata/signatures/variants.json"

func loadVariantVectors(t *testing.T) []variantVector {
	raw, err := os.ReadFile(variantsFile)
	require.NoError(t, err)
	var vs []variantVector
	require.NoError(t, json.Unmarshal(raw, &vs))
	require.NotEmpty(t, vs)
	return vs
}

// variantAlts builds the field lists the bridge verifies a request of this
// kind against, with the project's own helpers: canonical first, then the
// untrimmed .NET form where the scheme trims.
func variantAlts(t *testing.T, v variantVector) [][]string {
	f := func(name string) string {
		val, ok := v.Fields[name]
		require.True(t, ok, "vector %s lacks %s", v.Name, name)
		return val
	}
	switch v.Kind {
	case "paymentCommand":
		c := PaymentCommandFields{TargetGoID: f("targetGoId"), ProductName: f("productName"), TotalPrice: f("totalPrice"),
			Currency: f("currency"), OrderNumber: f("orderNumber"), FailedURL: f("failedURL"), SuccessURL: f("successURL"),
			PreAuthorization: f("preAuthorization"), RecurrentPayment: f("recurrentPayment"), RecurrenceDateTo: f("recurrenceDateTo"),
			RecurrenceCycle: f("recurrenceCycle"), RecurrencePeriod: f("recurrencePeriod"), PaymentChannels: f("paymentChannels")}
		return [][]string{c.Fields(), c.Untrimmed()}
	case "paymentSession":
		return [][]string{PaymentSessionFields(f("targetGoId"), f("paymentSessionId"))}
	case "refundRequest":
		return [][]string{RefundRequestFields(f("targetGoId"), f("paymentSessionId"), f("amount"), f("currency"), f("description"))}
	case "statementRequestNoCurrency":
		return [][]string{StatementRequestFieldsNoCurrency(f("dateFrom"), f("dateTo"), f("targetGoId"))}
	case "createBuyer":
		return [][]string{CreateBuyerFields(f("eshopGoId"), f("buyerUsername"), f("buyerEmail"))}
	}
	t.Fatalf("unknown vector kind %q", v.Kind)
	return nil
}

// TestSignatureVariantVectors: every client variant verifies, in the
// charset it was made in, and fails on a changed field or another key.
func TestSignatureVariantVectors(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range loadVariantVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			seen[string(v.Charset)+"/"+v.Padding] = true
			alts := variantAlts(t, v)
			joinedAny := false
			for _, a := range alts {
				joinedAny = joinedAny || joinFields(v.SecureKey, a...) == v.Concatenated
			}
			assert.True(t, joinedAny, "no field list of ours joins to the client's string %q", v.Concatenated)
			want := 80
			if v.Padding == "extra-block" {
				want = 96
			}
			require.Len(t, v.EncryptedSignature, want)

			cs, ok := VerifyCompat(v.SecureKey, v.EncryptedSignature, alts...)
			assert.True(t, ok, v.Client)
			assert.Equal(t, v.Charset, cs)
			if v.Name != "dotnet-untrimmed" { // the one vector that needs its untrimmed list
				assert.True(t, Verify(v.SecureKey, v.EncryptedSignature, alts[0]...), "Verify takes the canonical list")
			}

			changed := append([]string(nil), alts[0]...)
			changed[0] += "1"
			_, ok = VerifyCompat(v.SecureKey, v.EncryptedSignature, changed)
			assert.False(t, ok, "a changed field must not verify")
			_, ok = VerifyCompat("Xf2mlwbW6mQLkGmDWzTXwXHU", v.EncryptedSignature, alts...)
			assert.False(t, ok, "another key must not verify")
		})
	}
	for _, k := range []string{"UTF-8/extra-block", "windows-1250/extra-block", "windows-1250/none", "UTF-8/none"} {
		assert.True(t, seen[k], "no vector for %s", k)
	}
}

// The windows-1250 try is a fallback, not a second key: a UTF-8 signature
// reports UTF-8, the .NET untrimmed form needs its alternative list, and a
// string windows-1250 cannot carry is not tried in it.
func TestVerifyCompatFallbacks(t *testing.T) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	utf := PaymentCommandFields{TargetGoID: "1", ProductName: "Objednávka", TotalPrice: "100", Currency: "CZK"}
	sig, err := Sign(key, utf.Fields()...)
	require.NoError(t, err)
	cs, ok := VerifyCompat(key, sig, utf.Fields())
	assert.True(t, ok)
	assert.Equal(t, CharsetUTF8, cs)

	for _, v := range loadVariantVectors(t) {
		if v.Name != "dotnet-untrimmed" {
			continue
		}
		alts := variantAlts(t, v)
		require.NotEqual(t, alts[0], alts[1], "the vector must have something to trim")
		_, ok := VerifyCompat(v.SecureKey, v.EncryptedSignature, alts[0])
		assert.False(t, ok, "trimmed fields alone do not verify the .NET signature")
		assert.False(t, Verify(v.SecureKey, v.EncryptedSignature, alts[0]...))
	}

	// "€" is in windows-1250 (0x80) but "Ω" is not: a client cannot have
	// hashed such a string in windows-1250, and a bogus signature stays bad.
	greek := PaymentCommandFields{TargetGoID: "1", ProductName: "Ω", TotalPrice: "100"}.Fields()
	sig, err = Sign(key, greek...)
	require.NoError(t, err)
	assert.True(t, Verify(key, sig, greek...))
	assert.False(t, Verify(key, strings.Repeat("00", 40), greek...))
}

// The base integration with raw windows-1250 bytes taken as the string
// (what the bridge did before it decoded forms) verifies as "UTF-8" over
// the same bytes: that path keeps working until the form is decoded.
func TestVerifyRawBytesStillVerify(t *testing.T) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	raw := string([]byte{'O', 'b', 'j', 'e', 'd', 'n', 0xe1, 'v', 'k', 'a'}) // "Objednávka" in windows-1250
	sig, err := Sign(key, "1", raw)
	require.NoError(t, err)
	cs, ok := VerifyCompat(key, sig, []string{"1", raw})
	assert.True(t, ok)
	assert.Equal(t, CharsetUTF8, cs)
	cs, ok = VerifyCompat(key, sig, []string{"1", "Objednávka"})
	assert.True(t, ok, "the decoded form verifies in windows-1250")
	assert.Equal(t, CharsetWindows1250, cs)
}

// The cached cipher is the same cipher: signatures made with a fresh one
// verify with the cached one and the other way round.
func TestCipherCache(t *testing.T) {
	key := "cacheTestKey0123456789abXYZ"
	b1, err := tripleDES(key)
	require.NoError(t, err)
	b2, err := tripleDES(key)
	require.NoError(t, err)
	assert.Same(t, b1, b2, "second call served from the cache")
	fresh, err := des.NewTripleDESCipher([]byte(key[:24]))
	require.NoError(t, err)
	in := []byte("0123456789abcdef")
	a, b := make([]byte, 16), make([]byte, 16)
	ecb(fresh, a, in, fresh.Encrypt)
	ecb(b1, b, in, b1.Encrypt)
	assert.Equal(t, a, b)
	// Keys differing after byte 24 share a cipher (only 24 bytes key it).
	b3, err := tripleDES(key[:24] + "other")
	require.NoError(t, err)
	assert.Same(t, b1, b3)
}

// TestVariantVectorsReproducible regenerates the vectors with variants.py
// and compares: the JSON is what the independent Python code computes.
func TestVariantVectorsReproducible(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Missing(t, "/usr/bin/python3", "apt-get install python3 python3-cryptography")
	}
	if exec.Command(py, "-c", "from cryptography.hazmat.primitives.ciphers import Cipher").Run() != nil {
		testenv.Missing(t, "Python cryptography", "apt-get install python3-cryptography")
	}
	out, err := exec.Command(py, "-B", "../testdata/signatures/variants.py").Output()
	require.NoError(t, err)
	own, err := os.ReadFile(variantsFile)
	require.NoError(t, err)
	assert.JSONEq(t, string(own), string(out))
}

// The Java library's 96-hex form is the 80-hex signature followed by one
// encrypted block of zeros.
func TestJavaExtraBlockIsPaddedLegacySignature(t *testing.T) {
	for _, v := range loadVariantVectors(t) {
		if v.Padding != "extra-block" || v.Charset != CharsetUTF8 {
			continue
		}
		sig, err := Sign(v.SecureKey, variantAlts(t, v)[0]...)
		require.NoError(t, err)
		assert.Equal(t, sig, v.EncryptedSignature[:80], v.Name)
		block, err := tripleDES(v.SecureKey)
		require.NoError(t, err)
		zeros := make([]byte, 8)
		ecb(block, zeros, bytes.Repeat([]byte{0}, 8), block.Encrypt)
		assert.Equal(t, hex.EncodeToString(zeros), v.EncryptedSignature[80:], v.Name)
	}
}

// BenchmarkVerifyCipher compares verification with the cached cipher against
// building the cipher on each call (the cost before the cache), in one run.
func BenchmarkVerifyCipher(b *testing.B) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	fields := PaymentSessionFields("8123456789", "3000000001")
	sig, err := Sign(key, fields...)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !Verify(key, sig, fields...) {
				b.Fatal("does not verify")
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		raw, _ := hex.DecodeString(sig)
		for b.Loop() {
			block, err := des.NewTripleDESCipher([]byte(key))
			if err != nil {
				b.Fatal(err)
			}
			plain := make([]byte, len(raw))
			ecb(block, plain, raw, block.Decrypt)
			if !hashEquals(bytes.TrimRight(plain, "\x00"), []byte(joinFields(key, fields...))) {
				b.Fatal("does not verify")
			}
		}
	})
}

// The windows-1250 fallback accepts one signature for two texts: the UTF-8
// original and its mojibake (the original's UTF-8 bytes read as
// windows-1250). SignedDigest gives both the digest that was signed, so the
// ledger sees one request, not two.
func TestSignedDigestOfMojibakeIsTheOriginals(t *testing.T) {
	key := "Zf2mlwbW6mQLkGmDWzTXwXHU"
	orig := RefundRequestFields("8123456789", "42", "3000", "CZK", "vrácení části")
	moji, err := charmap.Windows1250.NewDecoder().String(orig[4])
	require.NoError(t, err)
	require.Equal(t, "vrĂˇcenĂ­ ÄŤĂˇsti", moji)
	alt := RefundRequestFields("8123456789", "42", "3000", "CZK", moji)
	sig, err := Sign(key, orig...)
	require.NoError(t, err)

	d1, ok := SignedDigest(key, sig, orig)
	require.True(t, ok)
	cs, ok := VerifyCompat(key, sig, alt)
	require.True(t, ok, "the mojibake verifies through the fallback")
	assert.Equal(t, CharsetWindows1250, cs)
	d2, ok := SignedDigest(key, sig, alt)
	require.True(t, ok)
	assert.Equal(t, d1, d2, "one signed request, one digest")
	assert.Equal(t, hashHex(key, orig), d1)

	other, err := Sign(key, RefundRequestFields("8123456789", "42", "3000", "CZK", "druhá část")...)
	require.NoError(t, err)
	d3, ok := SignedDigest(key, other, RefundRequestFields("8123456789", "42", "3000", "CZK", "druhá část"))
	require.True(t, ok)
	assert.NotEqual(t, d1, d3, "another description is another request")
}
