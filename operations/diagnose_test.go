package operations

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/text/encoding/charmap"

	"github.com/legacybridge/soapbridge/internal/reqid"
	"github.com/legacybridge/soapbridge/restbackend"
)

const (
	otherGoID      = 8000000002
	otherSecureKey = "OtherMerchantKey-0123456789"
	strangerKey    = "NobodyConfiguredThisKey-00"
	whySession     = 3000000001
)

// whyService serves the test merchant, whose key was rotated: newSecureKey
// in force, testSecureKey past its previous_until; and a second merchant.
// It logs to the returned observer and records what OnRefusal is told.
func whyService(t *testing.T) (*Service, *observer.ObservedLogs, *[]Refusal) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	var mu sync.Mutex
	var told []Refusal
	clk := &fakeClock{t: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}
	cfg := unitConfig(t)
	cfg.Merchants[0].SecureKey = newSecureKey
	cfg.Merchants[0].PreviousSecureKey = testSecureKey
	cfg.Merchants[0].PreviousUntil = "2026-11-27T00:00:00Z"
	other := testMerchant()
	other.GoID, other.SecureKey, other.ClientID = otherGoID, otherSecureKey, "other-client"
	cfg.Merchants = append(cfg.Merchants, other)
	cfg.Gateway, cfg.Now, cfg.Logger = newFakeGateway(), clk.now, zap.New(core)
	cfg.OnRefusal = func(r Refusal) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, r)
	}
	s, err := New(cfg)
	require.NoError(t, err)
	return s, logs, &told
}

// A shop's request as sent (sent) and the mistake it made signing it
// (sign, over what the shop hashed), with the reason and field the bridge
// must name.
type whyCase struct {
	name  string
	call  func(s *Service, ctx context.Context, sig string) (any, error)
	sig   func(t *testing.T) string
	code  string
	field string
	says  string // a part of the text
}

func ptr64(n int64) *int64 { return &n }

func statusCall(s *Service, ctx context.Context, sig string) (any, error) {
	return serve(ctx, s, paymentStatusRow, &SessionInfo{TargetGoID: ptr64(testGoID), PaymentSessionID: ptr64(whySession), EncryptedSignature: sig})
}

func refundCall(amount int64) func(s *Service, ctx context.Context, sig string) (any, error) {
	return func(s *Service, ctx context.Context, sig string) (any, error) {
		return serve(ctx, s, partiallyRefundPaymentRow, &RefundRequest{TargetGoID: ptr64(testGoID), PaymentSessionID: ptr64(whySession),
			Amount: ptr64(amount), Currency: "CZK", Description: "vráceno", EncryptedSignature: sig})
	}
}

func recurrenceCall(order string) func(s *Service, ctx context.Context, sig string) (any, error) {
	return func(s *Service, ctx context.Context, sig string) (any, error) {
		return serve(ctx, s, createRecurrentPaymentRow, &RecurrenceRequest{TargetGoID: ptr64(testGoID), ParentPaymentSessionID: ptr64(whySession),
			OrderNumber: order, TotalPrice: ptr64(12900), EncryptedSignature: sig})
	}
}

// whyCommand is a createPayment command; its product name has Czech
// letters, its order number the whitespace of a careless form.
func whyCommand() PaymentCommand {
	f := false
	return PaymentCommand{TargetGoID: ptr64(testGoID), ProductName: "žluťoučký kůň ", TotalPrice: ptr64(12900), Currency: "CZK",
		OrderNumber: " 42", FailedURL: "https://eshop.example/failed", SuccessURL: "https://eshop.example/success",
		PreAuthorization: &f, RecurrentPayment: &f}
}

func commandCall(s *Service, ctx context.Context, sig string) (any, error) {
	c := whyCommand()
	c.EncryptedSignature = sig
	return serve(ctx, s, createPaymentRow, &c)
}

// sessionSent are the paymentStatus fields as sent.
var sessionSent = PaymentSessionFields(FormatInt(testGoID), FormatInt(whySession))

