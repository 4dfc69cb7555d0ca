package soapenc

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestPHPSoapClientReadsReplies feeds the encoded goldens to a real PHP
// SoapClient (ext/soap, typed by xsi:type only) and compares what the
// e-shop's code would get with reviewed JSON goldens.
func TestPHPSoapClientReadsReplies(t *testing.T) {
	php := testenv.LookPath(t, "php", "apt-get install php-cli php-soap")
	if out, err := exec.Command(php, "-r", `exit(class_exists("SoapClient") ? 0 : 1);`).CombinedOutput(); err != nil {
		testenv.Missing(t, "php ext/soap ("+strings.TrimSpace(string(out))+")", "apt-get install php-soap")
	}
	for name, op := range map[string]string{
		"touch":                  "touch",
		"empty":                  "voidSomething",
		"paymentStatus":          "paymentStatus",
		"capturePayment":         "capturePayment",
		"paymentMethodList":      "paymentMethodList",
		"paymentMethodListEmpty": "paymentMethodList",
		"nils":                   "paymentStatusWCust",
		"fault-client":           "touch",
		"fault-server":           "touch",
		"fault-versionmismatch":  "touch",
		"fault-mustunderstand":   "touch",
	} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(php, filepath.Join(testdataDir, "php", "readreply.php"),
				filepath.Join(testdataDir, "encoded", name+".xml"), op).CombinedOutput()
			require.NoError(t, err, string(out))
			golden(t, filepath.Join("php", name+".json"), append(out, '\n'))
		})
	}
}
