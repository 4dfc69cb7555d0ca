package sandbox

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// waitCalls waits until the sink saw n calls (bounded), then closes the
// gateway so that no retry is still pending, and returns the calls.
func (e *env) waitCalls(n int) []string {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(e.notify.queries()) < n && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	e.g.Close()
	return e.notify.queries()
}

func TestNotificationRetriedUntil200(t *testing.T) {
	e := newEnv(t)
	e.notify.fail = []int{500, 500}
	p := e.create(nil)
	e.mustHelper(p.ID, "pay", nil)
	calls := e.waitCalls(3)
	want := "goid=8123456789&id=" + itoa(p.ID)
	assert.Equal(t, []string{want, want, want}, calls, "two failures, then the 200 ends it")
}

func TestNotificationOnEveryChange(t *testing.T) {
	e := newEnv(t)
	p := e.create(nil) // creation itself is not announced
	e.mustHelper(p.ID, "wait", nil)
	e.mustHelper(p.ID, "wait", nil) // no change, no notification
	e.mustHelper(p.ID, "pay", nil)
	e.mustPost(p.ID, "refund", amount(100))
	e.mustPost(p.ID, "refund", amount(100)) // same state, but a refund
	e.mustPost(p.ID, "refund", amount(800))
	calls := e.waitCalls(5)
	assert.Len(t, calls, 5)
	for _, c := range calls {
		assert.Equal(t, "goid=8123456789&id="+itoa(p.ID), c)
	}
}

func TestNotificationGivesUp(t *testing.T) {
	e := newEnv(t)
	for range maxNotifyAttempts + 5 {
		e.notify.fail = append(e.notify.fail, 503)
	}
	p := e.create(nil)
	e.mustHelper(p.ID, "cancel", nil)
	assert.Len(t, e.waitCalls(maxNotifyAttempts), maxNotifyAttempts)
}

func TestRecurringChildrenAnnounced(t *testing.T) {
	e := newEnv(t)
	p := e.create(recurring(restbackend.CycleDay, 1, "2026-03-04"))
	e.mustHelper(p.ID, "pay", nil)
	e.clock.Advance(10 * 24 * time.Hour)
	calls := e.waitCalls(3)
	var ids []string
	for _, c := range calls {
		q, err := url.ParseQuery(c)
		require.NoError(t, err)
		ids = append(ids, q.Get("id"))
	}
	assert.ElementsMatch(t, []string{itoa(p.ID), itoa(p.ID + 1), itoa(p.ID + 2)}, ids)
}

func TestDefaultBackoffSpansADay(t *testing.T) {
	var total time.Duration
	for a := 1; a < maxNotifyAttempts; a++ {
		total += defaultBackoff(a)
	}
	assert.Equal(t, 30*time.Second, defaultBackoff(1))
	assert.Equal(t, 2*time.Hour, defaultBackoff(30))
	assert.InDelta(t, 24, total.Hours(), 2, "retries span about a day")
}

func TestWithID(t *testing.T) {
	assert.Equal(t, "https://a.example/n?goid=1&id=7", withID("https://a.example/n?goid=1", 7))
	assert.Equal(t, "https://a.example/n?id=7", withID("https://a.example/n", 7))
	assert.Equal(t, "https://a.example/n?b=%C3%A1&id=7#frag", withID("https://a.example/n?b=%C3%A1#frag", 7))
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
