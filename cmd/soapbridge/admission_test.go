package main

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitFor starts a waiting acquire (which gives up when done is closed)
// and returns once it is on the list, so that waiters arrive in a known
// order; got receives its outcome.
func waitFor(t *testing.T, a *admission, name string, done <-chan struct{}, got chan<- string) {
	t.Helper()
	_, _, before := a.state()
	go func() {
		if a.acquire(done) {
			got <- name
		} else {
			got <- "refused " + name
		}
	}()
	require.Eventually(t, func() bool { _, _, n := a.state(); return n == before+1 }, 10*time.Second, time.Millisecond)
}

// A freed slot goes to the oldest waiter.
func TestAdmissionServesInOrder(t *testing.T) {
	a := newAdmission(1, time.Minute)
	require.True(t, a.tryAcquire())
	require.False(t, a.tryAcquire(), "the one slot is taken")
	got := make(chan string, 4)
	for _, name := range []string{"A", "B", "C"} {
		waitFor(t, a, name, nil, got)
	}
	for _, want := range []string{"A", "B", "C"} {
		a.release()
		assert.Equal(t, want, <-got, "in order of arrival")
	}
	a.release()
	limit, inUse, waiting := a.state()
	assert.Equal(t, [3]int{1, 0, 0}, [3]int{limit, inUse, waiting})
	assert.Empty(t, a.waiting, "the list is emptied")
}

// A waiter whose wait runs out is refused and leaves the list.
func TestAdmissionWaitRunsOut(t *testing.T) {
	a := newAdmission(1, 5*time.Millisecond)
	require.True(t, a.tryAcquire())
	assert.False(t, a.acquire(nil), "no slot came free within the wait")
	_, inUse, waiting := a.state()
	assert.Equal(t, 1, inUse)
	assert.Zero(t, waiting)
	assert.Empty(t, a.waiting, "the list is emptied")
	a.release()
	assert.True(t, a.acquire(nil), "a free slot is taken without waiting")
}

// Raised, the limit admits waiters at once; lowered under the calls in
// progress, it keeps the slots of the calls that end until they are under
// it.
func TestAdmissionLimitMoves(t *testing.T) {
	a := newAdmission(3, time.Minute)
	for range 3 {
		require.True(t, a.tryAcquire())
	}
	a.setLimit(1)
	a.release()
	a.release()
	assert.False(t, a.tryAcquire(), "one in progress, at the lowered limit")
	a.release()
	assert.True(t, a.tryAcquire())

	got := make(chan string, 2)
	waitFor(t, a, "A", nil, got)
	waitFor(t, a, "B", nil, got)
	a.setLimit(3)
	assert.ElementsMatch(t, []string{"A", "B"}, []string{<-got, <-got}, "both admitted by the raise")
	limit, inUse, waiting := a.state()
	assert.Equal(t, [3]int{3, 3, 0}, [3]int{limit, inUse, waiting})
}

// A waiter granted a slot just as its wait runs out takes it: the slot
// is neither lost nor given twice, and the waiter goes back to the pool
// with nothing left to receive (reused, it waits and is refused).
func TestAdmissionGrantedAsTheWaitRunsOut(t *testing.T) {
	a := newAdmission(1, 20*time.Millisecond)
	require.True(t, a.tryAcquire())
	got := make(chan bool, 1)
	go func() { got <- a.acquire(nil) }()
	require.Eventually(t, func() bool { _, _, n := a.state(); return n == 1 }, 10*time.Second, time.Millisecond)
	a.mu.Lock()
	time.Sleep(60 * time.Millisecond) // its timer fires; it waits for the mutex
	a.grant(a.next())                 // as release does: the slot changes hands
	a.mu.Unlock()
	assert.True(t, <-got, "the slot granted is the waiter's, though its wait ran out")
	limit, inUse, waiting := a.state()
	assert.Equal(t, [3]int{1, 1, 0}, [3]int{limit, inUse, waiting})

	assert.False(t, a.acquire(nil), "a reused waiter receives no stale grant")
	a.release()
	limit, inUse, waiting = a.state()
	assert.Equal(t, [3]int{1, 0, 0}, [3]int{limit, inUse, waiting})
}

// A waiter whose client leaves (its done closed) gives up at once, long
// before its wait runs out, and leaves the list: the slots freed next go
// to the waiters before and after it, none to it, and none is lost.
func TestAdmissionWaiterLeaves(t *testing.T) {
	a := newAdmission(1, time.Minute)
	require.True(t, a.tryAcquire())
	got := make(chan string, 4)
	done := make(chan struct{})
	waitFor(t, a, "A", nil, got)
	waitFor(t, a, "B", done, got)
	waitFor(t, a, "C", nil, got)
	close(done)
	select {
	case g := <-got:
		assert.Equal(t, "refused B", g, "B gave up, and only B")
	case <-time.After(10 * time.Second):
		t.Fatal("B still waits after its client left")
	}
	a.checkList(t)
	limit, inUse, waiting := a.state()
	assert.Equal(t, [3]int{1, 1, 2}, [3]int{limit, inUse, waiting}, "A and C wait, the slot is held")
	for _, want := range []string{"A", "C"} {
		a.release()
		assert.Equal(t, want, <-got, "in order of arrival, B skipped")
	}
	a.release()
	limit, inUse, waiting = a.state()
	assert.Equal(t, [3]int{1, 0, 0}, [3]int{limit, inUse, waiting})
	assert.Empty(t, a.waiting, "the list is emptied")

	// Gone before it would wait: refused without joining the list; a free
	// slot is still taken (the call's handler sees its context ended).
	require.True(t, a.tryAcquire())
	assert.False(t, a.acquire(done))
	assert.Empty(t, a.waiting)
	a.release()
	assert.True(t, a.acquire(done), "a free slot is taken without waiting")
	a.release()
}