// with is fields with field i replaced by v.
func with(fields []string, i int, v string) []string {
	f := append([]string(nil), fields...)
	f[i] = v
	return f
}

func TestWhyRefusedNamesTheMistake(t *testing.T) {
	signs := func(key string, fields ...string) func(t *testing.T) string {
		return func(t *testing.T) string { return signedWith(t, key, fields...) }
	}
	refundSent := RefundRequestFields(FormatInt(testGoID), FormatInt(whySession), "12900", "CZK", "vráceno")
	recurSent := RecurrenceRequestFields(FormatInt(whySession), FormatInt(testGoID), "ORD-7 ", "12900")
	cmd := whyCommand()
	cmdFields := cmd.SignatureFields()
	cases := []whyCase{
		{"missing signature", statusCall, func(*testing.T) string { return "" }, ReasonSignatureMissing, "encryptedSignature", "missing or empty"},
		{"not hex", statusCall, func(*testing.T) string { return "not-a-signature" }, ReasonSignatureMalformed, "encryptedSignature", "not hexadecimal"},
		{"cut short", statusCall, func(t *testing.T) string { return signedWith(t, newSecureKey, sessionSent...)[:70] },
			ReasonSignatureMalformed, "encryptedSignature", "70 hex digits"},
		{"hash not encrypted", statusCall, func(*testing.T) string { return hashHex(newSecureKey, sessionSent) },
			ReasonSignatureNotEncrypted, "encryptedSignature", "plain SHA-1 hex (40 digits, over the right fields and key)"},
		{"another merchant's key", statusCall, signs(otherSecureKey, sessionSent...), ReasonKeyOtherMerchant, "encryptedSignature", "goid 8000000002"},
		{"no key of this merchant", statusCall, signs(strangerKey, sessionSent...), ReasonKeyUnknown, "encryptedSignature", "no secure key of goid 8123456789"},
		{"previous key past previous_until", statusCall, signs(testSecureKey, sessionSent...), ReasonKeyPreviousExpired, "encryptedSignature",
			"accepted only until 2026-11-27T00:00:00Z"},
		{"goid as PHP's float string", statusCall, signs(newSecureKey, with(sessionSent, 0, "8.123456789E+9")...), ReasonFloatString, "targetGoId",
			"PHP's d.dddE+N form"},
		{"session id as Java's float string", statusCall, signs(newSecureKey, with(sessionSent, 1, "3.000000001E9")...), ReasonFloatString,
			"paymentSessionId", "Java's"},
		{"another payment's session id", statusCall, signs(newSecureKey, with(sessionSent, 1, "3000000777")...), ReasonSessionDiffers,
			"paymentSessionId", "another payment"},
		{"another merchant's goid with its own key", statusCall, signs(newSecureKey, with(sessionSent, 0, "8000000002")...), ReasonOtherGoID,
			"targetGoId", "goid 8000000002"},
		{"price signed in crowns, sent in hellers", refundCall(12900), signs(newSecureKey, with(refundSent, 2, "129")...), ReasonAmountUnits,
			"amount", "÷100"},
		{"price signed as decimal crowns", refundCall(12900), signs(newSecureKey, with(refundSent, 2, "129.00")...), ReasonAmountUnits,
			"amount", "decimal"},
		{"price signed in hellers, sent in crowns", refundCall(129), signs(newSecureKey, with(refundSent, 2, "12900")...), ReasonAmountUnits,
			"amount", "×100"},
		{"refund signed as a session", refundCall(12900), signs(newSecureKey, sessionSent...), ReasonOtherOperation, "", "paymentSession"},
		{"recurrence signed as a session", recurrenceCall("ORD-7"), signs(newSecureKey, sessionSent...), ReasonOtherOperation, "", "paymentSession"},
		{"order number sent untrimmed, signed trimmed", recurrenceCall("ORD-7 "), signs(newSecureKey, with(recurSent, 2, "ORD-7")...),
			ReasonWhitespace, "orderNumber", "trimmed"},
		{"product name untrimmed, the rest trimmed", commandCall, signs(newSecureKey, with(cmdFields, 1, cmd.ProductName)...),
			ReasonWhitespace, "productName", "surrounding whitespace"},
		{"hashed in ISO-8859-2", commandCall, func(t *testing.T) string { return signLatin2(t, newSecureKey, cmdFields) },
			ReasonCharset, "productName", "ISO-8859-2"},
		{"other values", recurrenceCall("ORD-7 "), signs(newSecureKey, with(recurSent, 2, "ORD-8")...), ReasonValuesDiffer, "",
			"parentPaymentSessionId|targetGoId|orderNumber|totalPrice"},
	}
	s, logs, told := whyService(t)
	tick := time.Now()
	s.diag.now = func() time.Time { tick = tick.Add(time.Second); return tick } // within the budget
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sig := tc.sig(t)
			id := "req-" + strings.ReplaceAll(tc.name, " ", "-")
			before := logs.Len()
			out, err := tc.call(s, reqid.With(bg, id), sig)
			require.NoError(t, err)
			// The reply is the generic refusal: the same as for a random
			// signature.
			generic, err := tc.call(s, bg, strings.Repeat("0f", 40))
			require.NoError(t, err)
			assert.Equal(t, generic, out, "the caller learns nothing of the diagnosis")

			entries := logs.All()[before:]
			require.NotEmpty(t, entries)
			line := entries[0]
			require.Equal(t, "request refused", line.Message)
			fs := line.ContextMap()
			assert.Equal(t, tc.code, fs["reason_code"], "why: %v", fs["why"])
			if tc.field == "" {
				assert.NotContains(t, fs, "field")
			} else {
				assert.Equal(t, tc.field, fs["field"], "why: %v", fs["why"])
			}
			assert.Contains(t, fs["why"], tc.says)
			assert.Contains(t, fs["reason"], "does not verify", "the reason as today stays")

			r := (*told)[len(*told)-2] // the case's, then the generic one's
			assert.Equal(t, Refusal{At: s.now(), GoID: testGoID, Operation: r.Operation, Reason: tc.code, Field: tc.field, RequestID: id}, r)

			// Nothing of a key, the signature, its hash or decrypted
			// text is logged.
			secrets := []string{newSecureKey, testSecureKey, otherSecureKey, strangerKey}
			if len(sig) > 8 {
				secrets = append(secrets, sig)
			}
			if raw, err := hex.DecodeString(sig); err == nil && len(raw)%8 == 0 && len(raw) > 0 {
				for _, k := range secrets[:4] {
					if h, ok := decryptsToHash(k, raw); ok {
						secrets = append(secrets, h)
					}
				}
			}
			for _, e := range entries {
				text := fmt.Sprint(e.Message, e.ContextMap())
				for _, sec := range secrets {
					assert.NotContains(t, strings.ToLower(text), strings.ToLower(sec))
				}
			}
		})
	}
}

