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

const phpInstall = "apt-get install php-cli php-soap"

var phpDir = filepath.Join("..", "..", "testdata", "clients", "php")

// requirePHP returns the php binary, skipping (failing under CI) when php or
// its soap extension is missing.
func requirePHP(t *testing.T) string {
	t.Helper()
	php := testenv.LookPath(t, "php", phpInstall)
	out, err := exec.Command(php, "-m").Output()
	if err != nil || !strings.Contains(strings.ToLower(string(out)), "\nsoap\n") {
		testenv.Missing(t, "the PHP soap extension", phpInstall)
	}
	return php
}

// runPHP runs one of the PHP client scripts against b.
func runPHP(t *testing.T, php string, b *bridgeProc, script string, args ...string) (facts, error) {
	t.Helper()
	stdout, err := runTool(t, 60*time.Second, b.clientEnv(), php, append([]string{filepath.Join(phpDir, script)}, args...)...)
	if strings.TrimSpace(stdout) == "" {
		return nil, err
	}
	return parseFacts(t, stdout), err
}

func TestPHPTouch(t *testing.T) {
	php := requirePHP(t)
	b := startBridge(t)
	f, err := runPHP(t, php, b, "touch.php")
	require.NoError(t, err)
	require.NotNil(t, f)
	f.nonEmpty(t, "touch")
	f.positive(t, "functions") // SoapClient found the operations in the served WSDL
}

// TestPHPSignatureSelfcheck proves the PHP client's own signing code against
// the legacy library's vectors, so scenario failures point at the bridge.
func TestPHPSignatureSelfcheck(t *testing.T) {
	php := requirePHP(t)
	vectors := sharedVectors(t)
	out, err := runTool(t, 30*time.Second, nil, php, filepath.Join(phpDir, "selfcheck.php"), vectors)
	require.NoError(t, err)
	f := parseFacts(t, out)
	f.eq(t, "failed", "0")
	f.positive(t, "vectors")
}

func TestPHPScenarios(t *testing.T) {
	php := requirePHP(t)
	b := startBridge(t)
	runScenarios(t, b, scenarios, func(t *testing.T, name string, args ...string) (facts, error) {
		return runPHP(t, php, b, "scenarios.php", append([]string{name}, args...)...)
	})
}

// TestPHPOriginalWSDL: an e-shop whose SoapClient still reads a saved copy of
// the original service's WSDL, with only the location changed to the bridge.
func TestPHPOriginalWSDL(t *testing.T) {
	php := requirePHP(t)
	wsdlFile, err := filepath.Abs(sharedFile(t, "EPaymentServiceV2.original.wsdl"))
	require.NoError(t, err)
	b := startBridge(t)
	env := append(b.clientEnv(), "BRIDGE_WSDL_URL="+wsdlFile, "BRIDGE_LOCATION="+b.SOAPURL)
	runScenarios(t, b, originalScenarios(), func(t *testing.T, name string, args ...string) (facts, error) {
		stdout, err := runTool(t, 60*time.Second, env, php, append([]string{filepath.Join(phpDir, "scenarios.php"), name}, args...)...)
		if strings.TrimSpace(stdout) == "" {
			return nil, err
		}
		return parseFacts(t, stdout), err
	})
}
