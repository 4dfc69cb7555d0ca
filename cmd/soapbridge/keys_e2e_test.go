package main

// Key rotation against the real binary: which key signs a payment's
// returns and notifications (the one the shop created it with, whatever a
// stranger replays), and how long a previous key lives (previous_until, its
// default bound, and no revival by a later reload or restart).

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/web"
)

// writeRotationConfig writes a config file of the demo merchant in
// rotation: rotatedKey in force, demoSecureKey its previous key (none when
// previous is false), until previousUntil ("" not set), notifying notify
// ("" none).
func writeRotationConfig(t *testing.T, path string, previous bool, previousUntil, notify string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "merchants:\n  - goid: %s\n    client_id: %s\n    client_secret: %s\n    secure_key: %s\n",
		demoGoID, demoClientID, demoClientSecret, rotatedKey)
	if previous {
		fmt.Fprintf(&b, "    previous_secure_key: %s\n", demoSecureKey)
	}
	if previousUntil != "" {
		fmt.Fprintf(&b, "    previous_until: %s\n", previousUntil)
	}
	if notify != "" {
		fmt.Fprintf(&b, "    notification_url: %s\n", notify)
	}
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(b.String()), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// redirectOf GETs (or, with form, POSTs) u and returns where it redirects.
func redirectOf(t *testing.T, u string, form url.Values) string {
	t.Helper()
	var resp *http.Response
	var err error
	if form == nil {
		resp, err = noRedirect.Get(u)
	} else {
		resp, err = noRedirect.PostForm(u, form)
	}
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, []int{http.StatusFound, http.StatusSeeOther}, resp.StatusCode, u)
	loc := resp.Header.Get("Location")
	require.NotEmpty(t, loc)
	return loc
}

// statusWith calls paymentStatus of payment id signed with key and returns
// its result: CALL_COMPLETED, or "bad signature" when the signature is
// refused (any other failure fails the test).
func statusWith(t *testing.T, bridge, key, id, rid string) string {
	t.Helper()
	sig, err := operations.Sign(key, operations.PaymentSessionFields(demoGoID, id)...)
	require.NoError(t, err)
	doc, err := lbSOAP(bridge, "paymentStatus", `<paymentSessionInfo xsi:type="ns2:EPaymentSessionInfo">`+str("encryptedSignature", sig)+
		long("paymentSessionId", id)+long("targetGoId", demoGoID)+`</paymentSessionInfo>`, rid)
	require.NoError(t, err)
	res, desc := flowText(doc, "result"), flowText(doc, "resultDescription")
	if res != "CALL_COMPLETED" {
		require.Contains(t, desc, "encryptedSignature", "refused for another reason than its signature")
		return "bad signature"
	}
	return res
}

// identitySignedWith reports whether the paymentIdentity of q verifies with key.
func identitySignedWith(key string, q url.Values) bool {
	return operations.Verify(key, q.Get("encryptedSignature"), operations.PaymentIdentityFields(
		q.Get("targetGoId"), q.Get("paymentSessionId"), q.Get("parentPaymentSessionId"), q.Get("orderNumber"))...)
}

