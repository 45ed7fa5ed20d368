// Package heap measures how far the Go heap grows while a function runs, so
// tests can hold code that reads hostile input to a memory bound.
package heap

import (
	"runtime"
	"sync"
	"time"
)

// Peak runs f and returns the largest growth of the live heap over its
// level before f, sampled every 2 ms (garbage not yet collected counts, so
// the figure is an upper bound of what f keeps).
func Peak(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base {
				peak = max(peak, m.HeapAlloc-base)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak
}
