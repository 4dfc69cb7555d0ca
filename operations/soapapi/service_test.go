package soapapi

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/wsdl"
)

func postSOAP(t *testing.T, h echo.HandlerFunc, body string) *httptest.ResponseRecorder {
	t.Helper()
	e := echo.New()
	e.POST("/axis/EPaymentServiceV2", h)
	req := httptest.NewRequest(http.MethodPost, "/axis/EPaymentServiceV2", strings.NewReader(body))
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func TestTouchOverHTTP(t *testing.T) {
	s := unitAPI(t, unitConfig(t))
	for _, f := range []string{"touch", "touch-axis"} {
		body, err := os.ReadFile("../../testdata/operations/" + f + "/request.xml")
		require.NoError(t, err)
		rec := postSOAP(t, s.Handler(), string(body))
		assert.Equal(t, http.StatusOK, rec.Code, f)
		assert.Contains(t, rec.Body.String(), `<ns1:touchResponse`)
		assert.Contains(t, rec.Body.String(), `<touchReturn xsi:type="soapenc:string">OK</touchReturn>`)
	}
}

func TestUnknownOperationIsClientFault(t *testing.T) {
	s := unitAPI(t, unitConfig(t))
	body := `<?xml version="1.0"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><ns1:fly xmlns:ns1="http://axis.web.gopay.cz"/></soapenv:Body></soapenv:Envelope>`
	rec := postSOAP(t, s.Handler(), body)
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, rec.Body.String(), "Client")
	assert.Contains(t, rec.Body.String(), `unknown operation 'fly'`)

	// A huge name is not echoed back whole.
	long := strings.Repeat("x", 50000)
	rec = postSOAP(t, s.Handler(), strings.ReplaceAll(body, "fly", long))
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, rec.Body.String(), "unknown operation")
	assert.Less(t, rec.Body.Len(), 2000)
}

// Every operation of the WSDL is bound to a row of the core's table (New
// fails otherwise), twelve names for thirteen rows (refundPayment has two
// forms).
func TestOperationNames(t *testing.T) {
	unitAPI(t, unitConfig(t))
	assert.Len(t, wsdl.OperationNames(), 12)
	assert.Len(t, wsdl.Operations, 13)
}
