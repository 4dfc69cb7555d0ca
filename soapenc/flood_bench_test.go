package soapenc

import (
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSmallRequestUnderLargeFlood measures a well-behaved client's
// touch (read + parse through ReadRequest) while 8×GOMAXPROCS goroutines
// keep sending 1 MiB bodies, against the same client with no flood, in the
// same run. Reported: p99 of each phase and their ratio. Before the size
// classes of parse slots, the small request waited for a slot behind the
// large parses; now it competes only for CPU.
//
//	go test ./soapenc -run='^$' -bench=SmallRequestUnderLargeFlood -benchtime=2000x
func BenchmarkSmallRequestUnderLargeFlood(b *testing.B) {
	small := envelope("", call("touch", ""))
	large := envelope("", call("touch", "<a>"+strings.Repeat("x", 1<<20)+"</a>"))
	lim := Limits{MaxBytes: 2 << 20}
	read := func(doc string) {
		r := httptest.NewRequest("POST", "/axis/EPaymentServiceV2", strings.NewReader(doc))
		r.Header.Set("Content-Type", "text/xml")
		if _, err := ReadRequest(r, lim); err != nil {
			b.Fatal(err)
		}
	}
	p99 := func(n int) time.Duration {
		lat := make([]time.Duration, n)
		for i := range lat {
			start := time.Now()
			read(small)
			lat[i] = time.Since(start)
		}
		slices.Sort(lat)
		return lat[len(lat)*99/100]
	}
	n := max(b.N, 200)
	for range 50 {
		read(small) // warm the buffer pool and the CPU caches
	}
	b.ResetTimer()
	quiet := p99(n)

	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 8 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !stop.Load() {
				read(large)
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let the flood fill the slots
	flood := p99(n)
	stop.Store(true)
	wg.Wait()

	b.ReportMetric(float64(quiet.Microseconds()), "p99-quiet-µs")
	b.ReportMetric(float64(flood.Microseconds()), "p99-flood-µs")
	b.ReportMetric(float64(flood)/float64(quiet), "flood/quiet")
}
