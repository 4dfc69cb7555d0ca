package main

// The legacy e-shop scenarios and what must hold after each. The PHP and the
// Axis client run the same scenarios (testdata/clients/php/scenarios.php,
// testdata/clients/axis/Main.java) and print their observations as a JSON
// object of strings; signatures are made and checked by the clients alone.

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type facts map[string]string

// parseFacts reads the last JSON object line a client printed.
func parseFacts(t *testing.T, stdout string) facts {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "{") {
			var f facts
			require.NoError(t, json.Unmarshal([]byte(l), &f), "client output %q", l)
			return f
		}
	}
	t.Fatalf("client printed no facts; stdout:\n%s", stdout)
	return nil
}

func (f facts) eq(t *testing.T, key, want string) {
	t.Helper()
	assert.Equal(t, want, f[key], "%s (all facts: %v)", key, f)
}

func (f facts) nonEmpty(t *testing.T, key string) {
	t.Helper()
	assert.NotEmpty(t, f[key], "%s (all facts: %v)", key, f)
}

func (f facts) positive(t *testing.T, key string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(f[key], 10, 64)
	assert.NoError(t, err, "%s (all facts: %v)", key, f)
	assert.Positive(t, n, key)
	return n
}

// signedStatus: an EPaymentStatus a legacy client accepts.
func (f facts) signedStatus(t *testing.T, p, state string) {
	t.Helper()
	f.eq(t, p+".result", "CALL_COMPLETED")
	f.eq(t, p+".sig", "ok")
	f.eq(t, p+".state", state)
	if _, ok := f[p+".matches"]; ok {
		f.eq(t, p+".matches", "ok")
	}
}

// signedResult: an EPaymentResult with the given result and a valid signature.
func (f facts) signedResult(t *testing.T, p, result string) {
	t.Helper()
	f.eq(t, p+".result", result)
	f.eq(t, p+".sig", "ok")
}

// created: createPayment accepted, as the legacy library demanded it.
func (f facts) created(t *testing.T) {
	t.Helper()
	f.signedStatus(t, "create", "CREATED")
	f.positive(t, "create.id")
	f.eq(t, "pay.http", "200")
}

type scenario struct {
	name  string
	check func(t *testing.T, f facts)
	// rest is checked against the bridge's log of the scenario: whether
	// the bridge called the REST gateway at all.
	rest restExpect
}

type restExpect int

const (
	restUnchecked restExpect = iota
	restCalled
	restNotCalled
)

// restCallMark is what the REST client logs (at debug level) for each
// gateway call: the path under the REST root.
const restCallMark = "/payments/payment"

