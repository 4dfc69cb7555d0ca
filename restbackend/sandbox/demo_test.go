package sandbox

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The demo merchant is defined once (demo.go); what cannot import it (the
// README, the configuration reference, the PHP example scripts) must show
// the same values.
func TestDemoMerchantEverywhereTheSame(t *testing.T) {
	for file, values := range map[string][]string{
		"../../README.md":                      {strconv.FormatInt(DemoAccount.GoID, 10), DemoAccount.ClientID, DemoAccount.ClientSecret, DemoSecureKey},
		"../../docs/configuration.md":          {strconv.FormatInt(DemoAccount.GoID, 10), DemoAccount.ClientID, DemoAccount.ClientSecret, DemoSecureKey},
		"../../examples/first-payment/lib.php": {"'" + strconv.FormatInt(DemoAccount.GoID, 10) + "'", "'" + DemoSecureKey + "'"},
	} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, v := range values {
			assert.Contains(t, string(b), v, file)
		}
	}
}
