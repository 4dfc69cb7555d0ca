package operations

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

type usageRows interface {
	usage.Store
	Usage(ctx context.Context, goids ...int64) ([]store.UsageCount, error)
}

// recordedService is a Service on a fake gateway with a usage record and an
// observer.
func recordedService(t *testing.T) (*Service, *fakeGateway, *usage.Recorder, usageRows, *observed) {
	t.Helper()
	us := memStore(t).(usageRows)
	rec, err := usage.New(usage.Config{Store: us, Known: func(_ context.Context, g int64) bool { return g == testGoID }})
	require.NoError(t, err)
	obs := &observed{}
	gw := newFakeGateway()
	cfg := unitConfig(t)
	cfg.Gateway, cfg.Usage, cfg.Observer = gw, rec, obs
	s, err := New(cfg)
	require.NoError(t, err)
	return s, gw, rec, us, obs
}

// usageOf is goid's usage record as "kind name detail calls" lines.
func usageOf(t *testing.T, rec *usage.Recorder, us usageRows, goid int64) []string {
	t.Helper()
	require.NoError(t, rec.Flush(bg))
	rows, err := us.Usage(bg, goid)
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, strings.Join(strings.Fields(fmt.Sprintf("%s %s %s %d", r.Kind, r.Name, r.Detail, r.Calls)), " "))
	}
	slices.Sort(out)
	return out
}

// payBaseCommand is a pay-base-v2 form's command naming channels, signed
// with the merchant's key (forged: with a signature that does not verify).
func payBaseCommand(t *testing.T, order, channels string, forged bool) *PaymentCommand {
	goid, price := int64(testGoID), int64(12900)
	c := &PaymentCommand{TargetGoID: &goid, ProductName: "Kniha", TotalPrice: &price, Currency: "CZK", OrderNumber: order,
		SuccessURL: "https://shop.example/ok", FailedURL: "https://shop.example/ko", PaymentChannels: channels}
	c.EncryptedSignature = signed(t, c.SignatureFields()...)
	if forged {
		c.EncryptedSignature = strings.Repeat("00", 24)
	}
	return c
}

// Forged pay-base-v2 links (the shop's goid, a made-up signature, a
// distinct channel code and client each) count as refused pay-base-v2
// calls and nothing more: they fill none of the record's bounded slots, so
// the shop's later real use of the retired eu_mb_w still shows. A real
// pay-base-v2 is recorded once, as the flow, with the browser as client:
// never also as a createPayment the shop did not call. The observer is
// told the same calls.
func TestPayBaseRecordedOnceAndForgedOnesFillNothing(t *testing.T) {
	s, gw, rec, us, obs := recordedService(t)
	for i := range 24 {
		ctx := usage.WithClient(bg, usage.Client{Family: usage.FamilyPHP, Version: fmt.Sprintf("8.%d.0", i)})
		ctx = usage.WithFeatures(ctx, usage.FeatureWindows1250)
		_, err := s.PayBase(ctx, FormatInt(testGoID), payBaseCommand(t, fmt.Sprint("F-", i), fmt.Sprintf("xx_forged_%02d", i), true))
		require.ErrorIs(t, err, ErrBadSignature)
	}
	assert.Zero(t, gw.count("create"), "a forged form creates nothing")

	ctx := usage.WithClient(bg, usage.Client{Family: usage.FamilyBrowser})
	loc, err := s.PayBase(ctx, FormatInt(testGoID), payBaseCommand(t, "OBJ-1", "eu_mb_w,eu_gp_u", false))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(loc, "https://gw.example/"), loc)
	assert.Equal(t, 1, gw.count("create"))

	assert.Equal(t, []string{
		"call pay-base-v2 ok 1",
		"call pay-base-v2 unverified 24", // refused before verification
		"client browser 1",
		"feature channel eu_gp_u 1",
		"feature paymentChannels 1",
		"retired channel eu_mb_w 1",
	}, usageOf(t, rec, us, testGoID))

	var kinds []string
	for _, o := range obs.got {
		assert.Equal(t, CallOutcome{Operation: usage.FlowPayBase, Flow: true, GoID: testGoID, Result: o.Result, Duration: o.Duration}, o)
		kinds = append(kinds, o.Result.String())
	}
	assert.Equal(t, append(slices.Repeat([]string{"bad_signature"}, 24), "ok"), kinds, "one outcome per request, no createPayment")
}

