package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDelayWithoutJitterDoublesToTheCap(t *testing.T) {
	p := Policy{Base: 30 * time.Second, Max: 2 * time.Hour}
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute,
		16 * time.Minute, 32 * time.Minute, 64 * time.Minute, 2 * time.Hour, 2 * time.Hour}
	for i, w := range want {
		assert.Equal(t, w, p.Delay(i+1), "retry %d", i+1)
	}
	assert.Equal(t, 30*time.Second, p.Delay(0), "n < 1 counts as the first retry")
	assert.Equal(t, 2*time.Hour, p.Delay(1_000_000), "no overflow on a huge attempt count")
}

func TestDelayWithoutCapDoesNotOverflow(t *testing.T) {
	p := Policy{Base: 50 * time.Millisecond}
	assert.Equal(t, 100*time.Millisecond, p.Delay(2))
	assert.Positive(t, p.Delay(200))
}

func TestPartialJitterStaysInTheUpperHalf(t *testing.T) {
	p := Policy{Base: 2 * time.Second, Max: 10 * time.Minute, Jitter: 0.5}
	for n := 1; n <= 30; n++ {
		d := p.ceiling(n)
		seen := map[time.Duration]bool{}
		for range 200 {
			got := p.Delay(n)
			assert.GreaterOrEqual(t, got, d/2, "retry %d", n)
			assert.LessOrEqual(t, got, d, "retry %d", n)
			seen[got] = true
		}
		assert.Greater(t, len(seen), 1, "retry %d: the delay must vary", n)
	}
}

func TestFullJitterSpansZeroToCeiling(t *testing.T) {
	p := Policy{Base: time.Second, Jitter: 1}
	low := false
	for range 1000 {
		got := p.Delay(1)
		assert.GreaterOrEqual(t, got, time.Duration(0))
		assert.LessOrEqual(t, got, time.Second)
		if got < time.Second/4 {
			low = true
		}
	}
	assert.True(t, low, "full jitter reaches the lower quarter")
}