// A waiter granted a slot just as its client leaves does not take it: the
// slot goes on to the next waiter (as a release), neither lost nor kept
// for a call made for nobody. Which of the two the waiter sees first
// (the grant or its done) does not matter: both end the same.
func TestAdmissionGrantedAsTheClientLeaves(t *testing.T) {
	a := newAdmission(1, time.Minute)
	require.True(t, a.tryAcquire())
	got := make(chan string, 2)
	done := make(chan struct{})
	waitFor(t, a, "A", done, got)
	waitFor(t, a, "B", nil, got)
	a.mu.Lock()
	close(done)
	time.Sleep(20 * time.Millisecond) // A most likely sees done and waits for the mutex
	a.grant(a.next())                 // as release does: the slot changes hands
	a.mu.Unlock()
	assert.ElementsMatch(t, []string{"refused A", "B"}, []string{<-got, <-got}, "A's slot went on to B")
	a.checkList(t)
	limit, inUse, waiting := a.state()
	assert.Equal(t, [3]int{1, 1, 0}, [3]int{limit, inUse, waiting})
	a.release()
	limit, inUse, waiting = a.state()
	assert.Equal(t, [3]int{1, 0, 0}, [3]int{limit, inUse, waiting})
	assert.True(t, a.tryAcquire(), "the slot is free: not lost")
	assert.False(t, a.tryAcquire(), "nor made up")
}

// checkList fails t unless the list is consistent: every waiter on it
// once, none granted, the live ones counted in live, and none waiting
// while a slot is free. Errorf, not Fatalf: called off the test's goroutine.
func (a *admission) checkList(t *testing.T) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := make(map[*waiter]bool, len(a.waiting))
	live := 0
	for i := a.head; i < len(a.waiting); i++ {
		w := a.waiting[i]
		if w == nil || seen[w] || w.granted {
			t.Errorf("list entry %d (head %d, length %d): nil, twice on the list (reused from the pool) or granted", i, a.head, len(a.waiting))
			return
		}
		seen[w] = true
		if !w.gone {
			live++
		}
	}
	if live != a.live || a.live > 0 && a.inUse < a.limit {
		t.Errorf("%d live on the list, %d counted; %d in use of %d", live, a.live, a.inUse, a.limit)
	}
}

// A flood of waiters (thousands, most refused at the end of a short wait,
// a third of them with clients that leave at about the time they would be
// served) while the limit moves: never more in progress than the highest limit,
// the list consistent throughout (trimmed, compacted, its waiters reused
// from the pool only once off it), and at the end every slot free, none
// lost or made up, and the list empty. Run with -race in CI.
func TestAdmissionFlood(t *testing.T) {
	const highest = 50
	a := newAdmission(highest, 3*time.Millisecond)
	var inProgress, peak, admitted, left atomic.Int64
	stop := make(chan struct{})
	var moves sync.WaitGroup
	moves.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				a.setLimit(highest)
				return
			default:
			}
			a.setLimit(10 + i%(highest-9))
			a.checkList(t)
			time.Sleep(200 * time.Microsecond)
		}
	})
	var calls sync.WaitGroup
	for i := range 2000 {
		calls.Go(func() {
			for j := range 10 {
				var done chan struct{}
				if i%3 == 0 { // its client leaves within the wait
					done = make(chan struct{})
					time.AfterFunc(time.Duration(j%4)*time.Millisecond, func() { close(done) })
				}
				if !a.tryAcquire() && !a.acquire(done) {
					if isClosed(done) {
						left.Add(1)
					}
					continue
				}
				admitted.Add(1)
				n := inProgress.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(100 * time.Microsecond)
				inProgress.Add(-1)
				a.release()
			}
		})
	}
	calls.Wait()
	close(stop)
	moves.Wait()
	a.checkList(t)
	assert.Positive(t, admitted.Load())
	assert.Positive(t, left.Load(), "some clients left while waiting")
	assert.LessOrEqual(t, peak.Load(), int64(highest))
	limit, inUse, waiting := a.state()
	assert.Equal(t, [3]int{highest, 0, 0}, [3]int{limit, inUse, waiting})
	assert.Empty(t, a.waiting)
	assert.Zero(t, a.head)
	for range highest {
		assert.True(t, a.tryAcquire(), "every slot free again: none lost")
	}
	assert.False(t, a.tryAcquire(), "nor made up")
}