// signLatin2 signs fields as a shop whose page is in ISO-8859-2 does.
func signLatin2(t *testing.T, key string, fields []string) string {
	t.Helper()
	b, err := charmap.ISO8859_2.NewEncoder().String(joinFields(key, fields...))
	require.NoError(t, err)
	return encryptHashOf(t, key, []byte(b))
}

// Non-signature refusals carry a reason code too.
func TestWhyRefusedOtherReasons(t *testing.T) {
	s, logs, _ := whyService(t)
	_, err := serve(bg, s, paymentStatusRow, &SessionInfo{TargetGoID: ptr64(123), PaymentSessionID: ptr64(whySession), EncryptedSignature: "00"})
	require.NoError(t, err)
	_, err = serve(bg, s, paymentStatusRow, &SessionInfo{TargetGoID: ptr64(testGoID), EncryptedSignature: "00"})
	require.NoError(t, err)
	sig := signedWith(t, newSecureKey, RefundRequestFields(FormatInt(testGoID), FormatInt(whySession), "0", "CZK", "")...)
	_, err = serve(bg, s, partiallyRefundPaymentRow, &RefundRequest{TargetGoID: ptr64(testGoID), PaymentSessionID: ptr64(whySession),
		Amount: ptr64(0), Currency: "CZK", EncryptedSignature: sig})
	require.NoError(t, err)
	var codes []any
	for _, e := range logs.FilterMessage("request refused").All() {
		codes = append(codes, e.ContextMap()["reason_code"])
	}
	assert.Equal(t, []any{ReasonUnknownMerchant, ReasonInvalidRequest, ReasonInvalidRequest}, codes)
}

