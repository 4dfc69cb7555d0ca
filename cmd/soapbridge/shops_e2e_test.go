package main

// Shops the original service served with clients other than PHP, Axis and
// suds: Perl SOAP::Lite, which types every value itself (non-ASCII text as
// xsd:base64Binary), and Node.js soap; and shops whose paymentChannels hold
// only codes of earlier years (issue 21). Each drives the running binary
// and its embedded sandbox, and pays as the customer through the sandbox's
// helper.

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/restbackend"
)

const (
	perlInstall = "apt-get install libsoap-lite-perl libcrypt-des-ede3-perl"
	nodeInstall = "bash .ci/install-deps (npm ci in testdata/clients/node)"
)

var (
	perlShop = filepath.Join("..", "..", "testdata", "clients", "perl", "shop.pl")
	nodeDir  = filepath.Join("..", "..", "testdata", "clients", "node")
)

// requirePerlSOAPLite returns perl when SOAP::Lite and the modules the shop
// script signs with are there, else skips (fails under CI) naming them.
func requirePerlSOAPLite(t *testing.T) string {
	t.Helper()
	perl := testenv.LookPath(t, "perl", perlInstall)
	if exec.Command(perl, "-MSOAP::Lite", "-MCrypt::DES_EDE3", "-MJSON::PP", "-MLWP::UserAgent", "-e", "1").Run() != nil {
		testenv.Missing(t, "Perl SOAP::Lite with Crypt::DES_EDE3", perlInstall)
	}
	return perl
}

// requireNodeSoap returns node when the pinned npm package soap is
// installed in testdata/clients/node.
func requireNodeSoap(t *testing.T) string {
	t.Helper()
	node := testenv.LookPath(t, "node", "apt-get install nodejs npm")
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "soap", "package.json")); err != nil {
		testenv.Missing(t, "the npm package soap in testdata/clients/node", nodeInstall)
	}
	return node
}

func runClient(t *testing.T, b *bridgeProc, name string, args ...string) facts {
	t.Helper()
	out, err := runTool(t, 90*time.Second, b.clientEnv(), name, args...)
	require.NoError(t, err, "%s failed; stdout:\n%s", filepath.Base(name), out)
	return parseFacts(t, out)
}

