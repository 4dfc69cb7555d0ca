package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

const axisInstall = "apt-get install libaxis-java default-jdk-headless"

var axisDir = filepath.Join("..", "..", "testdata", "clients", "axis")

// Jars of Debian's libaxis-java and its dependencies; the last two only
// silence Axis's "attachment support is disabled" warning.
var (
	axisJars     = []string{"axis.jar", "jaxrpc.jar", "saaj.jar", "commons-discovery.jar", "commons-logging.jar", "wsdl4j.jar"}
	axisOptional = []string{"javax.activation.jar", "javax.mail.jar"}
	javaDir      = "/usr/share/java"
)

// axisHarness is the WSDL2Java output for one WSDL plus Main.java, compiled;
// made once per test run because it takes seconds.
type axisHarness struct {
	once    sync.Once
	classes string // classpath entry of the compiled classes
	took    time.Duration
	err     error
}

var (
	servedStubs   axisHarness // from the WSDL the bridge serves
	originalStubs axisHarness // from the original service's WSDL (shared/reference)
)

// requireJava returns the java binary and the Axis classpath, skipping
// (failing under CI) when java, javac or the Axis jars are missing.
func requireJava(t *testing.T) (java, cp string) {
	t.Helper()
	java = testenv.LookPath(t, "java", axisInstall)
	testenv.LookPath(t, "javac", axisInstall)
	var parts []string
	for _, j := range axisJars {
		p := filepath.Join(javaDir, j)
		if _, err := os.Stat(p); err != nil {
			testenv.Missing(t, p, axisInstall)
		}
		parts = append(parts, p)
	}
	for _, j := range axisOptional {
		if p := filepath.Join(javaDir, j); fileExists(p) {
			parts = append(parts, p)
		}
	}
	return java, strings.Join(parts, string(os.PathListSeparator))
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// axisClasspath generates the stubs from b's served WSDL and compiles them
// with the scenario program, once per run; later bridges reuse the classes
// (the endpoint is passed at run time, not taken from the WSDL).
func axisClasspath(t *testing.T, b *bridgeProc) (java, cp string) {
	t.Helper()
	return axisBuild(t, &servedStubs, "served", b.WSDLURL)
}

func axisBuild(t *testing.T, h *axisHarness, name, wsdlURL string) (java, cp string) {
	t.Helper()
	java, jars := requireJava(t)
	h.once.Do(func() {
		start := time.Now()
		h.classes, h.err = buildAxisHarness(java, jars, wsdlURL, filepath.Join(e2eTmp, "axis-"+name))
		h.took = time.Since(start)
	})
	if h.err != nil {
		t.Fatal(h.err)
	}
	t.Logf("WSDL2Java + javac of the %s WSDL (once per run) took %s", name, h.took.Round(time.Millisecond))
	return java, h.classes + string(os.PathListSeparator) + jars
}

func buildAxisHarness(java, jars, wsdlURL, root string) (classes string, err error) {
	src, classes := filepath.Join(root, "src"), filepath.Join(root, "classes")
	if err := os.MkdirAll(classes, 0o755); err != nil {
		return "", err
	}
	gen := exec.Command(java, "-cp", jars, "org.apache.axis.wsdl.WSDL2Java", "-o", src, "-p", "bridgeclient", wsdlURL)
	if out, err := gen.CombinedOutput(); err != nil {
		return "", fmt.Errorf("WSDL2Java %s: %v\n%s", wsdlURL, err, out)
	}
	sources, err := filepath.Glob(filepath.Join(src, "bridgeclient", "*.java"))
	if err != nil || len(sources) == 0 {
		return "", fmt.Errorf("WSDL2Java generated no sources (%v)", err)
	}
	sources = append(sources, filepath.Join(axisDir, "Main.java"))
	// WCust.java needs paymentStatusWCust in the served WSDL; without it only
	// the status_wcust scenario fails (ClassNotFoundException), not all.
	if fileExists(filepath.Join(src, "bridgeclient", "EPaymentStatusWCust.java")) {
		sources = append(sources, filepath.Join(axisDir, "WCust.java"))
	}
	args := append([]string{"-nowarn", "-encoding", "UTF-8", "-d", classes, "-cp", jars}, sources...)
	if out, err := exec.Command("javac", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac: %v\n%s", err, out)
	}
	return classes, nil
}

// runAxis runs Main with the given scenario against b.
func runAxis(t *testing.T, java, cp string, b *bridgeProc, args ...string) (facts, error) {
	t.Helper()
	stdout, err := runTool(t, 60*time.Second, b.clientEnv(), java, append([]string{"-cp", cp, "Main"}, args...)...)
	if strings.TrimSpace(stdout) == "" {
		return nil, err
	}
	return parseFacts(t, stdout), err
}

func TestAxisTouch(t *testing.T) {
	requireJava(t)
	b := startBridge(t)
	java, cp := axisClasspath(t, b)
	f, err := runAxis(t, java, cp, b, "touch")
	require.NoError(t, err)
	require.NotNil(t, f)
	f.nonEmpty(t, "touch")
}

// TestAxisSignatureSelfcheck proves the Java client's own 3DES/SHA-1 code
// against the legacy library's vectors (Main needs no stubs for this, but
// is compiled with them).
func TestAxisSignatureSelfcheck(t *testing.T) {
	requireJava(t)
	var vectors []struct {
		SecureKey          string `json:"secureKey"`
		Concatenated       string `json:"concatenated"`
		EncryptedSignature string `json:"encryptedSignature"`
	}
	raw, err := os.ReadFile(sharedVectors(t))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &vectors))
	var tsv strings.Builder
	for _, v := range vectors {
		fields, ok := strings.CutSuffix(v.Concatenated, "|"+v.SecureKey)
		require.True(t, ok, "vector %q ends with its key", v.Concatenated)
		fmt.Fprintf(&tsv, "%s\t%s\t%s\n", v.SecureKey, fields, v.EncryptedSignature)
	}
	file := filepath.Join(t.TempDir(), "vectors.tsv")
	require.NoError(t, os.WriteFile(file, []byte(tsv.String()), 0o644))

	b := startBridge(t)
	java, cp := axisClasspath(t, b)
	out, err := runTool(t, 30*time.Second, nil, java, "-cp", cp, "Main", "selfcheck", file)
	require.NoError(t, err)
	f := parseFacts(t, out)
	f.eq(t, "failed", "0")
	f.eq(t, "vectors", fmt.Sprint(len(vectors)))
}

