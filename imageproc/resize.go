package imageproc

// Pillow's BICUBIC resampling (libImaging/Resample.c) for 8-bit images,
// reproduced operation for operation so that the output is bit-identical:
// float64 filter weights normalized per output pixel, converted once to
// 22-bit fixed point, a horizontal pass into an 8-bit intermediate, then a
// vertical pass. The explicit float64() conversions below stop the compiler
// from fusing a multiply and an add into one FMA, which would round
// differently from the reference build.

const (
	precisionBits = 32 - 8 - 2 // Pillow: 8 bits of result, 2 of headroom
	bicubicA      = -0.5
	bicubicRadius = 2.0
)

// bicubic is the Keys cubic convolution kernel with a = -0.5.
func bicubic(x float64) float64 {
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return float64(float64(float64((bicubicA+2)*x)-(bicubicA+3))*x*x) + 1
	}
	if x < 2 {
		return float64(float64(float64(float64(x-5)*x)+8)*x-4) * bicubicA
	}
	return 0
}

// kernel holds the fixed-point weights of one resampling direction: output
// position i reads n[i] input samples starting at first[i], with weights
// w[i*size : i*size+n[i]].
type kernel struct {
	size  int
	first []int
	n     []int
	w     []int32
}

// newKernel computes Pillow's precompute_coeffs + normalize_coeffs_8bpc for
// resampling inSize samples to outSize over the whole input.
func newKernel(inSize, outSize int) *kernel {
	scale := float64(inSize) / float64(outSize)
	filterScale := max(scale, 1.0) // antialias: widen the kernel when shrinking
	support := bicubicRadius * filterScale
	size := int(ceilInt(support))*2 + 1
	k := &kernel{size: size, first: make([]int, outSize), n: make([]int, outSize), w: make([]int32, outSize*size)}
	tmp := make([]float64, size)
	ss := 1.0 / filterScale
	for i := 0; i < outSize; i++ {
		center := float64(float64(i)+0.5) * scale
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
		k.first[i], k.n[i] = xmin, n
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
// when neither does). Large images are processed on all cores.
func ResizeBicubic(src *Image, width, height int) *Image {
	needH := width != src.Width
	needV := height != src.Height
	if !needH && !needV {
		out := &Image{Width: src.Width, Height: src.Height, Pix: make([]uint8, len(src.Pix))}
		copy(out.Pix, src.Pix)
		return out
	}
	kv := newKernel(src.Height, height)
	cur := src
	if needH {
		// Only the source rows the vertical pass will read.
		first := kv.first[0]
		last := kv.first[height-1] + kv.n[height-1]
		kh := newKernel(src.Width, width)
		tmp := NewImage(width, last-first)
		parallelRows(tmp.Height, width*kh.size*3, func(lo, hi int) {
			resampleRows(tmp, src, first, kh, lo, hi)
		})
		for i := range kv.first {
			kv.first[i] -= first
		}
		cur = tmp
	}
	if !needV {
		return cur
	}
	out := NewImage(cur.Width, height)
	parallelRows(height, cur.Width*3*kv.size, func(lo, hi int) {
		resampleCols(out, cur, kv, lo, hi)
	})
	return out
}

// resampleRows runs the horizontal pass for output rows [lo, hi), reading
// source row y+offset for output row y.
func resampleRows(dst, src *Image, offset int, k *kernel, lo, hi int) {
	sw, dw := src.Width*3, dst.Width*3
	for y := lo; y < hi; y++ {
		srow := src.Pix[(y+offset)*sw : (y+offset+1)*sw]
		drow := dst.Pix[y*dw : (y+1)*dw]
		for x := 0; x < dst.Width; x++ {
			n := k.n[x]
			w := k.w[x*k.size : x*k.size+n]
			s := srow[3*k.first[x] : 3*(k.first[x]+n)]
			ss0, ss1, ss2 := int32(1<<(precisionBits-1)), int32(1<<(precisionBits-1)), int32(1<<(precisionBits-1))
			for i, c := range w {
				p := s[3*i : 3*i+3 : 3*i+3]
				ss0 += int32(p[0]) * c
				ss1 += int32(p[1]) * c
				ss2 += int32(p[2]) * c
			}
			d := drow[3*x : 3*x+3 : 3*x+3]
			d[0], d[1], d[2] = clip8(ss0), clip8(ss1), clip8(ss2)
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
			for i, v := range row {
				acc[i] += int32(v) * c
			}
		}
		drow := dst.Pix[y*rw : (y+1)*rw]
		drow = drow[:len(acc)]
		for i, a := range acc {
			drow[i] = clip8(a)
		}
	}
}