// TestKeyRotationReplayRepinsNothing: during a rotation the shop has
// moved to the new key and creates a payment with it; a stranger replays,
// while its customer is at the gateway, what an earlier payment of the old
// key left behind (its pay-full-v2 link, or its signed paymentStatus). The
// new payment's return redirect and notification are still signed with the
// new key, the one the shop verifies with.
func TestKeyRotationReplayRepinsNothing(t *testing.T) {
	for _, replay := range []string{"old pay-full-v2 link", "old signed paymentStatus"} {
		t.Run(replay, func(t *testing.T) {
			notified := make(chan url.Values, 10)
			shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				notified <- r.URL.Query()
			}))
			t.Cleanup(shop.Close)
			path := filepath.Join(t.TempDir(), "soapbridge.yaml")
			writeRotationConfig(t, path, true, time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339), shop.URL+"/notify")
			b := startBridge(t, withConfigFile(path))
			goid, _ := strconv.ParseInt(demoGoID, 10, 64)

			// Created before the shop moved: the old key.
			older := createFor(t, b.URL, demoCfgMerchant, "KEY-OLD-1")
			// The shop on the new key.
			newer := createFor(t, b.URL, cfgMerchant{goid: demoGoID, client: demoClientID, secret: demoClientSecret, key: rotatedKey}, "KEY-NEW-1")
			id, _ := strconv.ParseInt(newer, 10, 64)
			link, err := web.PayFullURL(b.URL, rotatedKey, goid, id)
			require.NoError(t, err)
			gwPage := redirectOf(t, link, nil) // the customer at the gateway

			switch replay {
			case "old pay-full-v2 link":
				oid, _ := strconv.ParseInt(older, 10, 64)
				old, err := web.PayFullURL(b.URL, demoSecureKey, goid, oid)
				require.NoError(t, err)
				redirectOf(t, old, nil)
			default:
				require.Equal(t, "CALL_COMPLETED", statusWith(t, b.URL, demoSecureKey, older, "replay-1"))
			}

			// The customer pays and comes back through the bridge.
			back := redirectOf(t, gwPage, url.Values{"sandbox_action": {"pay"}, "instrument": {"PAYMENT_CARD"}, "outcome": {"success"}})
			require.True(t, strings.HasPrefix(back, b.URL+web.PathReturn), back)
			shopPage, err := url.Parse(redirectOf(t, back, nil))
			require.NoError(t, err)
			q := shopPage.Query()
			assert.Equal(t, newer, q.Get("paymentSessionId"))
			assert.True(t, identitySignedWith(rotatedKey, q), "the return redirect is signed with the key the payment was created with")
			assert.False(t, identitySignedWith(demoSecureKey, q))

			deadline := time.After(30 * time.Second)
			for {
				select {
				case n := <-notified:
					if n.Get("paymentSessionId") != newer {
						continue
					}
					assert.True(t, identitySignedWith(rotatedKey, n), "the notification is signed with the key the payment was created with")
					assert.False(t, identitySignedWith(demoSecureKey, n))
					return
				case <-deadline:
					t.Fatalf("no notification of payment %s", newer)
				}
			}
		})
	}
}

// TestKeyRotationDefaultBound: a previous key without previous_until is
// accepted for the default bound from when a bridge first saw it, said at
// start, on the status page and in the metrics; a restart does not extend
// it.
func TestKeyRotationDefaultBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soapbridge.yaml")
	db := filepath.Join(t.TempDir(), "bridge.db")
	writeRotationConfig(t, path, true, "", "")
	opts := []bridgeOpt{withConfigFile(path), withDB(db), withEnv("SOAPBRIDGE_METRICS_MERCHANT_LABELS=true")}
	b := startBridge(t, opts...)
	id := createFor(t, b.URL, demoCfgMerchant, "BOUND-1")
	assert.Equal(t, "CALL_COMPLETED", statusWith(t, b.URL, demoSecureKey, id, "old-1"), "the old key is accepted")

	b.waitLog(1, "previous_secure_key has no previous_until", "merchants[0].previous_secure_key")
	bound := logField(t, b, "previous_secure_key has no previous_until", "until")
	ends, err := time.Parse("2006-01-02T15:04:05.000Z0700", bound) // zap's ISO 8601
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(operations.DefaultPreviousOverlap), ends, time.Hour, "first seen + the default bound")
	_, page := adminGet(t, b.AdminURL+"/")
	assert.Contains(t, page, "Key rotations under way")
	assert.Contains(t, page, "<td>"+demoGoID+"</td><td>secure key</td>")
	assert.NotContains(t, page, "not since start", "the old key was used: when it last was")
	assert.Contains(t, page, ends.UTC().Format("2006-01-02 15:04:05 UTC")+` <span class="bad">(previous_until not set`)
	_, metrics := adminGet(t, b.AdminURL+"/metrics")
	assert.True(t, strings.Contains(metrics, "\nsoapbridge_key_overlap_merchants 1\n"), "one merchant in overlap")
	assert.Equal(t, float64(ends.Unix()), metricValue(t, metrics, "soapbridge_merchant_key_overlap_end_timestamp_seconds", `goid="`+demoGoID+`"`))
	b.Stop()

	// A restart: the same bound, not a new one.
	b = startBridge(t, opts...)
	b.waitLog(1, "previous_secure_key has no previous_until")
	assert.Equal(t, bound, logField(t, b, "previous_secure_key has no previous_until", "until"), "a restart does not extend the bound")
}

