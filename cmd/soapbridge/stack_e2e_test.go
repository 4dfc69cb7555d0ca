package main

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/faultproxy"
	"github.com/legacybridge/soapbridge/operations"
)

// stackPerCallBudget is the most goroutine stack a paymentStatus waiting
// for the gateway may hold in the bridge, goroutines starting at the
// runtime's 2 KiB: the connection's goroutine running the handler (8 KiB),
// net/http's background read of the connection (2 KiB) and the gateway
// connection's read and write loops (4 KiB each). When the handler's path
// under the wait, or any step before it, needs more than 8 KiB of stack,
// its goroutine doubles to 16 KiB and keeps it while it waits: 8 KiB more
// per call in flight, twice that in memory once the collector's headroom
// (as much as it scans) is counted (issue 28: measured 26.7-27.4 KB per
// call before the frames were cut, 17.7-21.5 KB after: a malloc's slow path
// at the deepest point now and then still grows one).
const stackPerCallBudget = 24 << 10

// stackRounds is how many bridges TestHandlerStackWithin8KiBE2E measures
// at most, each with its own calls, before it gives up.
const stackRounds = 3

// TestHandlerStackWithin8KiBE2E: calls held at the gateway by the fault
// proxy (not by a timing margin) hold no more stack than the budget. The
// stack the process holds is read from its own metrics before and while
// the calls wait; the calls' client and the held gateway are in this
// process, not in the bridge's.
//
// A handler goroutine that meets the allocator's slow path (sweeping owed
// after a collection) at its deepest point grows to 16 KiB and keeps it
// while it waits; how many do depends on the collections the machine's
// load brings: on a loaded 2-core machine 18.3-22.4 KB per call, once
// 25.1 KB (over the budget), where every handler at 16 KiB (c2bb1db) gives
// 26.5-27.4 KB in every round. So a round over the budget is measured
// again on a fresh bridge, up to stackRounds: a frame that grew fails
// every round, the load fails one now and then.
func TestHandlerStackWithin8KiBE2E(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's instrumentation makes every frame larger")
	}
	var got []int64
	for round := 1; round <= stackRounds; round++ {
		var perCall int64
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) { perCall = heldStackPerCall(t) })
		if t.Failed() {
			return
		}
		got = append(got, perCall)
		if perCall <= stackPerCallBudget {
			break
		}
	}
	assert.LessOrEqual(t, slices.Min(got), int64(stackPerCallBudget),
		"a call waiting for the gateway holds more stack than the budget in every round (%v bytes per call): a frame on its path grew (docs/performance.md, \"Memory per call in flight\")", got)
}

// heldStackPerCall starts a bridge, holds 200 paymentStatus calls at the
// gateway and returns the stack the bridge holds per call meanwhile.
func heldStackPerCall(t *testing.T) int64 {
	const calls = 200
	e := newMoneyEnv(t, "10s", "20s", withEnv(
		"GODEBUG=adaptivestackstart=0", // every goroutine starts at 2 KiB: sizes independent of the process's past
		"SOAPBRIDGE_LOG_LEVEL=info",    // as in production: debug lines have deeper paths
		// The adaptive limit's code path as by default, with a target it
		// never reaches: the 200 calls are held on purpose, and a busy
		// test machine must not lower the limit under them.
		"SOAPBRIDGE_OVERLOAD_SCHED_LATENCY=10s",
	))
	id := operations.FormatInt(e.payment("plain"))
	require.Eventually(t, func() bool { return strings.Contains(e.b.log.String(), `"path":"/callback/notify","status":200`) },
		time.Minute, 10*time.Millisecond, "the payment's notification was handled")
	// The first status read of a payment reads its session from the
	// database (cached after): deeper than any later one.
	first := e.soap("paymentStatus", paymentStatusBody(t, id))
	require.Empty(t, first.fault)

	stack := func() int64 {
		f, err := strconv.ParseFloat(adminMetric(t, e.b.AdminURL, "go_memstats_stack_inuse_bytes"), 64)
		require.NoError(t, err, "go_memstats_stack_inuse_bytes in /metrics")
		return int64(f)
	}
	before := stack()
	e.proxy.Add(faultproxy.Rule{Method: http.MethodGet, Path: paymentPath, Fault: faultproxy.Hold, Times: calls})
	got := make(chan answer, calls)
	for range calls {
		go func() { got <- e.soap("paymentStatus", paymentStatusBody(t, id)) }()
	}
	require.Eventually(t, func() bool { return e.proxy.Holding(http.MethodGet, paymentPath) == calls },
		time.Minute, 10*time.Millisecond, "every call reached the gateway and is held")
	held := stack()
	e.proxy.Release()
	for range calls {
		a := <-got
		assert.Empty(t, a.fault)
	}
	perCall := (held - before) / calls
	t.Logf("stack held per call waiting for the gateway: %d bytes (%d before, %d with %d calls held)", perCall, before, held, calls)
	return perCall
}
