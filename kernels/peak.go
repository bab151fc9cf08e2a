package kernels

import (
	"runtime"
	"sync"
	"time"
)

// FMAPeak measures the float32 FMA throughput of this machine with the
// widest FMA the active build can run, on threads goroutines at once, for
// about d. It returns GFLOPS summed over the threads and false when no
// assembly probe exists for this CPU. The probe keeps twelve independent
// FMA chains in registers, so it measures the arithmetic units alone: a
// GEMM's efficiency is its GFLOPS over this figure for the same threads.
func FMAPeak(threads int, d time.Duration) (float64, bool) {
	loop, flopsPerIter := fmaProbe()
	if loop == nil || threads < 1 {
		return 0, false
	}
	const chunk = 1 << 14
	var wg sync.WaitGroup
	iters := make([]int, threads)
	start := time.Now()
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for time.Since(start) < d {
				loop(chunk)
				iters[t] += chunk
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	total := 0
	for _, n := range iters {
		total += n
	}
	return float64(total) * flopsPerIter / el / 1e9, true
}
