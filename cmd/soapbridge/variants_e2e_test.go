package main

import (
	"bufio"
	"crypto/des"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/charmap"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/web"
)

// The requests of the other legacy client libraries
// (testdata/clients/variants, see its README) sent byte for byte, with the
// clients' own headers, to the running binary.

const variantsDir = "../../testdata/clients/variants"

// Headers the clients send (README of the variants directory).
var (
	axisHeaders = map[string]string{"Content-Type": "text/xml; charset=utf-8", "User-Agent": "Axis/1.4",
		"Accept": "application/soap+xml, application/dime, multipart/related, text/*", "Cache-Control": "no-cache",
		"Pragma": "no-cache", "SOAPAction": `""`}
	dotnetHeaders = map[string]string{"Content-Type": "text/xml; charset=utf-8", "SOAPAction": `""`,
		"User-Agent": "Mozilla/4.0 (compatible; MSIE 6.0; MS Web Services Client Protocol 2.0.50727.8825)", "Expect": "100-continue"}
)

func variantBytes(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(variantsDir, name))
	require.NoError(t, err)
	return string(raw)
}

// signAs signs fields as the variant's client does: hashed in charset
// (utf-8 or cp1250), the Java library padding the 40 hex characters with a
// whole zero block (96 hex), the others with none (80 hex). Written here
// apart from operations.Sign, as make.py is.
func signAs(t *testing.T, fields []string, charset string, java bool) string {
	t.Helper()
	joined := strings.Join(append(append([]string(nil), fields...), demoSecureKey), "|")
	if charset == "cp1250" {
		var err error
		joined, err = charmap.Windows1250.NewEncoder().String(joined)
		require.NoError(t, err)
	}
	sum := sha1.Sum([]byte(joined))
	plain := []byte(hex.EncodeToString(sum[:]))
	if java {
		plain = append(plain, make([]byte, 8)...)
	}
	block, err := des.NewTripleDESCipher([]byte(demoSecureKey[:24]))
	require.NoError(t, err)
	out := make([]byte, len(plain))
	for i := 0; i < len(plain); i += 8 {
		block.Encrypt(out[i:i+8], plain[i:i+8])
	}
	return hex.EncodeToString(out)
}

var variantSigElement = regexp.MustCompile(`(<encryptedSignature[^>]*>)[0-9a-f]+(</encryptedSignature>)`)

// forPayment puts payment id in place of the file's 3000000001 and the
// signature sig in place of the file's.
func forPayment(body, id, sig string) string {
	body = strings.ReplaceAll(body, "3000000001", id)
	return variantSigElement.ReplaceAllString(body, "${1}"+sig+"${2}")
}

// postVariant sends body to the SOAP endpoint with the client's headers and
// returns the reply's return element.
func postVariant(t *testing.T, b *bridgeProc, body string, headers map[string]string) *etree.Element {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.SOAPURL, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	doc := etree.NewDocument()
	require.NoError(t, doc.ReadFromBytes(raw))
	ret := doc.FindElement("//Body/*/*")
	require.NotNil(t, ret, string(raw))
	return ret
}

func childText(e *etree.Element, name string) string {
	if c := e.SelectElement(name); c != nil {
		return c.Text()
	}
	return ""
}

