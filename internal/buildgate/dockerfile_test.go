package buildgate

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// dockerfileInstructions returns the Dockerfile's instructions with their
// continuation lines joined, comments dropped.
func dockerfileInstructions(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	require.NoError(t, sc.Err())
	return out
}

// Base images are fully qualified (registry/repository) and pinned to an
// exact version (or a digest), so that podman accepts them and a rebuild
// gets the same image; the sandbox port is not exposed; the container
// health check runs the binary (there is no shell).
func TestDockerfile(t *testing.T) {
	pinned := regexp.MustCompile(`^[a-z0-9.-]+\.[a-z]+(:[0-9]+)?/[a-z0-9._/-]+(:[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9._-]*|@sha256:[0-9a-f]{64})$`)
	var froms, healthchecks []string
	for _, ins := range dockerfileInstructions(t, "../../Dockerfile") {
		fields := strings.Fields(ins)
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			img := fields[1]
			froms = append(froms, img)
			assert.True(t, img == "scratch" || pinned.MatchString(img), "base image %q is not fully qualified and pinned", img)
		case "EXPOSE":
			for _, p := range fields[1:] {
				assert.NotEqual(t, "8090", strings.TrimSuffix(p, "/tcp"), "the sandbox port must not be exposed")
			}
		case "ENV":
			assert.NotContains(t, ins, "SOAPBRIDGE_SANDBOX_LISTEN", "the sandbox keeps its loopback default in the image")
			assert.NotContains(t, ins, "SOAPBRIDGE_SANDBOX=", "the image must not ask for the sandbox")
		case "HEALTHCHECK":
			healthchecks = append(healthchecks, ins)
		}
	}
	require.NotEmpty(t, froms)
	require.Len(t, healthchecks, 1)
	assert.Contains(t, healthchecks[0], `CMD ["/usr/local/bin/soapbridge", "healthcheck"]`)
}

// The demo compose file is valid YAML, publishes only on the host's
// loopback, and sets no merchant (so the demo merchant is the one used).
func TestComposeDemo(t *testing.T) {
	b, err := os.ReadFile("../../deploy/compose.demo.yaml")
	require.NoError(t, err)
	var doc struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	require.NoError(t, dec.Decode(&doc))
	svc, ok := doc.Services["soapbridge"]
	require.True(t, ok)
	require.NotEmpty(t, svc.Ports)
	for _, p := range svc.Ports {
		assert.True(t, strings.HasPrefix(p, "127.0.0.1:"), "port %q is published beyond the host's loopback", p)
	}
	for k := range svc.Environment {
		for _, m := range []string{"GOID", "CLIENT_ID", "CLIENT_SECRET", "SECURE_KEY", "GATEWAY_URL", "SANDBOX"} {
			assert.NotEqual(t, "SOAPBRIDGE_"+m, k)
		}
	}
}
