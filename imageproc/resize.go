package imageproc

// Pillow's BICUBIC resampling (libImaging/Resample.c) for 8-bit images,
// reproduced operation for operation so that the output is bit-identical:
// float64 filter weights normalized per output pixel, converted once to
// 22-bit fixed point, a horizontal pass into an 8-bit intermediate, then a
// vertical pass. The explicit float64() conversions below stop the compiler
// from fusing a multiply and an add into one FMA, which would round
// differently from the reference build.

import (
	"runtime"
	"sync"
)

const (
	precisionBits = 32 - 8 - 2 // Pillow: 8 bits of result, 2 of headroom
	bicubicA      = -0.5
	bicubicRadius = 2.0
)

// bicubic is the Keys cubic convolution kernel with a = -0.5.
// A product is converted before it is added to (float64(a*b) + c): that
// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
func bicubic(x float64) float64 {
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return float64(float64(float64((bicubicA+2)*x)-(bicubicA+3))*x*x) + 1
	}
	if x < 2 {
		return float64(float64(float64(float64(float64(x-5)*x)+8)*x)-4) * bicubicA
	}
	return 0
}

// kernel holds the fixed-point weights of one resampling direction: output
// position i reads n[i] input samples starting at first[i], with weights
// w[i*size : i*size+n[i]].
type kernel struct {
	size    int // row stride of w: Pillow's ksize rounded up to a multiple of 8
	first   []int
	first32 []int32 // first, for the assembly
	n       []int
	w       []int32 // zero past n[i] in each row
	span    int     // max(first[i]) + size: input length a full-stride read needs
}

// newKernel computes Pillow's precompute_coeffs + normalize_coeffs_8bpc for
// resampling inSize samples to outSize over the whole input.
func newKernel(inSize, outSize int) *kernel {
	scale := float64(inSize) / float64(outSize)
	filterScale := max(scale, 1.0) // antialias: widen the kernel when shrinking
	support := bicubicRadius * filterScale
	size := (int(ceilInt(support))*2 + 1 + 7) &^ 7
	k := &kernel{size: size, first: make([]int, outSize), first32: make([]int32, outSize), n: make([]int, outSize), w: make([]int32, outSize*size)}
	tmp := make([]float64, size)
	ss := 1.0 / filterScale
	for i := 0; i < outSize; i++ {
		center := float64(float64(float64(i)+0.5) * scale)
		xmin := int(center - support + 0.5)
		xmin = max(xmin, 0)
		xmax := min(int(center+support+0.5), inSize)
		n := max(xmax-xmin, 0)
		ww := 0.0
		for x := 0; x < n; x++ {
			v := bicubic(float64(float64(x+xmin)-center+0.5) * ss)
			tmp[x] = v
			ww += v
		}
		row := k.w[i*size : i*size+size]
		for x := 0; x < n; x++ {
			v := tmp[x]
			if ww != 0 {
				v /= ww
			}
			// Round half away from zero, then truncate: exactly Pillow's
			// (int)(v * 2^22 +/- 0.5), done once.
			if v < 0 {
				row[x] = int32(-0.5 + float64(v*(1<<precisionBits)))
			} else {
				row[x] = int32(0.5 + float64(v*(1<<precisionBits)))
			}
		}
		k.first[i], k.first32[i], k.n[i] = xmin, int32(xmin), n
		k.span = max(k.span, xmin+size)
	}
	return k
}

func ceilInt(v float64) int {
	i := int(v)
	if float64(i) < v {
		i++
	}
	return i
}

