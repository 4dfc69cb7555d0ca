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

const sudsInstall = "apt-get install python3-suds python3-cryptography"

var sudsDir = filepath.Join("..", "..", "testdata", "clients", "suds")

// sudsRefundOverload is the one refundPayment suds keeps of the WSDL's two
// (it maps operations by name, the last declared wins): the refundRequest
// form. The sessionInfo form cannot be called from suds.
const sudsRefundOverload = "refundRequest:ERefundRequest"

// requireSuds returns a Python 3 that can import suds and the cryptography
// package (Triple DES for the legacy signatures), skipping (failing under
// CI) when there is none. Debian's python3-suds is visible to /usr/bin/python3
// only, so that is tried after the python3 on PATH (which may be a pyenv or
// virtualenv interpreter without Debian's packages).
func requireSuds(t *testing.T) string {
	t.Helper()
	var candidates []string
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	if fileExists("/usr/bin/python3") {
		candidates = append(candidates, "/usr/bin/python3")
	}
	if len(candidates) == 0 {
		testenv.Missing(t, "python3", sudsInstall)
	}
	var withSuds []string
	for _, py := range candidates {
		if exec.Command(py, "-c", "import suds").Run() != nil {
			continue
		}
		withSuds = append(withSuds, py)
		if exec.Command(py, "-c", "from cryptography.hazmat.primitives.ciphers import Cipher").Run() == nil {
			return py
		}
	}
	if len(withSuds) == 0 {
		testenv.Missing(t, "Python suds (import suds with "+strings.Join(candidates, ", ")+")", sudsInstall)
	}
	testenv.Missing(t, "Python cryptography (with "+strings.Join(withSuds, ", ")+")", sudsInstall)
	return ""
}

// runSuds runs one of the suds client scripts against b. -B: no
// __pycache__ written into testdata.
func runSuds(t *testing.T, py string, b *bridgeProc, script string, args ...string) (facts, error) {
	t.Helper()
	argv := append([]string{"-B", filepath.Join(sudsDir, script)}, args...)
	stdout, err := runTool(t, 60*time.Second, b.clientEnv(), py, argv...)
	if strings.TrimSpace(stdout) == "" {
		return nil, err
	}
	return parseFacts(t, stdout), err
}

func TestSudsTouch(t *testing.T) {
	py := requireSuds(t)
	b := startBridge(t)
	f, err := runSuds(t, py, b, "scenarios.py", "touch")
	require.NoError(t, err)
	require.NotNil(t, f)
	f.eq(t, "touch", "OK")
	// Twelve operation names; refundPayment's two forms collapse into one.
	f.eq(t, "methods", "12")
	f.eq(t, "refundPayment.parts", sudsRefundOverload)
}

// TestSudsSignatureSelfcheck proves the suds client's own 3DES/SHA-1 code
// against the legacy library's vectors, so scenario failures point at the
// bridge.
func TestSudsSignatureSelfcheck(t *testing.T) {
	py := requireSuds(t)
	out, err := runTool(t, 30*time.Second, nil, py, "-B", filepath.Join(sudsDir, "selfcheck.py"), sharedVectors(t))
	require.NoError(t, err)
	f := parseFacts(t, out)
	f.eq(t, "failed", "0")
	f.positive(t, "vectors")
}

func TestSudsScenarios(t *testing.T) {
	py := requireSuds(t)
	b := startBridge(t)
	runScenarios(t, b, sudsScenarios(), func(t *testing.T, name string, args ...string) (facts, error) {
		return runSuds(t, py, b, "scenarios.py", append([]string{name}, args...)...)
	})
}

// sudsScenarios are the shared scenarios, with the refunds checked the suds
// way: both go through the refundRequest form of refundPayment (whole refund:
// the full amount; partial: after partiallyRefundPayment, a second part).
func sudsScenarios() []scenario {
	out := make([]scenario, 0, len(scenarios))
	for _, sc := range scenarios {
		if sc.name == "refund_whole" || sc.name == "refund_partial" {
			check, partial := sc.check, sc.name == "refund_partial"
			sc.check = func(t *testing.T, f facts) {
				check(t, f)
				f.eq(t, "refundPayment.parts", sudsRefundOverload)
				if partial {
					f.signedResult(t, "op2", "FINISHED")
					f.eq(t, "op2.id", f["create.id"])
				}
			}
		}
		out = append(out, sc)
	}
	return out
}
