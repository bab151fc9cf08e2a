package imageproc

import (
	"runtime"
	"sync"
)

// parallelRows calls fn on disjoint ranges [lo, hi) covering [0, n), on up
// to GOMAXPROCS goroutines. work is the approximate cost of one row (in
// multiply-adds or bytes); small jobs run on the calling goroutine because
// starting goroutines would cost more than it saves.
func parallelRows(n int, work int, fn func(lo, hi int)) {
	const minWork = 1 << 16 // below this a goroutine hand-off is not worth it
	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}
	if workers <= 1 || n*work < 2*minWork {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += step {
		hi := min(lo+step, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}
