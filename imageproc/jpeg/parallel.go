package jpeg

import (
	"runtime"
	"sync"
)

// Entropy decoding is serial (each block's position in the bit stream is
// known only after the previous one is decoded), but the IDCT, upsampling
// and colour conversion are not. For large single-scan files the decoding
// goroutine therefore hands bands of MCU rows, as coefficients, to workers
// that transform them into the component planes while it decodes on; the
// colour conversion then runs over row ranges on all workers. Every output
// sample is computed by the same integer code as on the serial path, so the
// result does not depend on the number of workers.

// parallelMinPixels is the image size from which decoding uses more than
// one goroutine; below it a hand-off costs more than it saves. A variable
// so that tests can send small images through the parallel path.
var parallelMinPixels = 1 << 18

// bandMCURows is the number of MCU rows in one band handed to a worker:
// large enough to amortise the hand-off, small enough that the workers
// start early and the coefficient ring stays a few hundred kilobytes.
var bandMCURows = 4

// workerCount is how many goroutines may transform an image of the given
// size.
func workerCount(pixels int) int {
	if pixels < parallelMinPixels {
		return 1
	}
	return max(runtime.GOMAXPROCS(0), 1)
}

// parallelRange calls fn on disjoint ranges [lo, hi) covering [0, n), on up
// to workers goroutines, and returns when all are done.
func parallelRange(n, workers int, fn func(lo, hi int)) {
	workers = min(workers, n)
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += step {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, min(lo+step, n))
		}()
	}
	wg.Wait()
}

// bandPipe carries coefficient bands of a single-scan frame from the
// entropy decoder to the IDCT workers. Band b lives in ring slot b%slots;
// the decoder waits for that slot to be released before reusing it, so the
// ring bounds memory whatever the image height.
type bandPipe struct {
	d     *decoder
	rows  int // MCU rows per band
	slots int
	free  []chan struct{} // one token per slot while it may be written
	jobs  chan int        // bands ready for the IDCT
	done  chan int        // bands transformed, for the colour conversion
	wg    sync.WaitGroup
	fin   sync.WaitGroup
	bands int // in the scan
	// per component of the scan: block rows per MCU row and the blocks
	// coded per row and column (the MCU grid for an interleaved scan,
	// the component's own for a non-interleaved one)
	vrows, nbx, nby [4]int
}

// startPipe sets up the ring and the workers for scan s, or returns nil
// when the frame is decoded on the calling goroutine.
func (d *decoder) startPipe(s *scanHeader) *bandPipe {
	if d.workers <= 1 {
		return nil
	}
	p := &bandPipe{d: d, rows: bandMCURows, slots: 2*d.workers + 1}
	p.jobs = make(chan int, p.slots)
	p.done = make(chan int, p.slots)
	ny := d.mcusY
	if len(s.comps) == 1 {
		ny = s.comps[0].compInfo.nbh
	}
	p.bands = (ny + p.rows - 1) / p.rows
	p.free = make([]chan struct{}, p.slots)
	for i := range p.free {
		p.free[i] = make(chan struct{}, 1)
		p.free[i] <- struct{}{}
	}
	for i := range s.comps {
		c := s.comps[i].compInfo
		ci := s.comps[i].ci
		if len(s.comps) == 1 {
			p.vrows[ci], p.nbx[ci], p.nby[ci] = 1, c.nbw, c.nbh
		} else {
			p.vrows[ci], p.nbx[ci], p.nby[ci] = c.v, c.bw, c.bh
		}
		// A ring taller than the component holds it whole, without
		// wrapping: no more than two bytes per sample, however wide.
		c.ringRows = min(p.slots*p.rows*p.vrows[ci], p.nby[ci])
		c.ring = make([]int16, c.ringRows*c.bw*64)
		c.ringNZ = make([]uint64, c.ringRows*c.bw)
	}
	for range d.workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for b := range p.jobs {
				p.transform(b)
				p.free[b%p.slots] <- struct{}{}
				p.done <- b
			}
		}()
	}
	p.fin.Add(1)
	go p.convert()
	return p
}

// convert turns rows into RGB as soon as the bands they need are
// transformed, in order, and hands them to the decoder's onRows.
func (p *bandPipe) convert() {
	defer p.fin.Done()
	d := p.d
	finished := make([]bool, p.bands)
	k := 0 // bands 0..k-1 are transformed
	for b := range p.done {
		finished[b] = true
		for k < p.bands && finished[k] {
			k++
		}
		lo, hi := d.converted, p.readyRows(k)
		if hi > lo {
			d.convertRows(d.img, lo, hi)
			d.converted = hi
			if d.onRows != nil {
				d.onRows(d.img.Pix, lo, hi)
			}
		}
	}
}

// readyRows is how many leading output rows can be converted once the
// first k bands are transformed: output row y of a component expanded
// vexp times vertically reads its plane row y/vexp and, with fancy
// upsampling, the next one (clamped to the last real row).
func (p *bandPipe) readyRows(k int) int {
	d := p.d
	if k == p.bands {
		return d.height
	}
	y := d.height
	for ci := range d.comps {
		c := &d.comps[ci]
		if c.ring == nil {
			continue
		}
		have := min(k*p.rows*p.vrows[ci]*8, c.dh)
		if have == c.dh {
			continue
		}
		y = min(y, (have-1)*(d.vmax/c.v))
	}
	return max(y, 0)
}

// beginRow is called before MCU row my is decoded; at the start of a
// band it waits until the band's ring slot is free.
func (p *bandPipe) beginRow(my int) {
	if my%p.rows == 0 {
		<-p.free[(my/p.rows)%p.slots]
	}
}

// endRow is called after MCU row my of ny is decoded; at the end of a
// band it hands the band to the workers.
func (p *bandPipe) endRow(my, ny int) {
	if my%p.rows == p.rows-1 || my == ny-1 {
		p.jobs <- my / p.rows
	}
}

// stop waits for the workers to transform every band handed over and for
// the rows those allow to be converted, and releases the ring.
func (p *bandPipe) stop() {
	close(p.jobs)
	p.wg.Wait()
	close(p.done)
	p.fin.Wait()
	for i := range p.d.comps {
		c := &p.d.comps[i]
		c.ring, c.ringNZ = nil, nil
	}
}

// transform runs the IDCT on every block of band b into the planes and
// clears the blocks for reuse.
func (p *bandPipe) transform(b int) {
	for ci := range p.d.comps {
		c := &p.d.comps[ci]
		if c.ring == nil {
			continue
		}
		stride := c.bw * 8
		lo := b * p.rows * p.vrows[ci]
		hi := min(lo+p.rows*p.vrows[ci], p.nby[ci])
		for by := lo; by < hi; by++ {
			r := (by % c.ringRows) * c.bw
			dst := c.plane[by*8*stride:]
			for bx := 0; bx < p.nbx[ci]; bx++ {
				blk := (*[64]int16)(c.ring[(r+bx)*64:])
				idctMasked(blk, c.ringNZ[r+bx], &c.q, dst[bx*8:], stride)
				*blk = [64]int16{} // ready for the slot's next band
			}
		}
	}
}
