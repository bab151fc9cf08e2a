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
	return runProbe(loop, flopsPerIter, threads, d)
}

// VNNIPeak measures the VPDPBUSD throughput of this machine in integer
// operations (two per byte product) on the widest registers the CPU runs
// it on (zmm with AVX-512 VNNI, else ymm with AVX-VNNI), as FMAPeak does
// for FMA: GOPS summed over threads, false when the CPU has no VNNI. It is
// the peak of the VNNI tiers' integer products.
func VNNIPeak(threads int, d time.Duration) (float64, bool) {
	loop, opsPerIter := vnniProbe()
	return runProbe(loop, opsPerIter, threads, d)
}

// runProbe runs loop on threads locked goroutines for about d and returns
// the rate in billions of operations per second.
func runProbe(loop func(n int), opsPerIter float64, threads int, d time.Duration) (float64, bool) {
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
	return float64(total) * opsPerIter / el / 1e9, true
}