var scenarios = []scenario{
	{"card_paid", func(t *testing.T, f facts) {
		f.created(t)
		f.signedStatus(t, "status", "PAID")
		f.eq(t, "status.id", f["create.id"])
		f.nonEmpty(t, "status.paymentChannel")
	}, restCalled}, // proves the log probe of bad_signature can see REST calls
	{"preauth_capture", func(t *testing.T, f facts) {
		f.created(t)
		f.signedStatus(t, "authorized", "AUTHORIZED")
		f.signedResult(t, "op", "FINISHED")
		f.eq(t, "op.id", f["create.id"])
		f.signedStatus(t, "status", "PAID")
	}, restUnchecked},
	{"preauth_void", func(t *testing.T, f facts) {
		f.created(t)
		f.signedStatus(t, "authorized", "AUTHORIZED")
		f.signedResult(t, "op", "FINISHED")
		f.signedStatus(t, "status", "CANCELED")
	}, restUnchecked},
	{"refund_whole", func(t *testing.T, f facts) {
		f.created(t)
		f.signedResult(t, "op", "FINISHED")
		f.signedStatus(t, "status", "REFUNDED")
	}, restUnchecked},
	{"refund_partial", func(t *testing.T, f facts) {
		f.created(t)
		f.signedResult(t, "op", "FINISHED")
		if _, ok := f["op2.result"]; ok { // Axis: the refundRequest overload of refundPayment
			f.signedResult(t, "op2", "FINISHED")
		}
		f.signedStatus(t, "status", "PARTIALLY_REFUNDED")
	}, restUnchecked},
	{"recurrence_on_demand", func(t *testing.T, f facts) {
		f.created(t)
		f.signedStatus(t, "status", "PAID")
		// Created, as the legacy library (GopaySoap::performRecurrence)
		// demands; the stored card is charged right after.
		f.signedStatus(t, "child", "CREATED")
		f.eq(t, "child.parent", f["parent.id"])
		f.eq(t, "child.productName", "Monthly plan") // inherited from the parent
		f.eq(t, "child.totalPrice", "9900")
		f.positive(t, "child.id")
		assert.NotEqual(t, f["parent.id"], f["child.id"], "child has its own session id")
		f.signedStatus(t, "childPaid", "PAID")
		f.eq(t, "childPaid.id", f["child.id"])
		f.eq(t, "childPaid.parent", f["parent.id"])
		f.signedResult(t, "void", "FINISHED")
	}, restUnchecked},
	{"payment_methods", func(t *testing.T, f facts) {
		f.positive(t, "methods.count")
		for _, code := range strings.Split(f["methods.codes"], ",") {
			assert.NotEmpty(t, code, "every method has a code: %v", f)
		}
	}, restUnchecked},
	{"create_buyer", func(t *testing.T, f facts) {
		f.eq(t, "buyer.result", "FAILED")
		f.nonEmpty(t, "buyer.resultDescription")
	}, restUnchecked},
	{"bad_signature", func(t *testing.T, f facts) {
		f.eq(t, "create.result", "CALL_FAILED")
		f.nonEmpty(t, "create.resultDescription")
		f.eq(t, "status.result", "CALL_FAILED")
		f.eq(t, "capture.result", "FAILED")
		f.nonEmpty(t, "capture.resultDescription")
	}, restNotCalled}, // refused before any REST call
	{"unknown_goid", func(t *testing.T, f facts) {
		f.eq(t, "create.result", "CALL_FAILED")
		f.nonEmpty(t, "create.resultDescription")
		f.eq(t, "status.result", "CALL_FAILED")
		// Not signed with some other e-shop's key.
		assert.NotEqual(t, "ok", f["create.sig"], "create.sig")
	}, restNotCalled},
	{"rest_validation", func(t *testing.T, f facts) {
		f.eq(t, "long.result", "CALL_FAILED")
		f.nonEmpty(t, "long.resultDescription")
		f.eq(t, "currency.result", "CALL_FAILED")
		f.nonEmpty(t, "currency.resultDescription")
	}, restUnchecked},
	{"status_wcust", func(t *testing.T, f facts) {
		f.created(t)
		f.signedStatus(t, "status", "PAID")
		f.eq(t, "customer.email", "jan@example.cz")
		f.eq(t, "customer.firstName", "Jan")
		f.nonEmpty(t, "card.cardNumber")
	}, restUnchecked},
}

// runScenarios runs every scenario as its own subtest through run, which
// executes one client process against b and returns its facts (nil if it
// failed hard). Scenarios run one after the other, so the part of b's log
// written meanwhile belongs to the scenario.
func runScenarios(t *testing.T, b *bridgeProc, list []scenario, run func(t *testing.T, name string, args ...string) (facts, error)) {
	for _, sc := range list {
		t.Run(sc.name, func(t *testing.T) {
			from := b.log.Len()
			f, err := run(t, sc.name)
			if err != nil {
				t.Errorf("client failed: %v", err)
			}
			if f != nil {
				sc.check(t, f)
			}
			if sc.rest != restUnchecked {
				log := b.log.String()[from:]
				assert.Equal(t, sc.rest == restCalled, strings.Contains(log, restCallMark),
					"REST gateway called (%q in the bridge log); log of the scenario:\n%s", restCallMark, log)
			}
		})
	}
}

// originalScenarios are those a client built on the original WSDL can run:
// all but paymentStatusWCust, which that WSDL predates.
func originalScenarios() []scenario {
	var out []scenario
	for _, sc := range scenarios {
		if sc.name != "status_wcust" {
			out = append(out, sc)
		}
	}
	return out
}
