//go:build race

package main

// raceOn: the tests run under the race detector (make test-race), so the
// end-to-end tests build the binaries they run with it too: reload, rate
// sharing, the usage record and the outbox run in the bridge's process,
// not the test's. A race found there makes the binary exit 66 (Stop
// requires 0) and is reported by checkNoRace.
const raceOn = true