// Every browser flow ends in one outcome of the one vocabulary; a refusal
// of the caller's making is a client error, a failure of the gateway not.
func TestFlowOutcomes(t *testing.T) {
	s, gw, rec, us, obs := recordedService(t)
	id := gw.add("PAID", 100)
	sig := signed(t, PaymentSessionFields(FormatInt(testGoID), FormatInt(id))...)
	ctx := usage.WithClient(bg, usage.Client{Family: usage.FamilyBrowser})

	_, err := s.PayFull(ctx, PayFullRequest{TargetGoID: FormatInt(testGoID), PaymentSessionID: FormatInt(id), EncryptedSignature: sig})
	require.NoError(t, err)
	_, err = s.PayFull(ctx, PayFullRequest{TargetGoID: FormatInt(testGoID), PaymentSessionID: FormatInt(id), EncryptedSignature: "00"})
	require.ErrorIs(t, err, ErrBadSignature)
	_, err = s.PayFull(ctx, PayFullRequest{TargetGoID: "42", PaymentSessionID: FormatInt(id), EncryptedSignature: sig})
	var um *UnknownMerchantError
	require.ErrorAs(t, err, &um)
	_, err = s.PayFull(ctx, PayFullRequest{TargetGoID: "x", PaymentSessionID: FormatInt(id)})
	var bp *BadParamError
	require.ErrorAs(t, err, &bp)
	// A return without its token: refused, the browser not counted.
	_, err = s.ReturnURL(ctx, CallbackRequest{GoID: FormatInt(testGoID), PaymentID: FormatInt(id), Token: "forged"})
	require.Error(t, err)

	var got []string
	for _, o := range obs.got {
		got = append(got, fmt.Sprint(o.Operation, " ", o.GoID, " ", o.Result, " ", o.Result.ClientError()))
	}
	assert.Equal(t, []string{
		"pay-full-v2 8123456789 ok false",
		"pay-full-v2 8123456789 bad_signature true",
		"pay-full-v2 0 refused true",
		"pay-full-v2 0 refused true",
		"return 8123456789 refused true",
	}, got)
	assert.Equal(t, []string{
		"call pay-full-v2 ok 1",
		"call pay-full-v2 unverified 1",
		"call return unverified 1",
		"client browser 1",
	}, usageOf(t, rec, us, testGoID), "only the verified call counts its client")
	assert.False(t, ResultServerError.ClientError())
}

// Forged calls (the merchant's goid, a signature that does not verify, or
// none) move nothing but a refused count: not the merchant's last call
// (the gauge, LastCalls), not its totals (usage_merchants), not its
// clients. A verified call after them moves the last call as before.
func TestForgedCallsMoveNoLastCall(t *testing.T) {
	s, gw, rec, us, _ := recordedService(t)
	id := gw.add(restbackend.StatePaid, 12900)
	ctx := usage.WithClient(bg, usage.Client{Family: usage.FamilyPHP, Version: "8.3.0"})
	for range 3 {
		in := sessionInfo(t, id)
		in.EncryptedSignature = sessionInfo(t, id+1).EncryptedSignature // forged
		got, err := serve(ctx, s, paymentStatusRow, in)
		require.NoError(t, err)
		assert.Equal(t, callFailed, got.Result)
	}
	in := sessionInfo(t, id)
	in.EncryptedSignature = "" // none at all
	_, err := serve(ctx, s, paymentStatusRow, in)
	require.NoError(t, err)
	_, err = s.PayFull(ctx, PayFullRequest{TargetGoID: FormatInt(testGoID), PaymentSessionID: FormatInt(id), EncryptedSignature: "00"})
	require.ErrorIs(t, err, ErrBadSignature)

	assert.Empty(t, rec.LastCalls(), "forged calls move no last call (before the flush)")
	assert.Equal(t, []string{
		"call pay-full-v2 unverified 1",
		"call paymentStatus unverified 4",
	}, usageOf(t, rec, us, testGoID), "counted as unverified, and nothing more")
	assert.Empty(t, rec.LastCalls(), "forged calls move no last call (after the flush)")
	totals, err := us.UsageMerchants(bg)
	require.NoError(t, err)
	assert.Empty(t, totals, "forged calls move no merchant totals")
	days, err := us.(interface {
		UsageDays(ctx context.Context, goids ...int64) ([]store.UsageDayCount, error)
	}).UsageDays(bg, testGoID)
	require.NoError(t, err)
	require.Len(t, days, 1)
	assert.Equal(t, int64(5), days[0].Refused, "each forged call counts as refused in its day")
	assert.Zero(t, days[0].Calls)

	// The shop's own call moves them.
	before := time.Now().Add(-time.Second)
	_, err = serve(ctx, s, paymentStatusRow, sessionInfo(t, id))
	require.NoError(t, err)
	require.Contains(t, rec.LastCalls(), int64(testGoID))
	assert.True(t, rec.LastCalls()[testGoID].After(before))
	require.NoError(t, rec.Flush(bg))
	totals, err = us.UsageMerchants(bg)
	require.NoError(t, err)
	require.Len(t, totals, 1)
	assert.Equal(t, int64(1), totals[0].Calls, "only the verified call is in the totals")
}
