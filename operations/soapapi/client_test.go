package soapapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/soapenc"
	"github.com/legacybridge/soapbridge/store"
)

const wireDir = "../../testdata/usage/wire"

// readWireFile reads one recorded request (request line, headers, body).
func readWireFile(t *testing.T, path string) *http.Request {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	require.NoError(t, err, path)
	return req
}

// TestClientOfRecordedRequests: each client library is recognised from a
// request it sent (real captures of PHP SoapClient 8.2, Axis 1.4 stubs,
// suds 1.1 and zeep 4.2; .NET, SOAP::Lite and Node.js soap written from the
// facts, see the README there), and again by its dialect alone when its
// User-Agent is gone (as behind a proxy that drops it, or a library set to
// send its own). Node.js soap has no dialect of its own.
func TestClientOfRecordedRequests(t *testing.T) {
	want := map[string]usage.Client{
		"php-soapclient": {Family: usage.FamilyPHP, Version: "8.2.36"},
		"axis":           {Family: usage.FamilyAxis, Version: "1.4"},
		"dotnet":         {Family: usage.FamilyDotNet, Version: "2.0.50727.8825"},
		"suds":           {Family: usage.FamilySuds, Version: "Python-urllib/3.11"},
		"zeep":           {Family: usage.FamilyZeep, Version: "4.2.1"},
		"soap-lite":      {Family: usage.FamilySOAPLite, Version: "1.27"},
		"node-soap":      {Family: usage.FamilyNodeSoap, Version: "1.1.6"},
	}
	files, err := filepath.Glob(filepath.Join(wireDir, "*.http"))
	require.NoError(t, err)
	require.Len(t, files, len(want))
	for _, f := range files {
		name := filepath.Base(f)
		fam := name[:strings.LastIndex(name, "-")]
		t.Run(fam, func(t *testing.T) {
			req := readWireFile(t, f)
			call, err := soapenc.ReadRequest(req, soapenc.DefaultLimits())
			require.NoError(t, err)
			assert.Equal(t, want[fam], ClientOf(req, call.Wire), "with its User-Agent")

			req.Header.Del("User-Agent")
			dialect := usage.Client{Family: want[fam].Family}
			if fam == "node-soap" {
				dialect = usage.Client{Family: usage.FamilyUnknown}
			}
			assert.Equal(t, dialect, ClientOf(req, call.Wire), "by its dialect")
		})
	}
}

// TestClientOfCaptures: every captured request of the reference captures
// and of the other libraries' variants (bodies only) is told by its
// dialect; the Java 2.4 library's pre-generated stubs are Axis 1.4's.
func TestClientOfCaptures(t *testing.T) {
	cases := map[string]usage.Family{
		"../../testdata/soapenc/captures/php-soapclient/*.xml": usage.FamilyPHP,
		"../../testdata/soapenc/captures/axis-1.4/*.xml":       usage.FamilyAxis,
		"../../testdata/clients/variants/dotnet-*.xml":         usage.FamilyDotNet,
		"../../testdata/clients/variants/java24-*.xml":         usage.FamilyAxis,
	}
	for pattern, fam := range cases {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		require.NotEmpty(t, files, pattern)
		for _, f := range files {
			body, err := os.ReadFile(f)
			require.NoError(t, err)
			req := httptest.NewRequest(http.MethodPost, "/axis/EPaymentServiceV2", bytes.NewReader(body))
			req.Header.Set("Content-Type", "text/xml; charset=utf-8")
			call, err := soapenc.ReadRequest(req, soapenc.DefaultLimits())
			require.NoError(t, err, f)
			assert.Equal(t, usage.Client{Family: fam}, ClientOf(req, call.Wire), f)
		}
	}
}

func TestClientOfUserAgentWins(t *testing.T) {
	// A suds request whose User-Agent says something else entirely: the
	// library that names itself is believed.
	req := readWireFile(t, filepath.Join(wireDir, "suds-paymentStatus.http"))
	call, err := soapenc.ReadRequest(req, soapenc.DefaultLimits())
	require.NoError(t, err)
	req.Header.Set("User-Agent", "Zeep/4.2.1 (www.python-zeep.org)")
	assert.Equal(t, usage.Client{Family: usage.FamilyZeep, Version: "4.2.1"}, ClientOf(req, call.Wire))
	// A Java client that is not Axis: Java, with the transport's version.
	req.Header.Set("User-Agent", "Java/17.0.9")
	assert.Equal(t, usage.FamilySuds, ClientOf(req, call.Wire).Family, "the dialect is more precise than a transport's name")
}

func TestCharsetFeature(t *testing.T) {
	body := []byte(`<?xml version="1.0" encoding="windows-1250"?><SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz"><SOAP-ENV:Body><ns1:touch/></SOAP-ENV:Body></SOAP-ENV:Envelope>`)
	call, err := soapenc.Decode(body, "text/xml", soapenc.DefaultLimits())
	require.NoError(t, err)
	f, ok := charsetFeature(call.Wire.Charset)
	assert.True(t, ok)
	assert.Equal(t, usage.FeatureWindows1250, f)
	call, err = soapenc.Decode(body, "text/xml; charset=ISO-8859-2", soapenc.DefaultLimits())
	require.NoError(t, err)
	f, _ = charsetFeature(call.Wire.Charset)
	assert.Equal(t, usage.FeatureISO88592, f, "the Content-Type's charset wins")
	_, ok = charsetFeature("")
	assert.False(t, ok, "UTF-8 is no legacy feature")
}

// refuseAll is a Guard that admits nobody.
type refuseAll struct{}

func (refuseAll) Admit(*http.Request, int64) error { return errors.New("not from an allowed network") }

func (refuseAll) Spend(context.Context, int64) error { return nil }

// TestHandlerRecordsDeniedCallsOnly: with a usage record, a call the Guard
// refuses (it never runs in the core) is recorded as denied, and nothing
// else of what it sent: not even the client library it names.
func TestHandlerRecordsDeniedCallsOnly(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "usage.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	type usageStore interface {
		usage.Store
		Usage(ctx context.Context, goids ...int64) ([]store.UsageCount, error)
	}
	us := st.(usageStore)
	rec, err := usage.New(usage.Config{Store: us})
	require.NoError(t, err)
	cfg := unitConfig(t)
	cfg.Usage = rec
	svc, err := operations.New(cfg)
	require.NoError(t, err)
	api, err := New(Config{Service: svc, Guard: refuseAll{}, Usage: rec})
	require.NoError(t, err)
	e := echo.New()
	e.POST("/axis/EPaymentServiceV2", api.Handler())

	req := readWireFile(t, filepath.Join(wireDir, "php-soapclient-paymentStatus.http"))
	req.RequestURI = ""
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	require.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Contains(t, w.Body.String(), "not from an allowed network")

	require.NoError(t, rec.Flush(context.Background()))
	rows, err := us.Usage(context.Background(), testGoID)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, store.UsageCount{GoID: testGoID, Kind: store.UsageCall, Name: "paymentStatus", Detail: "denied", Calls: 1,
		First: rows[0].First, Last: rows[0].Last}, rows[0])
}
