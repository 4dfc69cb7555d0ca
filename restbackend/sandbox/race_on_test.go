//go:build race

package sandbox

// raceOn: the browser test runs once, in the pass without -race (its Go
// side is covered under -race by the page tests).
const raceOn = true
