package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

const zeepInstall = "apt-get install python3-zeep python3-cryptography"

// requireZeep returns a Python 3 that imports zeep and cryptography,
// skipping (failing under CI) when there is none. Debian's python3-zeep is
// visible to /usr/bin/python3 only, so that is tried after the one on PATH.
func requireZeep(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		p, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		tried = append(tried, p)
		if exec.Command(p, "-c", "import zeep\nfrom cryptography.hazmat.primitives.ciphers import Cipher").Run() == nil {
			return p
		}
	}
	testenv.Missing(t, "Python zeep and cryptography (tried "+strings.Join(tried, ", ")+")", zeepInstall)
	return ""
}

// TestZeepOffline: zeep loads the WSDL with every non-loopback fetch
// refused, which works only because the bridge serves the SOAP-encoding
// schema the WSDL imports; then touch, createPayment and paymentStatus, with
// the reply signatures verified by the client.
func TestZeepOffline(t *testing.T) {
	py := requireZeep(t)
	b := startBridge(t)
	out, err := runTool(t, 90*time.Second, b.clientEnv(), py, "-B",
		filepath.Join("..", "..", "testdata", "clients", "zeep", "client.py"))
	require.NoError(t, err, "zeep client failed; stdout:\n%s", out)
	f := parseFacts(t, out)
	f.eq(t, "touch", "OK")
	// The WSDL and the schema it imports, both from the bridge.
	f.eq(t, "fetched", "wsdl;xsd=soapenc;")
	f.created(t)
	f.eq(t, "create.productName", "Objednávka č. 42 – žluťoučký kůň")
	f.signedStatus(t, "status", "PAID")
	f.eq(t, "status.id", f["create.id"])
}