// TestKeyRotationEndedKeyNotRevived: once a previous key's previous_until
// has passed, neither a reload that drops previous_until nor a restart
// brings it back.
func TestKeyRotationEndedKeyNotRevived(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soapbridge.yaml")
	db := filepath.Join(t.TempDir(), "bridge.db")
	opts := []bridgeOpt{withConfigFile(path), withDB(db), withEnv("SOAPBRIDGE_METRICS_MERCHANT_LABELS=true")}
	newKey := cfgMerchant{goid: demoGoID, client: demoClientID, secret: demoClientSecret, key: rotatedKey}

	// A rotation the operator ends soon; the test waits for the old key to
	// be refused, whenever that is.
	writeRotationConfig(t, path, true, time.Now().Add(2*time.Second).UTC().Format(time.RFC3339), "")
	b := startBridge(t, opts...)
	id := createFor(t, b.URL, newKey, "ENDED-1")
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; statusWith(t, b.URL, demoSecureKey, id, fmt.Sprintf("old-%d", i)) == "CALL_COMPLETED"; i++ {
		require.False(t, time.Now().After(deadline), "the old key still accepted 30 s after its previous_until")
		time.Sleep(100 * time.Millisecond)
	}

	// A reload that drops previous_until does not revive it...
	writeRotationConfig(t, path, true, "", "")
	b.signal(syscall.SIGHUP)
	b.waitLog(1, "configuration reloaded")
	assert.Equal(t, "bad signature", statusWith(t, b.URL, demoSecureKey, id, "after-reload"), "an ended previous key stays refused")
	assert.Equal(t, "CALL_COMPLETED", statusWith(t, b.URL, rotatedKey, id, "new-after-reload"))
	assert.Equal(t, 1, countLines(b, "previous_secure_key ended earlier and is never accepted again"), "said")
	_, page := adminGet(t, b.AdminURL+"/")
	assert.Contains(t, page, "none: every merchant accepts its current key and secret only")
	b.Stop()

	// ...nor does a restart with it (the embedded sandbox forgets its
	// payments: a new one).
	b = startBridge(t, opts...)
	id = createFor(t, b.URL, newKey, "ENDED-2")
	assert.Equal(t, "bad signature", statusWith(t, b.URL, demoSecureKey, id, "after-restart"), "nor after a restart")
	_, metrics := adminGet(t, b.AdminURL+"/metrics")
	assert.True(t, strings.Contains(metrics, "\nsoapbridge_key_overlap_merchants 0\n"), "none in overlap")
}

// logField is the string value of field in the bridge's last log line
// containing msg.
func logField(t *testing.T, b *bridgeProc, msg, field string) string {
	t.Helper()
	var last string
	for line := range strings.SplitSeq(b.log.String(), "\n") {
		if strings.Contains(line, msg) {
			last = line
		}
	}
	require.NotEmpty(t, last, "no log line %q", msg)
	_, rest, ok := strings.Cut(last, `"`+field+`":"`)
	require.True(t, ok, "no field %s in %s", field, last)
	v, _, _ := strings.Cut(rest, `"`)
	return v
}