// sandboxPay pays payment id by card through the sandbox's test helper.
func sandboxPay(t *testing.T, b *bridgeProc, id string) {
	t.Helper()
	resp, err := http.Post(b.SandboxURL+"/sandbox/payments/"+id+"/pay", "application/json",
		strings.NewReader(`{"outcome":"success","instrument":"PAYMENT_CARD"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// sandboxState is the gateway's state of payment id.
func sandboxState(t *testing.T, b *bridgeProc, id string) string {
	t.Helper()
	resp, err := http.Get(b.SandboxURL + "/sandbox/payments/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`"state":"([A-Z_]+)"`).FindStringSubmatch(string(raw))
	require.NotNil(t, m, string(raw))
	return m[1]
}

// createVariant creates a payment with one of the createPayment files and
// returns its id; the reply's signature is checked as the PHP library does.
func createVariant(t *testing.T, b *bridgeProc, file string, headers map[string]string) (id string, ret *etree.Element) {
	t.Helper()
	ret = postVariant(t, b, variantBytes(t, file), headers)
	require.Equal(t, "CALL_COMPLETED", childText(ret, "result"), childText(ret, "resultDescription"))
	f := func(n string) string { return childText(ret, n) }
	assert.True(t, operations.Verify(demoSecureKey, f("encryptedSignature"), operations.PaymentStatusReplyFields(f)...),
		"createPayment reply signature")
	return f("paymentSessionId"), ret
}

func TestVariantsCreateAndRefund(t *testing.T) {
	b := startBridge(t)

	// Java 2.4 on a Czech Windows server: signed over windows-1250 bytes.
	javaID, ret := createVariant(t, b, "java24-createPayment-cp1250.xml", axisHeaders)
	assert.Equal(t, "Objednávka č. 42 – žluťoučký kůň", childText(ret, "productName"))
	// .NET: untrimmed signature, ", " channels, lang cs, countryCode SVK.
	dotnetID, ret := createVariant(t, b, "dotnet-createPayment-untrimmed.xml", dotnetHeaders)
	assert.Equal(t, " Objednávka 42 ", childText(ret, "productName"), "the reply carries the product name as the shop sent it")
	// The same signed command again is a retry: the ledger answers the
	// same payment, the gateway sees no second create.
	again, _ := createVariant(t, b, "dotnet-createPayment-untrimmed.xml", dotnetHeaders)
	assert.Equal(t, dotnetID, again)
	sandboxPay(t, b, javaID)
	sandboxPay(t, b, dotnetID)

	// Refunds of 5.00 of a paid payment, in each client's form.
	refunds := []struct {
		file    string
		headers map[string]string
		java    bool
	}{
		{"java24-partiallyRefundPayment-request.xml", axisHeaders, true},
		{"java24-refundPayment-request.xml", axisHeaders, true},
		{"dotnet-refundPayment-refundRequest.xml", dotnetHeaders, false},
	}
	for i, rf := range refunds {
		t.Run(rf.file, func(t *testing.T) {
			// Partial refunds of 5.00 (different operations or signed
			// descriptions, so none is a repeat of another).
			id := javaID
			if i > 0 {
				id = dotnetID
			}
			desc := "Partial refund"
			if !rf.java {
				desc = "Vrácení části"
			}
			sig := signAs(t, operations.RefundRequestFields(demoGoID, id, "500", "CZK", desc), "utf-8", rf.java)
			ret := postVariant(t, b, forPayment(variantBytes(t, rf.file), id, sig), rf.headers)
			assert.Equal(t, "FINISHED", childText(ret, "result"), childText(ret, "resultDescription"))
			assert.Equal(t, id, childText(ret, "paymentSessionId"))
			assert.True(t, operations.Verify(demoSecureKey, childText(ret, "encryptedSignature"), operations.PaymentResultFields(id, "FINISHED")...))
			assert.Equal(t, "PARTIALLY_REFUNDED", sandboxState(t, b, id))
		})
	}
}

// voidRecurrentPayment from the .NET proxy: with the merchant set to the
// paymentSession reply scheme the .NET library's check passes.
func TestVariantsVoidRecurrentDotNet(t *testing.T) {
	for _, scheme := range []string{"paymentSession", ""} {
		t.Run("scheme="+scheme, func(t *testing.T) {
			b := startBridge(t, withEnv("SOAPBRIDGE_VOID_RECURRENT_REPLY="+scheme))
			cmd := operations.PaymentCommandFields{TargetGoID: demoGoID, ProductName: "Předplatné", TotalPrice: "9900", Currency: "CZK",
				OrderNumber: "net-rec-1", FailedURL: "https://eshop.example/failed", SuccessURL: "https://eshop.example/success",
				PreAuthorization: "0", RecurrentPayment: "1", RecurrenceCycle: "ON_DEMAND"}
			sig, err := operations.Sign(demoSecureKey, cmd.Fields()...)
			require.NoError(t, err)
			doc, err := flowSOAP(b.URL, "createPayment", `<paymentCommand xsi:type="ns2:EPaymentCommand">`+
				`<currency>CZK</currency><encryptedSignature>`+sig+`</encryptedSignature><failedURL>`+cmd.FailedURL+`</failedURL>`+
				`<orderNumber>net-rec-1</orderNumber><preAuthorization>false</preAuthorization><productName>Předplatné</productName>`+
				`<recurrenceCycle>ON_DEMAND</recurrenceCycle><recurrentPayment>true</recurrentPayment><successURL>`+cmd.SuccessURL+`</successURL>`+
				`<targetGoId>`+demoGoID+`</targetGoId><totalPrice>9900</totalPrice></paymentCommand>`)
			require.NoError(t, err)
			require.Equal(t, "CALL_COMPLETED", flowText(doc, "result"), flowText(doc, "resultDescription"))
			id := flowText(doc, "paymentSessionId")
			sandboxPay(t, b, id)

			body := forPayment(variantBytes(t, "dotnet-voidRecurrentPayment.xml"), id,
				signAs(t, operations.PaymentSessionFields(demoGoID, id), "utf-8", false))
			ret := postVariant(t, b, body, dotnetHeaders)
			require.Equal(t, "FINISHED", childText(ret, "result"), childText(ret, "resultDescription"))
			replySig := childText(ret, "encryptedSignature")
			asSession := operations.Verify(demoSecureKey, replySig, operations.PaymentSessionFields(demoGoID, id)...)
			asResult := operations.Verify(demoSecureKey, replySig, operations.PaymentResultFields(id, "FINISHED")...)
			assert.Equal(t, scheme == "paymentSession", asSession, "the .NET library's check")
			assert.Equal(t, scheme == "", asResult, "the PHP library's check")
			resp, err := http.Get(b.SandboxURL + "/sandbox/payments/" + id)
			require.NoError(t, err)
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Contains(t, string(raw), `"recurrence_state":"STOPPED"`)
		})
	}
}

// rawGET sends the request head of a .http file byte for byte (Host set to
// the bridge) and returns status, Content-Type and body.
func rawGET(t *testing.T, b *bridgeProc, file string) (int, string, string) {
	t.Helper()
	u, err := url.Parse(b.URL)
	require.NoError(t, err)
	head := strings.Replace(variantBytes(t, file), "Host: 127.0.0.1\r\n", "Host: "+u.Host+"\r\n", 1)
	head = strings.Replace(head, "Host: 127.0.0.1\n", "Host: "+u.Host+"\n", 1)
	head = strings.Replace(head, "Connection: keep-alive", "Connection: close", 1)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, head)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(raw)
}

// Statement downloads of the Java 2.4 (TYPE_CSV, 96 hex) and .NET (TYPE_XLS)
// libraries: no currency, four-field signature.
func TestVariantsStatementWithoutCurrency(t *testing.T) {
	b := startBridge(t)
	status, ctype, body := rawGET(t, b, "java24-statement-no-currency.http")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "text/csv", ctype)
	assert.NotContains(t, body, "currency is missing")
	// The XLS request passes the signature check and reaches the gateway as
	// XLS_A in the merchant's currency; the embedded sandbox offers every
	// format, so the workbook (a zip) comes back as the legacy XLS download.
	status, ctype, body = rawGET(t, b, "dotnet-statement-no-currency.http")
	require.Equal(t, http.StatusOK, status, "%.300q", body)
	assert.Equal(t, "application/vnd.ms-excel", ctype)
	assert.True(t, strings.HasPrefix(body, "PK\x03\x04"), "an Office Open XML workbook: %.20q", body)
	assert.Contains(t, body, "xl/workbook.xml")
}

// The base-integration form of a windows-1250 page, as bytes: the payment
// is created with the product name in UTF-8 and the shop's status check
// (paymentStatus, signature over productName) passes.
func TestVariantsPayBaseWindows1250Bytes(t *testing.T) {
	b := startBridge(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Post(b.URL+web.PathPayBase, "application/x-www-form-urlencoded",
		strings.NewReader(variantBytes(t, "pay-base-v2-cp1250.form")))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Location"), b.SandboxURL+"/gw/"), resp.Header.Get("Location"))
	id := createdID(t, b, "cp1250-1")
	st := flowStatus(t, b.URL, id)
	assert.Equal(t, "Objednávka č. 1250 – žluťoučký kůň", flowText(st, "productName"))
	assert.Equal(t, "cp1250-1", flowText(st, "orderNumber"))

	bad := strings.Replace(variantBytes(t, "pay-base-v2-cp1250.form"), "Objedn%E1vka", "Objedn%81vka", 1)
	resp, err = client.Post(b.URL+web.PathPayBase, "application/x-www-form-urlencoded", strings.NewReader(bad))
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(raw), "neither UTF-8 nor windows-1250")
}

// createdID is the payment id the bridge logged for order (the gateway
// page's URL does not carry it).
func createdID(t *testing.T, b *bridgeProc, order string) string {
	t.Helper()
	re := regexp.MustCompile(`"msg":"payment created".*"payment":(\d+),"order":"` + regexp.QuoteMeta(order) + `"`)
	var m []string
	// The bridge flushes its log every second.
	require.Eventually(t, func() bool { m = re.FindStringSubmatch(b.log.String()); return m != nil },
		10*time.Second, 50*time.Millisecond, "no payment created for order %s", order)
	return m[1]
}

// cp1250Shop serves a windows-1250 shop page holding the base-integration
// form of the variants file (values as the page's bytes), and the pages
// the customer returns to.
func cp1250Shop(t *testing.T, bridgeURL string) *httptest.Server {
	t.Helper()
	form, err := url.ParseQuery(variantBytes(t, "pay-base-v2-cp1250.form"))
	require.NoError(t, err)
	var page strings.Builder
	page.WriteString(`<!DOCTYPE html><html><head><meta charset="windows-1250"><title>Obchod</title></head><body>` +
		`<form method="post" action="` + bridgeURL + web.PathPayBase + `">`)
	for k, vs := range form {
		fmt.Fprintf(&page, `<input type="hidden" name="%s" value="%s">`, html.EscapeString(k), html.EscapeString(vs[0]))
	}
	page.WriteString(`<p>` + html.EscapeString(form.Get("paymentCommand.productName")) + `</p><button id="pay" type="submit">Zaplatit</button></form></body></html>`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=windows-1250")
		io.WriteString(w, page.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A real browser posts the form from a windows-1250 page: the gateway page
// shows the product name correctly and the shop's status check passes.
func TestVariantsPayBaseWindows1250InBrowser(t *testing.T) {
	node, chromium := flowBrowser(t)
	b := startBridge(t)
	shop := cp1250Shop(t, b.URL)
	res := flowDrive(t, node, chromium, shop.URL, b.SandboxURL+"/gw/", []flowStep{{Wait: "#pay", Shot: "eshop-form-windows-1250", Click: "#pay"}})
	const product = "Objednávka č. 1250 – žluťoučký kůň"
	assert.Contains(t, res.Text, product, "the gateway page")
	id := createdID(t, b, "cp1250-1")
	st := flowStatus(t, b.URL, id)
	assert.Equal(t, product, flowText(st, "productName"), "the shop's own check compares the product name")
}

var java24Stubs axisHarness // from the served WSDL as the Java 2.4 library's stubs saw it

// java24WSDL is the served WSDL with the refund part named "request" (not
// "refundRequest") and the refund operations' input qualified with
// http://gate.gopay.cz/ws, as in the Java 2.4 library's pre-generated stubs.
func java24WSDL(t *testing.T, b *bridgeProc) string {
	t.Helper()
	resp, err := http.Get(b.WSDLURL)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	doc := etree.NewDocument()
	require.NoError(t, doc.ReadFromBytes(raw))
	renamed := 0
	for _, msg := range doc.FindElements("//message") {
		for _, part := range msg.SelectElements("part") {
			if part.SelectAttrValue("name", "") == "refundRequest" {
				part.CreateAttr("name", "request")
				renamed++
			}
		}
	}
	require.Equal(t, 2, renamed, "partiallyRefundPayment's and refundPayment's refundRequest parts")
	for _, op := range doc.FindElements("//portType/operation") {
		if op.SelectAttrValue("parameterOrder", "") == "refundRequest" {
			op.CreateAttr("parameterOrder", "request")
		}
	}
	qualified := 0
	for _, op := range doc.FindElements("//binding/operation") {
		if name := op.SelectAttrValue("name", ""); name != "partiallyRefundPayment" && name != "refundPayment" {
			continue
		}
		if body := op.FindElement("input/body"); body != nil {
			body.CreateAttr("namespace", "http://gate.gopay.cz/ws")
			qualified++
		}
	}
	require.Equal(t, 3, qualified, "partiallyRefundPayment and both refundPayment inputs")
	path := filepath.Join(t.TempDir(), "EPaymentServiceV2.java24.wsdl")
	require.NoError(t, doc.WriteToFile(path))
	return path
}

// Real Axis 1.4 stubs generated from the Java 2.4 form of the WSDL: the
// refund scenarios (partiallyRefundPayment, both refundPayment overloads)
// send the part named "request" and still refund.
func TestAxisJava24RefundPart(t *testing.T) {
	requireJava(t)
	b := startBridge(t)
	wsdlPath := java24WSDL(t, b)
	java, cp := axisBuild(t, &java24Stubs, "java24", wsdlPath)
	var list []scenario
	for _, sc := range scenarios {
		if strings.HasPrefix(sc.name, "refund_") {
			list = append(list, sc)
		}
	}
	require.Len(t, list, 2)
	from := b.log.Len()
	runScenarios(t, b, list, func(t *testing.T, name string, args ...string) (facts, error) {
		return runAxis(t, java, cp, b, append([]string{name}, args...)...)
	})
	// The stubs did name the part "request" and qualify the operation with
	// the gate namespace.
	stub, err := os.ReadFile(filepath.Join(e2eTmp, "axis-java24", "src", "bridgeclient", "EPaymentServiceV2SoapBindingStub.java"))
	require.NoError(t, err)
	assert.Contains(t, string(stub), `new javax.xml.namespace.QName("", "request")`)
	assert.Contains(t, string(stub), `new javax.xml.namespace.QName("http://gate.gopay.cz/ws", "partiallyRefundPayment")`)
	require.Eventually(t, func() bool {
		log := b.log.String()[from:]
		return strings.Contains(log, `"op":"partiallyRefundPayment","ns":"http://gate.gopay.cz/ws"`)
	}, 10*time.Second, 50*time.Millisecond, "the bridge saw partiallyRefundPayment in the gate namespace")
}
