package sandbox

import (
	"sync"
	"time"
)

// Clock is the sandbox's source of time.
type Clock interface{ Now() time.Time }

// advancer is a clock that can be moved forward (POST /sandbox/clock/advance).
type advancer interface {
	Clock
	Advance(d time.Duration)
}

// ManualClock stands still until advanced. Gateways created with it run what
// became due (lapses, recurring charges) inside Advance, so a test that
// advances it sees the effects as soon as Advance returns.
type ManualClock struct {
	mu   sync.Mutex
	now  time.Time
	subs map[int]func()
	next int
}

// NewManualClock returns a clock showing t.
func NewManualClock(t time.Time) *ManualClock {
	return &ManualClock{now: t, subs: map[int]func(){}}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d, then lets every gateway using it run what
// became due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	fs := make([]func(), 0, len(c.subs))
	for _, f := range c.subs {
		fs = append(fs, f)
	}
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// subscribe registers f to run after each Advance; the result unregisters it.
func (c *ManualClock) subscribe(f func()) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.subs[id] = f
	return func() {
		c.mu.Lock()
		delete(c.subs, id)
		c.mu.Unlock()
	}
}

// offsetClock is real time plus an offset that Advance grows: the default
// clock, so a standalone sandbox can still be moved forward.
type offsetClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *offsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}