// clip8 is Pillow's clip8: the accumulator's integer part clamped to 0..255.
func clip8(acc int32) uint8 {
	v := acc >> precisionBits
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// ResizeBicubic resizes src to width x height with Pillow's
// Image.resize(size, Image.BICUBIC) semantics, bit for bit. Like Pillow it
// skips the pass of an axis whose size does not change (and copies the image
// when neither does). Large images are processed on all cores. Sizes that
// are not positive give a black image of the requested (non-negative) size.
func ResizeBicubic(src *Image, width, height int) *Image {
	if width <= 0 || height <= 0 || src.Width <= 0 || src.Height <= 0 {
		// Nothing to resample (Pillow refuses these sizes); an image of
		// the requested size, black, keeps callers from indexing past it.
		return NewImage(max(width, 0), max(height, 0))
	}
	needH := width != src.Width
	needV := height != src.Height
	if !needH && !needV {
		out := &Image{Width: src.Width, Height: src.Height, Pix: make([]uint8, len(src.Pix))}
		copy(out.Pix, src.Pix)
		return out
	}
	if !needH {
		return verticalPass(src, newKernel(src.Height, height))
	}
	r := newRowResizer(src.Width, src.Height, width, height)
	parallelRows(r.tmp.Height, width*r.kh.size*3, func(lo, hi int) {
		resampleRows(r.tmp, src, r.first, r.kh, lo, hi)
	})
	return r.finish()
}

// rowResizer is ResizeBicubic with a horizontal pass that takes source rows
// as they become available (while an image is still being decoded),
// followed by the vertical pass. It applies only when the width changes.
type rowResizer struct {
	sw, sh, height int
	kh, kv         *kernel
	// tmp holds the horizontally resampled source rows [first,
	// first+tmp.Height), the only ones the vertical pass reads.
	first int
	tmp   *Image
	// Row ranges are resampled on their own goroutines, at most slots at
	// a time, so that the pass uses whatever cores decoding leaves idle.
	wg    sync.WaitGroup
	slots chan struct{}
}

func newRowResizer(sw, sh, width, height int) *rowResizer {
	r := &rowResizer{sw: sw, sh: sh, height: height, kh: newKernel(sw, width),
		slots: make(chan struct{}, runtime.GOMAXPROCS(0))}
	if height != sh {
		r.kv = newKernel(sh, height)
		r.first = r.kv.first[0]
		last := r.kv.first[height-1] + r.kv.n[height-1]
		for i := range r.kv.first {
			r.kv.first[i] -= r.first
		}
		r.tmp = NewImage(width, last-r.first)
	} else {
		r.tmp = NewImage(width, sh)
	}
	return r
}

// rows runs the horizontal pass on source rows [y0, y1) of pix, a
// sw x sh RGB image of which at least those rows are final.
func (r *rowResizer) rows(pix []uint8, y0, y1 int) {
	lo, hi := max(y0, r.first), min(y1, r.first+r.tmp.Height)
	if lo >= hi {
		return
	}
	src := &Image{Width: r.sw, Height: r.sh, Pix: pix}
	// A large range (the whole image, when the decoder cannot hand rows
	// over early) is split so that every core gets a share.
	step := max((hi-lo+cap(r.slots)-1)/cap(r.slots), 16)
	for a := lo; a < hi; a += step {
		b := min(a+step, hi)
		r.slots <- struct{}{}
		r.wg.Add(1)
		go func() {
			defer func() { <-r.slots; r.wg.Done() }()
			resampleRows(r.tmp, src, r.first, r.kh, a-r.first, b-r.first)
		}()
	}
}

// wait returns when every row range handed to rows is resampled.
func (r *rowResizer) wait() { r.wg.Wait() }

// finish runs the vertical pass once every source row has been through
// rows.
func (r *rowResizer) finish() *Image {
	r.wait()
	if r.kv == nil {
		return r.tmp
	}
	return verticalPass(r.tmp, r.kv)
}

// verticalPass resamples src's columns with k, on all cores.
func verticalPass(src *Image, k *kernel) *Image {
	out := NewImage(src.Width, len(k.first))
	parallelRows(out.Height, src.Width*3*k.size, func(lo, hi int) {
		resampleCols(out, src, k, lo, hi)
	})
	return out
}

// resampleRows runs the horizontal pass for output rows [lo, hi), reading
// source row y+offset for output row y. Source rows are first split into
// int32 planes; the portable loop then works on two rows at a time, so that
// each weight is loaded once for six multiply-adds with no bounds checks.
func resampleRows(dst, src *Image, offset int, k *kernel, lo, hi int) {
	sw, dw := src.Width, dst.Width*3
	split := func(y int, r, g, b []int32) {
		srow := src.Pix[(y+offset)*sw*3 : (y+offset+1)*sw*3]
		for x := splitVec(srow, r, g, b); x < len(r); x++ {
			p := srow[3*x : 3*x+3 : 3*x+3]
			r[x], g[x], b[x] = int32(p[0]), int32(p[1]), int32(p[2])
		}
	}
	if useVec {
		// Planes padded to the kernel's full-stride reads (the padding
		// meets zero weights).
		pw := max(sw, k.span)
		planes := make([]int32, 3*pw)
		r, g, b := planes[:pw], planes[pw:2*pw], planes[2*pw:]
		for ; lo < hi; lo++ {
			split(lo, r[:sw], g[:sw], b[:sw])
			if !horiz(dst.Pix[lo*dw:(lo+1)*dw], r, g, b, k) {
				break
			}
		}
	}
	const half = int32(1 << (precisionBits - 1))
	planes := make([]int32, 6*sw)
	r0, g0, b0 := planes[:sw], planes[sw:2*sw], planes[2*sw:3*sw]
	r1, g1, b1 := planes[3*sw:4*sw], planes[4*sw:5*sw], planes[5*sw:]
	y := lo
	for ; y+1 < hi; y += 2 {
		split(y, r0, g0, b0)
		split(y+1, r1, g1, b1)
		d0 := dst.Pix[y*dw : (y+1)*dw]
		d1 := dst.Pix[(y+1)*dw : (y+2)*dw]
		for x := 0; x < dst.Width; x++ {
			first, n := k.first[x], k.n[x]
			w := k.w[x*k.size : x*k.size+n]
			ra, ga, ba := r0[first:first+n], g0[first:first+n], b0[first:first+n]
			rb, gb, bb := r1[first:first+n], g1[first:first+n], b1[first:first+n]
			ra, ga, ba, rb, gb, bb = ra[:len(w)], ga[:len(w)], ba[:len(w)], rb[:len(w)], gb[:len(w)], bb[:len(w)]
			s0, s1, s2, s3, s4, s5 := half, half, half, half, half, half
			for i, c := range w {
				s0 += ra[i] * c
				s1 += ga[i] * c
				s2 += ba[i] * c
				s3 += rb[i] * c
				s4 += gb[i] * c
				s5 += bb[i] * c
			}
			p := d0[3*x : 3*x+3 : 3*x+3]
			p[0], p[1], p[2] = clip8(s0), clip8(s1), clip8(s2)
			q := d1[3*x : 3*x+3 : 3*x+3]
			q[0], q[1], q[2] = clip8(s3), clip8(s4), clip8(s5)
		}
	}
	if y < hi { // odd row left over
		split(y, r0, g0, b0)
		d0 := dst.Pix[y*dw : (y+1)*dw]
		for x := 0; x < dst.Width; x++ {
			first, n := k.first[x], k.n[x]
			w := k.w[x*k.size : x*k.size+n]
			ra, ga, ba := r0[first:first+n], g0[first:first+n], b0[first:first+n]
			ra, ga, ba = ra[:len(w)], ga[:len(w)], ba[:len(w)]
			s0, s1, s2 := half, half, half
			for i, c := range w {
				s0 += ra[i] * c
				s1 += ga[i] * c
				s2 += ba[i] * c
			}
			p := d0[3*x : 3*x+3 : 3*x+3]
			p[0], p[1], p[2] = clip8(s0), clip8(s1), clip8(s2)
		}
	}
}

// resampleCols runs the vertical pass for output rows [lo, hi). Each output
// row is a weighted sum of whole input rows, so the inner loop streams
// through memory with one weight.
func resampleCols(dst, src *Image, k *kernel, lo, hi int) {
	rw := src.Width * 3
	acc := make([]int32, rw)
	for y := lo; y < hi; y++ {
		for i := range acc {
			acc[i] = 1 << (precisionBits - 1)
		}
		first, n := k.first[y], k.n[y]
		for t, c := range k.w[y*k.size : y*k.size+n] {
			row := src.Pix[(first+t)*rw : (first+t+1)*rw]
			row = row[:len(acc)]
			done := vertAcc(acc, row, c)
			tail := acc[done:]
			for i, v := range row[done:] {
				tail[i] += int32(v) * c
			}
		}
		drow := dst.Pix[y*rw : (y+1)*rw]
		drow = drow[:len(acc)]
		for i, a := range acc {
			drow[i] = clip8(a)
		}
	}
}
