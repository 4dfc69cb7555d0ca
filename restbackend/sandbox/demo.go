package sandbox

import "github.com/legacybridge/soapbridge/restbackend"

// DemoAccount is the demo merchant's account: the one the bridge serves on
// the embedded sandbox with nothing configured, cmd/gatewaysandbox registers
// by default, and the example scripts and the load harness use. Public test
// values, printed at start: never a real gateway's.
var DemoAccount = restbackend.Account{GoID: 8123456789, ClientID: "sandbox-client", ClientSecret: "sandbox-secret"}

// DemoSecureKey is the demo merchant's legacy signature key. The sandbox
// speaks only REST and never uses it; it is kept beside the account so that
// the bridge and the tools that sign legacy calls share one demo merchant.
const DemoSecureKey = "DemoSecureKey-0123456789"
