package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The worker pool runs the items of a parallel loop on a fixed set of
// goroutines, one per GOMAXPROCS slot: a product or an attention call splits
// into tens to thousands of tiles, and a goroutine per tile would cost more
// than small tiles compute. The calling goroutine works too, so a loop makes
// progress even when every pool goroutine is busy with another caller's loop.

// job is one parallel loop: items [0, n) handed out one at a time.
type job struct {
	n    int64
	next atomic.Int64
	fn   func(item int)
	wg   sync.WaitGroup
}

// run takes items until none are left.
func (j *job) run() {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.fn(int(i))
	}
}

var pool struct {
	once  sync.Once
	tasks chan *job
	size  int
}

func startPool() {
	pool.size = runtime.GOMAXPROCS(0)
	pool.tasks = make(chan *job, 64*pool.size)
	for i := 1; i < pool.size; i++ {
		go func() {
			for j := range pool.tasks {
				j.run()
				j.wg.Done()
			}
		}()
	}
}

// workers is the number of goroutines parallelFor spreads work over.
func workers() int {
	pool.once.Do(startPool)
	return pool.size
}

// parallelFor calls fn(i) for every i in [0, n), spread over the pool, and
// returns when all calls have returned. Items must be independent. fn must
// not call parallelFor itself (the pool goroutines would wait on each other).
func parallelFor(n int, fn func(item int)) {
	if n <= 0 {
		return
	}
	w := workers()
	if n == 1 || w == 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	j := &job{n: int64(n), fn: fn}
	helpers := min(w, n) - 1
	j.wg.Add(helpers)
	for i := 0; i < helpers; i++ {
		pool.tasks <- j
	}
	j.run()
	j.wg.Wait()
}

// scratch hands out reusable float32 buffers, so that a worker's panel
// buffers survive from one call to the next without living per goroutine.
var scratch sync.Pool

// getScratch returns a buffer of at least n floats; its contents are
// arbitrary. Return it with putScratch.
func getScratch(n int) *[]float32 {
	if p, ok := scratch.Get().(*[]float32); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	b := make([]float32, n)
	return &b
}

func putScratch(p *[]float32) { scratch.Put(p) }
