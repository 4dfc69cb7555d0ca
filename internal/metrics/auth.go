package metrics

import "github.com/prometheus/client_golang/prometheus"

// Reasons of a refused HTTP Basic login (access.LoginWrong, LoginBlocked).
var loginReasons = []string{"wrong", "blocked"}

func (m *Metrics) registerLogins() {
	m.logins = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soapbridge_basic_auth_refusals_total",
		Help: "SOAP calls refused for their HTTP Basic credentials: wrong (compared and wrong; counted against the caller's address) " +
			"or blocked (refused unchecked: the address made too many wrong ones)."}, []string{"reason"})
	m.Registry.MustRegister(m.logins)
	for _, r := range loginReasons {
		m.logins.WithLabelValues(r)
	}
}

// LoginRefused is access.Options.OnLoginRefused. The reason is one of
// access's two, so the label stays bounded.
func (m *Metrics) LoginRefused(reason string) { m.logins.WithLabelValues(reason).Inc() }
