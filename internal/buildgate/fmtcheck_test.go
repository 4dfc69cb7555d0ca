package buildgate

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
)

// fmtCheck runs `make fmt-check` of the repository's Makefile in dir (a
// tree that is not a git checkout) and returns its output and success.
func fmtCheck(t *testing.T, dir string) (string, bool) {
	t.Helper()
	mk := testenv.LookPath(t, "make", "apt-get install make")
	testenv.LookPath(t, "gofmt", "a Go installation")
	makefile, err := filepath.Abs("../../Makefile")
	require.NoError(t, err)
	out, err := exec.Command(mk, "-s", "-C", dir, "-f", makefile, "fmt-check").CombinedOutput()
	return string(out), err == nil
}

func write(t *testing.T, path, body string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
}

const (
	formatted   = "package x\n\nfunc F() int { return 1 }\n"
	unformatted = "package x\nfunc   F() int {return 1}\n"
)

// The gate checks every Go file of the tree without asking git, so a new,
// untracked file is checked too and a copy without .git is not waved through.
func TestFmtCheckWithoutGit(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a", "a.go"), formatted)
	out, ok := fmtCheck(t, dir)
	assert.True(t, ok, out)

	write(t, filepath.Join(dir, "a", "b", "new.go"), unformatted)
	out, ok = fmtCheck(t, dir)
	assert.False(t, ok)
	assert.Contains(t, out, "a/b/new.go")
}

func TestFmtCheckFailsOnUnparsableFile(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "broken.go"), "package x\nfunc {\n")
	out, ok := fmtCheck(t, dir)
	assert.False(t, ok, out)
	assert.Contains(t, out, "gofmt failed")
}

func TestFmtCheckFailsWithoutGoFiles(t *testing.T) {
	out, ok := fmtCheck(t, t.TempDir())
	assert.False(t, ok, out)
	assert.Contains(t, out, "no Go files")
}

// Third-party trees (the browser tests' node_modules) are not ours to format.
func TestFmtCheckSkipsNodeModules(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.go"), formatted)
	write(t, filepath.Join(dir, "testdata", "browser", "node_modules", "x", "x.go"), unformatted)
	out, ok := fmtCheck(t, dir)
	assert.True(t, ok, out)
}
