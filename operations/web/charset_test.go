package web

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// The base-integration form of a windows-1250 shop page (testdata file,
// percent-encoded windows-1250, signed over the windows-1250 bytes, lang
// and countryCode CZE): the payment is created with the product name in
// clean UTF-8. A body that is neither UTF-8 nor windows-1250 gets a 400
// page and no payment.
func TestPayBaseWindows1250Form(t *testing.T) {
	env := newFlEnv(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "clients", "variants", "pay-base-v2-cp1250.form"))
	require.NoError(t, err)
	post := func(body string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, env.bridge.URL+PathPayBase, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := env.client.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := post(string(raw))
	require.Equal(t, http.StatusFound, resp.StatusCode, body(t, resp))
	sess, err := env.st.Session(context.Background(), 3000000001)
	require.NoError(t, err)
	assert.Equal(t, "Objednávka č. 1250 – žluťoučký kůň", sess.ProductName)
	p, err := env.gw.PaymentStatus(context.Background(), restbackend.Credentials{ClientID: flClientID, ClientSecret: flSecret}, 3000000001)
	require.NoError(t, err)
	assert.Equal(t, "CS", p.Lang)
	require.NotNil(t, p.Payer)
	require.NotNil(t, p.Payer.Contact)
	assert.Equal(t, "Jiří", p.Payer.Contact.FirstName)
	assert.Equal(t, "CZE", p.Payer.Contact.CountryCode)

	// 0x81 is undefined in windows-1250 and invalid in UTF-8.
	bad := strings.Replace(string(raw), "Objedn%E1vka", "Objedn%81vka", 1)
	resp = post(bad)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body(t, resp), "neither UTF-8 nor windows-1250")
	_, err = env.st.Session(context.Background(), 3000000002)
	assert.ErrorIs(t, err, store.ErrNotFound, "no payment for an unreadable form")

	// A changed product name no longer verifies in either charset.
	forged := strings.Replace(string(raw), "Objedn%E1vka", "Objednavka", 1)
	resp = post(forged)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestFromWindows1250(t *testing.T) {
	s, ok := fromWindows1250("\x8a\x9e\xe8\xf8")
	require.True(t, ok)
	assert.Equal(t, "Šžčř", s)
	for _, b := range []string{"\x81", "\x83", "\x88", "\x90", "\x98"} {
		_, ok := fromWindows1250("a" + b)
		assert.False(t, ok, "%x", b)
	}
}
