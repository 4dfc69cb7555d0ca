package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// An open loop's timeline: per second the calls were due, made/refused
// and the made calls' p99 (0s: none made); failures and bad replies are
// in neither count, and a second with nothing due still has its place.
func TestOpenLoopTimeline(t *testing.T) {
	var r result
	assert.NotContains(t, r.String(), "per second due", "no timeline off an open loop")
	for i := range 100 {
		r.tick(0, made, time.Duration(i+1)*time.Millisecond)
	}
	r.tick(0, refused, 0)
	r.tick(0, failed, time.Second)
	r.tick(2, refused, 0)
	r.tick(3, made, 2*time.Second)
	r.tick(3, bad, time.Second)
	assert.Equal(t, "100/1 99ms | 0/0 0s | 0/1 0s | 1/0 2s", r.timeline())
	assert.Contains(t, r.String(), "\n      per second due (made/refused p99): 100/1 99ms | ")
}