// gatewayPayment is the payment as the gateway has it (the sandbox's
// token-free status helper): what the bridge sent, decoded.
func gatewayPayment(t *testing.T, b *bridgeProc, id string) restbackend.Payment {
	t.Helper()
	resp, err := http.Get(b.SandboxURL + "/sandbox/payments/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var p restbackend.Payment
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	return p
}

// getText is the body of a GET of url that must answer 200.
func getText(t *testing.T, url string) string {
	t.Helper()
	code, body := adminGet(t, url)
	require.Equal(t, http.StatusOK, code, "%s: %s", url, body)
	return body
}

// TestPerlSOAPLiteCzechShop: a Perl shop pays with a Czech customer and
// product. SOAP::Lite sends them as xsd:base64Binary; the signature (made
// by the shop over its own text) verifies, the gateway receives the text,
// and the replies carry it.
func TestPerlSOAPLiteCzechShop(t *testing.T) {
	perl := requirePerlSOAPLite(t)
	b := startBridge(t)
	f := runClient(t, b, perl, perlShop, "czech")
	const product = "Dárkový poukaz – čaj Šťastná žížala"
	// The client really typed its values: product, first and last name,
	// city and street as base64Binary, the order number as int.
	assert.GreaterOrEqual(t, f.positive(t, "wire.base64Binary"), int64(5))
	f.positive(t, "wire.int")
	f.signedStatus(t, "create", "CREATED")
	f.eq(t, "create.productName", product)
	f.eq(t, "create.orderNumber", f["sent.orderNumber"])
	f.eq(t, "pay.http", "200")
	f.signedStatus(t, "status", "PAID")
	f.eq(t, "status.productName", product)

	p := gatewayPayment(t, b, f["create.id"])
	require.NotNil(t, p.Payer)
	require.NotNil(t, p.Payer.Contact)
	c := p.Payer.Contact
	assert.Equal(t, "Jiří", c.FirstName)
	assert.Equal(t, "Novák", c.LastName)
	assert.Equal(t, "Plzeň", c.City)
	assert.Equal(t, "Náměstí Republiky 1", c.Street)
	assert.Equal(t, f["sent.orderNumber"], p.OrderNumber)
	// The gateway's payment page shows the order description: the text.
	page := getText(t, p.GwURL)
	assert.Contains(t, page, product)
	assert.NotContains(t, page, "RMOhcmtvdsO9", "never the base64 letters")
}

// TestPerlSOAPLiteHistoricChannels: a shop whose whole list is of earlier
// years (cz_ge,cz_vb,cz_sms) pays by the Moneta button; the status reply
// names the channel cz_ge, the code the shop used.
func TestPerlSOAPLiteHistoricChannels(t *testing.T) {
	perl := requirePerlSOAPLite(t)
	b := startBridge(t)
	f := runClient(t, b, perl, perlShop, "historic")
	f.signedStatus(t, "create", "CREATED")
	f.eq(t, "pay.http", "200")
	f.signedStatus(t, "status", "PAID")
	f.eq(t, "status.paymentChannel", "cz_ge")
	p := gatewayPayment(t, b, f["create.id"])
	assert.Equal(t, []string{"BANK_ACCOUNT", "PRSMS"}, p.Payer.AllowedPaymentInstruments)
	assert.Equal(t, "AGBACZPP", p.Payer.DefaultSwift)
	assert.Equal(t, "AGBACZPP", p.Payer.BankAccount.BIC)
}

// TestNodeSoapHistoricChannels: Node.js soap, from the WSDL; the list
// cz_vb,cz_fio,cz_sms, paid by the Fio button: reported as cz_fio.
func TestNodeSoapHistoricChannels(t *testing.T) {
	node := requireNodeSoap(t)
	b := startBridge(t)
	f := runClient(t, b, node, filepath.Join(nodeDir, "shop.js"), "historic")
	f.signedStatus(t, "create", "CREATED")
	f.eq(t, "create.productName", "Předplatné – Šumava")
	f.eq(t, "pay.http", "200")
	f.signedStatus(t, "status", "PAID")
	f.eq(t, "status.paymentChannel", "cz_fio")
	p := gatewayPayment(t, b, f["create.id"])
	assert.Equal(t, "Jiří", p.Payer.Contact.FirstName)
	assert.Equal(t, "FIOBCZPP", p.Payer.DefaultSwift)
}

// TestPHPHistoricChannels: PHP SoapClient shops with lists of earlier
// years: cz_ge,cz_vb,cz_sms is paid and reported as cz_ge; a list of
// nothing but the Moneybookers wallet (offered no more) still pays, with
// the merchant's enabled methods, logged and counted for the operator.
func TestPHPHistoricChannels(t *testing.T) {
	php := requirePHP(t)
	b := startBridge(t)
	script := filepath.Join(phpDir, "old_shop.php")

	f := runClient(t, b, php, script, "historic")
	f.signedStatus(t, "create", "CREATED")
	f.signedStatus(t, "status", "PAID")
	f.eq(t, "status.paymentChannel", "cz_ge")

	f = runClient(t, b, php, script, "gone")
	f.signedStatus(t, "create", "CREATED")
	f.eq(t, "pay.http", "200")
	f.signedStatus(t, "status", "PAID")
	f.eq(t, "status.paymentChannel", "eu_gp_u")
	p := gatewayPayment(t, b, f["create.id"])
	assert.Empty(t, p.Payer.AllowedPaymentInstruments, "no restriction: the merchant's enabled methods")

	metrics := getText(t, b.AdminURL+"/metrics")
	assert.Contains(t, metrics, `soapbridge_unmapped_payment_channels_total{code="eu_mb_w",outcome="use_enabled"} 1`)
	assert.Contains(t, metrics, `soapbridge_merchant_unmapped_payment_channels_total{goid="`+demoGoID+`"} 1`)
	assert.NotContains(t, metrics, `code="cz_ge"`, "codes of earlier years with an equivalent are not unmapped")
	var line string
	for _, l := range strings.Split(b.log.String(), "\n") {
		if strings.Contains(l, "no payment channel has a REST equivalent") {
			line = l
		}
	}
	require.NotEmpty(t, line, "the operator's log line")
	assert.Contains(t, line, `"codes":["eu_mb_w"]`)
	assert.Contains(t, line, `"goid":`+demoGoID)
}
