package main

import (
	"runtime/debug"
)

// GC defaults, applied when the environment does not set GOGC or
// GOMEMLIMIT (the Go runtime has then already applied those). A higher GOGC
// than Go's 100 spends less CPU on collection per call: the bridge's heap
// is small and mostly short-lived request garbage. The memory limit keeps
// that trade from growing the heap without bound under a burst: near it
// the collector runs more often whatever GOGC says.
const (
	defaultGOGC       = 200
	defaultMemLimitMB = 192
)

func applyGCDefaults(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGOGC)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemLimitMB << 20)
	}
}
