package soapapi

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/beevik/etree"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/wsdl"
)

const soapPath = "/axis/EPaymentServiceV2"

func TestAddress(t *testing.T) {
	tests := []struct {
		name      string
		publicURL string
		host      string
		tls       bool
		headers   map[string]string
		want      string // "" means an error
	}{
		{name: "configured", publicURL: "https://pay.example.com/", host: "evil\"", want: "https://pay.example.com" + soapPath},
		{name: "configured with prefix", publicURL: "https://example.com/legacy", host: "ignored", want: "https://example.com/legacy" + soapPath},
		{name: "host", host: "shop.example.com:8080", want: "http://shop.example.com:8080" + soapPath},
		{name: "host ipv4", host: "127.0.0.1:8080", want: "http://127.0.0.1:8080" + soapPath},
		{name: "host ipv6", host: "[::1]:8080", want: "http://[::1]:8080" + soapPath},
		{name: "host ipv6 no port", host: "[2001:db8::1]", want: "http://[2001:db8::1]" + soapPath},
		{name: "tls", host: "secure.example.com", tls: true, want: "https://secure.example.com" + soapPath},
		{name: "forwarded", host: "10.0.0.5:8080",
			headers: map[string]string{"X-Forwarded-Proto": "HTTPS", "X-Forwarded-Host": "pay.example.com, proxy.internal"},
			want:    "https://pay.example.com" + soapPath},
		{name: "forwarded proto only", host: "pay.example.com", headers: map[string]string{"X-Forwarded-Proto": "https"}, want: "https://pay.example.com" + soapPath},
		{name: "junk forwarded proto ignored", host: "pay.example.com", headers: map[string]string{"X-Forwarded-Proto": "javascript"}, want: "http://pay.example.com" + soapPath},
		{name: "junk host markup", host: `x"><a href="y`},
		{name: "junk host space", host: "a b"},
		{name: "junk host path", host: "example.com/x"},
		{name: "junk host userinfo", host: "user@example.com"},
		{name: "junk port", host: "example.com:99999"},
		{name: "empty port", host: "example.com:"},
		{name: "bare ipv6", host: "::1"},
		{name: "bad ipv6", host: "[nothex]:80"},
		{name: "empty host", host: ""},
		{name: "leading dash label", host: "-x.example.com"},
		{name: "junk forwarded host", host: "ok.example.com", headers: map[string]string{"X-Forwarded-Host": "<x>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, soapPath+"?wsdl", nil)
			r.Host = tc.host
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			got, err := Address(r, tc.publicURL, soapPath)
			if tc.want == "" {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func serve(t *testing.T, publicURL, target, host string) *httptest.ResponseRecorder {
	t.Helper()
	e := echo.New()
	e.GET(soapPath, WSDLHandler(wsdl.New(wsdl.Options{}), publicURL, soapPath, ""))
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.Host = host
	w := httptest.NewRecorder()
	e.ServeHTTP(w, r)
	return w
}

func TestHandlerServesWSDL(t *testing.T) {
	for _, q := range []string{"?wsdl", "?WSDL", "?Wsdl", "?wsdl=", "?wsdl=1", "?x=1&wsdl"} {
		t.Run(q, func(t *testing.T) {
			w := serve(t, "", soapPath+q, "bridge.example.com:8080")
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, "text/xml; charset=utf-8", w.Header().Get("Content-Type"))
			doc := etree.NewDocument()
			require.NoError(t, doc.ReadFromBytes(w.Body.Bytes()))
			loc := doc.FindElement("//service/port/address")
			require.NotNil(t, loc)
			assert.Equal(t, "http://bridge.example.com:8080"+soapPath, loc.SelectAttrValue("location", ""))
		})
	}
}

func TestHandlerConfiguredAddress(t *testing.T) {
	w := serve(t, "https://pay.example.com", soapPath+"?wsdl", "internal:8080")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `location="https://pay.example.com`+soapPath+`"`)
}

func TestHandlerPage(t *testing.T) {
	w := serve(t, "", soapPath, "bridge.example.com")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "text/html; charset=UTF-8", w.Header().Get("Content-Type"))
	body := w.Body.String()
	assert.Contains(t, body, "<h1>AxisEPaymentProviderV2Service</h1>")
	assert.Contains(t, body, `<a href="http://bridge.example.com`+soapPath+`?wsdl">`)
	assert.Contains(t, body, "<li>paymentStatusWCust</li>")
	assert.Equal(t, 1, strings.Count(body, "<li>refundPayment</li>"))
}

func TestHandlerRejectsJunkHost(t *testing.T) {
	w := serve(t, "", soapPath+"?wsdl", `evil"><x`)
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.Contains(t, w.Body.String(), "invalid Host header")
	assert.NotContains(t, w.Body.String(), "<x")
}

// BenchmarkHandlerWSDL: one ?wsdl request through echo (address from Host,
// rendered bytes cached).
func BenchmarkHandlerWSDL(b *testing.B) {
	e := echo.New()
	e.GET(soapPath, WSDLHandler(wsdl.New(wsdl.Options{}), "", soapPath, ""))
	r := httptest.NewRequest(http.MethodGet, soapPath+"?wsdl", nil)
	r.Host = "bridge.example.com:8080"
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

func TestHandlerServesEncodingSchema(t *testing.T) {
	for _, q := range []string{"?xsd=soapenc", "?XSD=SoapEnc", "?x=1&xsd=soapenc"} {
		w := serve(t, "", soapPath+q, "bridge.example.com:8080")
		require.Equal(t, http.StatusOK, w.Code, q)
		assert.Equal(t, "text/xml; charset=utf-8", w.Header().Get("Content-Type"))
		assert.Equal(t, wsdl.EncodingSchema(), w.Body.Bytes())
	}
	// Other xsd values are not a schema of ours: the service page.
	w := serve(t, "", soapPath+"?xsd=other", "bridge.example.com")
	assert.Equal(t, "text/html; charset=UTF-8", w.Header().Get("Content-Type"))
}
