// Package backoff computes the waits between repeated attempts: exponential
// growth from a base, an optional cap, and optional jitter so that many
// clients failing together do not come back at the same instant.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Policy is an exponential backoff. The wait before retry n (n >= 1) is
// Base·2^(n-1), capped at Max when Max > 0. Jitter randomizes it: the wait
// is drawn uniformly from [d·(1-Jitter), d], so 0 means no jitter, 0.5
// "the upper half" (partial jitter) and 1 "anywhere from 0 to d" (full
// jitter).
type Policy struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64
}

// Delay returns the wait before retry n; n < 1 counts as 1.
func (p Policy) Delay(n int) time.Duration {
	d := p.ceiling(n)
	if p.Jitter <= 0 || d <= 0 {
		return d
	}
	j := min(p.Jitter, 1)
	spread := time.Duration(float64(d) * j)
	return d - spread + rand.N(spread+1)
}

// ceiling is the delay of retry n before jitter; doubling stops before it
// could overflow.
func (p Policy) ceiling(n int) time.Duration {
	d := p.Base
	for i := 1; i < n; i++ {
		if p.Max > 0 && d >= p.Max {
			break
		}
		if d > time.Duration(1<<62) {
			break
		}
		d *= 2
	}
	if p.Max > 0 && d > p.Max {
		d = p.Max
	}
	return d
}