func TestAxisScenarios(t *testing.T) {
	requireJava(t)
	b := startBridge(t)
	java, cp := axisClasspath(t, b)
	runScenarios(t, b, scenarios, func(t *testing.T, name string, args ...string) (facts, error) {
		return runAxis(t, java, cp, b, append([]string{name}, args...)...)
	})
}

// TestAxisOriginalStubs: an e-shop whose stubs were generated years ago from
// the original service's WSDL, never regenerated, now pointed at the bridge.
// Everything but paymentStatusWCust (newer than that WSDL) must work.
func TestAxisOriginalStubs(t *testing.T) {
	requireJava(t)
	wsdlFile, err := filepath.Abs(sharedFile(t, "EPaymentServiceV2.original.wsdl"))
	require.NoError(t, err)
	b := startBridge(t)
	java, cp := axisBuild(t, &originalStubs, "original", wsdlFile)
	runScenarios(t, b, originalScenarios(), func(t *testing.T, name string, args ...string) (facts, error) {
		return runAxis(t, java, cp, b, append([]string{name}, args...)...)
	})
}

// sharedVectors is the absolute path of the legacy library's signature
// vectors (the project's copy, kept equal to the reference set by
// operations.TestVectorsMatchShared).
func sharedVectors(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "signatures", "legacy-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sharedFile is the path of a reference file in shared/ beside the project
// root (read in place, not copied into the project).
func sharedFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "reference", name)
	if !fileExists(p) {
		testenv.Missing(t, p, "a checkout with shared/ beside the project root")
	}
	return p
}