// A flood of forged calls is not diagnosed beyond the budget: diagBurst
// at once, then diagRate per second of the budget's clock.
func TestWhyRefusedBudget(t *testing.T) {
	s, logs, _ := whyService(t)
	clk := &fakeClock{t: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}
	s.diag.now = clk.now
	forged := signedWith(t, strangerKey, sessionSent...)
	codes := func(n int) map[any]int {
		before := logs.Len()
		for range n {
			_, err := statusCall(s, bg, forged)
			require.NoError(t, err)
		}
		out := map[any]int{}
		for _, e := range logs.All()[before:] {
			out[e.ContextMap()["reason_code"]]++
		}
		return out
	}
	assert.Equal(t, map[any]int{ReasonKeyUnknown: diagBurst, ReasonNotDiagnosed: 10}, codes(diagBurst+10))
	clk.add(time.Second / 2)
	assert.Equal(t, map[any]int{ReasonKeyUnknown: diagRate / 2, ReasonNotDiagnosed: 5}, codes(diagRate/2+5))
}

// The diagnosis tells a wrong key from the right one by the decrypted
// text, which the signature vectors of the legacy libraries confirm.
func TestWhyDecryptsToHashOnlyWithTheRightKey(t *testing.T) {
	for _, v := range loadVariantVectors(t) {
		raw, err := hex.DecodeString(v.EncryptedSignature)
		require.NoError(t, err)
		_, ok := decryptsToHash(v.SecureKey, raw)
		assert.True(t, ok, v.Name)
		_, ok = decryptsToHash(strangerKey, raw)
		assert.False(t, ok, v.Name)
	}
}

// encryptHashOf is the signature of bytes b already joined and encoded.
func encryptHashOf(t *testing.T, key string, b []byte) string {
	t.Helper()
	block, err := tripleDES(key)
	require.NoError(t, err)
	sum := sha1.Sum(b)
	plain := []byte(hex.EncodeToString(sum[:]) + strings.Repeat("\x00", 8-len(sum)*2%8))
	out := make([]byte, len(plain))
	ecb(block, out, plain, block.Encrypt)
	return hex.EncodeToString(out)
}

// BenchmarkWhyHonest is an honest paymentStatus: the diagnosis runs only on
// refusal, so this costs what it cost before (compare with the same
// benchmark on the parent commit).
func BenchmarkWhyHonest(b *testing.B) {
	cfg := unitConfig(&testing.T{})
	gw := newFakeGateway()
	cfg.Gateway = gw
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	id := gw.add(restbackend.StatePaid, 100)
	sig, _ := Sign(testSecureKey, PaymentSessionFields(FormatInt(testGoID), FormatInt(id))...)
	in := &SessionInfo{TargetGoID: ptr64(testGoID), PaymentSessionID: &id, EncryptedSignature: sig}
	b.ReportAllocs()
	for b.Loop() {
		st, err := serve(bg, s, paymentStatusRow, in)
		if err != nil || st.Result != CallCompleted {
			b.Fatal(err, st.Result)
		}
	}
}

