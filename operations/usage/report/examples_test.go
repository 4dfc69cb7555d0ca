package report

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/doccheck"
	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/operations/usage"
)

func TestEveryCallHasAnExampleInEveryLanguage(t *testing.T) {
	for _, r := range Rows() {
		if r.Call == nil {
			continue
		}
		for _, l := range AllLanguages {
			e, ok := example(l, r)
			if assert.True(t, ok, "%s in %s", r.Name, l) {
				assert.NotEmpty(t, e.Code)
			}
		}
	}
}

// helperOf is the first code block of lang in docs/migration.md: the REST
// helpers the examples call.
func helperOf(t *testing.T, lang string) string {
	t.Helper()
	raw, err := os.ReadFile("../../../docs/migration.md")
	require.NoError(t, err)
	blocks, err := doccheck.Parse("docs/migration.md", string(raw))
	require.NoError(t, err)
	for _, b := range blocks {
		if b.Lang == lang {
			return b.Body
		}
	}
	t.Fatalf("docs/migration.md has no %s block", lang)
	return ""
}

// examplesIn is every example of the table in lang, each in a block of
// its own (they reuse variable names).
func examplesIn(lang, open, close string) string {
	var b strings.Builder
	for _, r := range Rows() {
		e, ok := example(lang, r)
		if !ok {
			continue
		}
		b.WriteString(open + "\n" + e.Code + "\n" + close + "\n")
	}
	return b.String()
}

// checkSyntax writes src to a file named name and runs tool on it.
func checkSyntax(t *testing.T, name, src string, tool string, args ...string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	out, err := exec.Command(tool, append(args, path)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s\n--- source:\n%s", filepath.Base(tool), name, err, out, src)
	}
}

// TestExamplesCompile: every example the report can show, together with
// the helpers of docs/migration.md, passes its language's own syntax check
// (and, in Perl under strict, Java and PHP, its name checks). C# is not
// checked: no compiler on the test machines.
func TestExamplesCompile(t *testing.T) {
	t.Run("PHP", func(t *testing.T) {
		php := testenv.LookPath(t, "php", "apt-get install php-cli")
		src := helperOf(t, "php") + "\nfunction examples($goid, $orderNumber, $productName, $paymentId, $amount, $p1, $currency)\n{\n" +
			examplesIn(usage.LangPHP, "", "") + "}\n"
		checkSyntax(t, "examples.php", src, php, "-l")
	})
	t.Run("Python", func(t *testing.T) {
		py := testenv.LookPath(t, "python3", "apt-get install python3")
		ex := examplesIn(usage.LangPython, "", "")
		src := helperOf(t, "python") + "\n\ndef examples(goid, order_number, product_name, payment_id, amount, p1, currency):\n" +
			indent(ex, "    ") + "    pass\n"
		checkSyntax(t, "examples.py", src, py, "-m", "py_compile")
	})
	t.Run("Perl", func(t *testing.T) {
		perl := testenv.LookPath(t, "perl", "apt-get install perl")
		src := helperOf(t, "perl") + "\nsub examples {\n    my ($goid, $order_number, $product_name, $payment_id, $amount, $p1, $currency) = @_;\n" +
			examplesIn(usage.LangPerl, "{", "}") + "}\n1;\n"
		checkSyntax(t, "examples.pl", src, perl, "-c")
	})
	t.Run("JavaScript", func(t *testing.T) {
		node := testenv.LookPath(t, "node", "apt-get install nodejs")
		src := helperOf(t, "javascript") + "\nasync function examples(goid, orderNumber, productName, paymentId, amount, p1, currency) {\n" +
			examplesIn(usage.LangJavaScript, "{", "}") + "}\n"
		checkSyntax(t, "examples.js", src, node, "--check")
	})
	t.Run("Java", func(t *testing.T) {
		javac := testenv.LookPath(t, "javac", "apt-get install default-jdk-headless")
		src := "import java.util.*;\nimport static java.util.Map.entry;\n\nclass Examples {\n" +
			"    static Object rest(String method, String path) { return null; }\n" +
			"    static Object rest(String method, String path, Map<String, ?> json) { return null; }\n" +
			"    static Object restForm(String method, String path, Map<String, ?> fields) { return null; }\n\n" +
			"    static void examples(long goid, String orderNumber, String productName, long paymentId, long amount, String p1, String currency) {\n" +
			examplesIn(usage.LangJava, "{", "}") + "    }\n}\n"
		dir := t.TempDir()
		path := filepath.Join(dir, "Examples.java")
		require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
		out, err := exec.Command(javac, "-d", dir, path).CombinedOutput()
		if err != nil {
			t.Fatalf("javac: %v\n%s\n--- source:\n%s", err, out, src)
		}
	})
}

func indent(s, prefix string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + line + "\n")
	}
	return b.String()
}
