package main

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// The embedded sandbox gateway marks payments PAID on an anonymous request
// and signs the result with the merchant's real key, so it must never run
// by accident where real merchants are configured. The rule:
//   - nothing configured (no gateway URL, no merchant setting): the demo on
//     the sandbox, so that `go run ./cmd/soapbridge` works with nothing set;
//   - a merchant setting and no gateway URL: refused, unless the sandbox
//     is asked for explicitly (sandbox / SOAPBRIDGE_SANDBOX / -sandbox);
//   - a gateway URL together with sandbox=true: refused (which one?).

// checkSandboxChoice returns the errors of the rule above.
func (c *Config) checkSandboxChoice() []error {
	asked := c.Sandbox != nil && *c.Sandbox
	refused := c.Sandbox != nil && !*c.Sandbox
	switch {
	case asked && c.GatewayURL != "":
		return []error{fmt.Errorf("both a gateway URL and the embedded sandbox are set: unset gateway_url (%s / -gateway-url) "+
			"to run against the embedded sandbox, or unset sandbox (%s / -sandbox) to run against the gateway",
			envPrefix+"GATEWAY_URL", envPrefix+"SANDBOX")}
	case refused && c.GatewayURL == "":
		return []error{fmt.Errorf("no gateway URL and the sandbox is off: set gateway_url (%s / -gateway-url) to the payment gateway's REST root",
			envPrefix+"GATEWAY_URL")}
	case c.Sandbox == nil && c.GatewayURL == "" && len(c.merchantSources) > 0:
		return []error{fmt.Errorf("merchants are configured (%s) but no gateway URL: set gateway_url (%s / -gateway-url) "+
			"to the payment gateway's REST root (e.g. https://gw.sandbox.gopay.com/api); "+
			"to try them against the embedded sandbox gateway instead (fake payments), set %s=true (sandbox: true / -sandbox)",
			strings.Join(c.merchantSources, ", "), envPrefix+"GATEWAY_URL", envPrefix+"SANDBOX")}
	}
	return nil
}

// usesSandbox reports whether the bridge runs on the embedded sandbox.
func (c *Config) usesSandbox() bool { return c.GatewayURL == "" }

// sandboxWarnings are logged at every start on the embedded sandbox when
// the set-up looks like more than a local test: anyone who reaches the
// bridge or the sandbox can then mark payments PAID.
func (c *Config) sandboxWarnings() []string {
	if !c.usesSandbox() {
		return nil
	}
	var w []string
	if c.PublicURL != "" && !loopbackURL(c.PublicURL) {
		w = append(w, "the public URL is not a loopback address: whoever reaches the bridge can have payments marked PAID "+
			"by the embedded sandbox gateway; set gateway_url ("+envPrefix+"GATEWAY_URL) for real payments")
	}
	for _, m := range c.Merchants {
		if m.GoID != demoMerchant.GoID || m.ClientID != demoMerchant.ClientID ||
			m.ClientSecret != demoMerchant.ClientSecret || m.SecureKey != demoMerchant.SecureKey {
			w = append(w, fmt.Sprintf("merchant %d is not the demo merchant but runs on the embedded sandbox gateway: "+
				"its payments are fake, yet the replies are signed with its secure key", m.GoID))
		}
	}
	if !loopbackHostPort(c.SandboxListen) {
		w = append(w, "the embedded sandbox listens on "+c.SandboxListen+", not on loopback: anyone who reaches it can pay payments, "+
			"move its clock and read its customers' data")
	}
	return w
}

// loopbackURL reports whether the host of u is localhost or a loopback IP.
func loopbackURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	return loopbackHost(p.Hostname())
}

func loopbackHostPort(hp string) bool {
	h, _, err := net.SplitHostPort(hp)
	return err == nil && loopbackHost(h)
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