// BenchmarkWhyRefused is a refused call of each kind: a bounded cost, the
// worst the right key over values no variant explains (every variant
// tried) and a forged signature among many merchants (every key tried).
func BenchmarkWhyRefused(b *testing.B) {
	t := &testing.T{}
	bench := func(name string, s *Service, call func(s *Service, ctx context.Context, sig string) (any, error), sig string, code string) {
		b.Run(name, func(b *testing.B) {
			s.diag.now = func() time.Time { return time.Time{}.Add(time.Hour) } // past the first take: refilled
			b.ReportAllocs()
			for b.Loop() {
				s.diag.mu.Lock()
				s.diag.tokens = diagBurst
				s.diag.mu.Unlock()
				if _, err := call(s, bg, sig); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	s, _, _ := whyService(t)
	cmd := whyCommand()
	f := cmd.SignatureFields()
	bench("missing_signature", s, statusCall, "", ReasonSignatureMissing)
	other, _ := Sign(otherSecureKey, sessionSent...)
	bench("another_merchants_key", s, statusCall, other, ReasonKeyOtherMerchant)
	amount, _ := Sign(newSecureKey, with(sessionSent, 0, "8.123456789E+9")...)
	bench("goid_float_string", s, statusCall, amount, ReasonFloatString)
	differs, _ := Sign(newSecureKey, with(f, 4, "43")...)
	bench("createPayment_values_differ_worst", s, commandCall, differs, ReasonValuesDiffer)

	// 200 merchants: a forged call decrypts with at most maxDiagKeys.
	cfg := unitConfig(t)
	for i := range 199 {
		m := testMerchant()
		m.GoID, m.ClientID, m.SecureKey = int64(8000000100+i), fmt.Sprint("c", i), fmt.Sprintf("Merchant-%03d-SecureKey-0123", i)
		cfg.Merchants = append(cfg.Merchants, m)
	}
	cfg.Gateway = newFakeGateway()
	many, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	forged, _ := Sign(strangerKey, sessionSent...)
	bench("forged_200_merchants", many, statusCall, forged, ReasonKeyUnknown)
	many.diag.now = nil
	b.Run("forged_over_budget", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			many.diag.mu.Lock()
			many.diag.tokens, many.diag.last = 0, time.Now().Add(time.Hour)
			many.diag.mu.Unlock()
			if _, err := statusCall(many, bg, forged); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A repeat of a money call refused while the first is in progress carries
// the replay reason.
func TestWhyRefusedReplay(t *testing.T) {
	s, l, clk := onceService(t)
	var told []Refusal
	s.diag.onRefusal = func(r Refusal) { told = append(told, r) }
	_, claimed, err := l.st.ClaimCall(bg, ledgerKey(refundOp, "digest"), clk.now(), time.Hour)
	require.NoError(t, err)
	require.True(t, claimed)
	r := &refundLike{readable: true}
	_, err = r.run(bg, testCall(s, refundOp, "digest"))
	assert.Equal(t, errInProgress, err)
	require.Len(t, told, 1)
	assert.Equal(t, ReasonReplay, told[0].Reason)
	assert.Equal(t, int64(testGoID), told[0].GoID)
}

// The diagnosis reads the merchant set the call pinned, not the one in
// force when it runs: a call pinned before a reload that removed the other
// merchant still names that merchant's key, and one pinned to a set
// without it does not, whatever is in force.
func TestWhyReadsThePinnedMerchantSet(t *testing.T) {
	s, logs, _ := whyService(t)
	withOther := s.InForce()
	alone, ps := s.Merchants(nil, []Merchant{withOther.byGoID[testGoID]}, 0)
	require.Empty(t, ps)
	sig := signedWith(t, otherSecureKey, sessionSent...)

	s.Use(alone) // a reload dropped the other merchant
	_, err := statusCall(s, WithMerchants(bg, withOther), sig)
	require.NoError(t, err)
	s.Use(withOther) // and one put it back
	_, err = statusCall(s, WithMerchants(bg, alone), sig)
	require.NoError(t, err)

	var codes []any
	for _, e := range logs.FilterMessage("request refused").All() {
		codes = append(codes, e.ContextMap()["reason_code"])
	}
	assert.Equal(t, []any{ReasonKeyOtherMerchant, ReasonKeyUnknown}, codes, "each call diagnosed by the set it pinned")
}
