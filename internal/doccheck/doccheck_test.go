package doccheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	md := "# T\n\n```sh\nmake run   # comment\n\n# only a comment\n$ go run ./cmd/soapbridge \\\n    -listen :9000\n```\n\n" +
		"~~~~yaml\nlisten: \":8080\"\n```\nnot a fence end\n~~~~\n\n" +
		"```sh {no-run: needs docker}\ndocker build -t soapbridge .\n```\n" +
		"   ```bash {serve: http://localhost:8080/healthz}\n   make run\n   ```\n" +
		"```\nplain\n```\n"
	bs, err := Parse("x.md", md)
	require.NoError(t, err)
	require.Len(t, bs, 5)

	assert.Equal(t, Block{File: "x.md", Line: 3, Lang: "sh",
		Body: "make run   # comment\n\n# only a comment\n$ go run ./cmd/soapbridge \\\n    -listen :9000\n"}, bs[0])
	assert.True(t, bs[0].Shell())
	assert.Equal(t, []string{"make run   # comment", "go run ./cmd/soapbridge -listen :9000"}, Commands(bs[0].Body))

	assert.Equal(t, "yaml", bs[1].Lang)
	assert.False(t, bs[1].Shell())
	assert.Contains(t, bs[1].Body, "```\nnot a fence end\n", "a shorter or other fence does not close a block")

	assert.Equal(t, "no-run", bs[2].Attr)
	assert.Equal(t, "needs docker", bs[2].Value)
	assert.Equal(t, "x.md:17", bs[2].Where())

	assert.Equal(t, "bash", bs[3].Lang)
	assert.Equal(t, "serve", bs[3].Attr)
	assert.Equal(t, "http://localhost:8080/healthz", bs[3].Value)
	assert.Equal(t, []string{"make run"}, Commands(bs[3].Body))

	assert.Equal(t, "", bs[4].Lang)
}

func TestParseErrors(t *testing.T) {
	_, err := Parse("x.md", "text\n```sh\nmake run\n")
	assert.EqualError(t, err, "x.md:2: code fence never closed")
	_, err = Parse("x.md", "```sh no-run\nmake\n```\n")
	assert.ErrorContains(t, err, "x.md:1: info string")
	_, err = Parse("x.md", "```{serve: x}\nmake\n```\n")
	assert.ErrorContains(t, err, "the language comes first")
}

func TestWithoutComment(t *testing.T) {
	assert.Equal(t, "make test", withoutComment("make test   # installs what is missing"))
	assert.Equal(t, "make test", withoutComment("make test"))
	assert.Equal(t, `php -r 'echo "#";'`, withoutComment(`php -r 'echo "#";'`))
}
