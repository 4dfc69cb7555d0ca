package main

import (
	"sync"
	"time"
)

// admission counts the calls in progress against a limit that may change
// at any time (the adaptive limit), and keeps the calls that wait for a
// slot, each at most overload_wait, or until its client leaves. A slot
// that comes free goes straight to the oldest waiting call.
//
// In order of arrival, and not newest first ("adaptive LIFO", as in
// Facebook's server queues) once the queue cannot keep up: three ways of
// switching were measured (docs/performance.md, "Newest first under an
// overload"). Under a cold flood at 1.5 × capacity newest first halved
// the made calls' p99, but made about a tenth fewer calls; and 2000
// closed-loop clients over a limit of 1000, whom in order serves within
// the wait with next to no refusal, had the oldest starve past their wait
// into 3-15k refusals a round (a tenth to a fifth of their calls) under
// every switch tried. A refusal is an error a shop sees; a late reply
// under a flood is not.
//
// A counter under a mutex rather than a channel of tokens: the adaptive
// limit moves it directly (a channel needed tokens held back and owed,
// and lost a slot when a raise raced a release).
type admission struct {
	mu    sync.Mutex
	limit int
	inUse int
	// waiting holds the waiters by arrival from head on; one that gave
	// up stays (gone) until trim reaches it at the front. Live ones are
	// counted in live.
	waiting []*waiter
	head    int
	live    int
	wait    time.Duration // overload_wait
	free    sync.Pool     // *waiter, with its timer: a wait allocates nothing
}

// waiter is a call waiting for a slot. granted and gone are under the
// admission's mutex; ready gets one value when granted.
type waiter struct {
	ready   chan struct{}
	timer   *time.Timer
	granted bool
	gone    bool
}

// newAdmission admits limit calls at once; one more waits at most wait.
func newAdmission(limit int, wait time.Duration) *admission {
	return &admission{limit: limit, wait: wait}
}

// tryAcquire takes a slot if one is free, without waiting.
func (a *admission) tryAcquire() bool {
	a.mu.Lock()
	ok := a.inUse < a.limit
	if ok {
		a.inUse++
	}
	a.mu.Unlock()
	return ok
}

// acquire takes a free slot, or waits at most a.wait for one. It gives
// up at once, and leaves the list, when done is closed while it waits (the
// request's context: its client closed the connection); a nil done never
// is. A slot granted in the same instant as done is closed is passed on
// (release): the call it was for is not made, and no slot is lost. The
// caller tells the two refusals apart by done.
func (a *admission) acquire(done <-chan struct{}) bool {
	a.mu.Lock()
	if a.inUse < a.limit {
		a.inUse++
		a.mu.Unlock()
		return true
	}
	if isClosed(done) { // gone before it waited
		a.mu.Unlock()
		return false
	}
	w, _ := a.free.Get().(*waiter)
	if w == nil {
		w = &waiter{ready: make(chan struct{}, 1), timer: time.NewTimer(a.wait)}
	} else {
		w.granted, w.gone = false, false
		w.timer.Reset(a.wait)
	}
	a.waiting = append(a.waiting, w)
	a.live++
	a.mu.Unlock()

	select {
	case <-w.ready:
		w.timer.Stop()
		a.free.Put(w) // the granter took it off the list
		// Granted as the client left: pass it on.
		if isClosed(done) {
			a.release()
			return false
		}
		return true
	case <-w.timer.C:
	case <-done:
		w.timer.Stop() // nothing stale left for a reuse (Go 1.23 timers)
	}
	a.mu.Lock()
	if w.granted { // granted as the wait ran out or the client left
		a.mu.Unlock()
		<-w.ready
		a.free.Put(w)
		if isClosed(done) { // the client left: pass it on
			a.release()
			return false
		}
		return true // the wait ran out, the client is there: the slot is ours
	}
	w.gone = true
	a.live--
	a.trim()
	a.mu.Unlock()
	return false
}

// isClosed: whether done is closed (false for nil).
func isClosed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// release ends a call: its slot goes to a waiter, or back.
func (a *admission) release() {
	a.mu.Lock()
	if a.inUse <= a.limit && a.live > 0 {
		a.grant(a.next()) // the slot changes hands: inUse stays
	} else {
		a.inUse--
	}
	a.mu.Unlock()
}

// setLimit changes the limit. Raised, the new slots go to waiters at
// once; lowered under the calls in progress, it takes the slots of the
// calls that end until they are under it.
func (a *admission) setLimit(n int) {
	a.mu.Lock()
	a.limit = n
	for a.inUse < a.limit && a.live > 0 {
		a.inUse++
		a.grant(a.next())
	}
	a.mu.Unlock()
}

// state is the limit, the calls in progress and the live waiters (for
// tests; the metrics read the limiter's own counts).
func (a *admission) state() (limit, inUse, waiting int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit, a.inUse, a.live
}

// grant gives w its slot (never blocks: ready has room for the one value).
func (a *admission) grant(w *waiter) {
	w.granted = true
	w.ready <- struct{}{}
}

// next takes the oldest live waiter off the list (live > 0; the front is
// live, as every change of the list ends with trim). Under a.mu.
func (a *admission) next() *waiter {
	w := a.waiting[a.head]
	a.waiting[a.head] = nil
	a.head++
	a.live--
	a.trim()
	return w
}

// trim drops the waiters that gave up from the front of the list (all
// wait as long, so their waits run out mostly in order of arrival: the
// front is where they are; one that gave up behind a live one, as one
// whose client left does anywhere, stays until it is at the front or the
// list empties: no longer than the live ones before it wait), and empties
// the list, keeping its array, when none is live. Under a.mu.
func (a *admission) trim() {
	for a.head < len(a.waiting) && a.waiting[a.head].gone {
		a.free.Put(a.waiting[a.head])
		a.waiting[a.head] = nil
		a.head++
	}
	if a.live == 0 {
		for i := a.head; i < len(a.waiting); i++ {
			a.free.Put(a.waiting[i]) // gone, every one
			a.waiting[i] = nil
		}
		a.waiting, a.head = a.waiting[:0], 0
		return
	}
	if a.head > len(a.waiting)/2 && a.head > 64 { // reuse the front of the array
		n := copy(a.waiting, a.waiting[a.head:])
		clear(a.waiting[n:])
		a.waiting, a.head = a.waiting[:n], 0
	}
}
