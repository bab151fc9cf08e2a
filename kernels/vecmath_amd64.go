package kernels

import "math"

//go:noescape
func scaleMaxAVX2(x *float32, n8 int, s float32) float32

//go:noescape
func expSumAVX2(x *float32, n8 int, sub float32) float32

//go:noescape
func siluMulAVX2(dst, gate, up *float32, n8 int)

//go:noescape
func quickGELUAVX2(x *float32, n8 int)

//go:noescape
func geluTanhAVX2(x *float32, n8 int)

// The wrappers run the assembly over whole groups of eight and pass a tail
// through an eight-wide temporary, so every element sees the same
// arithmetic.

func scaleMaxVec(x []float32, s float32) float32 { return scaleMaxWith(scaleMaxAVX2, x, s) }

func expSumVec(x []float32, sub float32) float32 { return expSumWith(expSumAVX2, x, sub) }

// scaleMaxVec512 and expSumVec512 are the avx512 tier's: the same bits as
// scaleMaxVec and expSumVec, sixteen values per instruction.
func scaleMaxVec512(x []float32, s float32) float32 { return scaleMaxWith(scaleMaxAVX512, x, s) }

func expSumVec512(x []float32, sub float32) float32 { return expSumWith(expSumAVX512, x, sub) }

// scaleMaxAVX512 and expSumAVX512 are the row kernels on one row.
func scaleMaxAVX512(x *float32, n8 int, s float32) float32 {
	var m float32
	scaleMaxRowsAVX512(x, 0, 1, n8, s, &m)
	return m
}

func expSumAVX512(x *float32, n8 int, sub float32) float32 {
	var sum float32
	expSumRowsAVX512(x, 0, 1, n8, &sub, &sum)
	return sum
}

//go:noescape
func scaleMaxRowsAVX512(x *float32, ld, rows, n8 int, s float32, maxes *float32)

//go:noescape
func expSumRowsAVX512(x *float32, ld, rows, n8 int, subs, sums *float32)

// scaleMaxRows512 is scaleMaxVec512 on rows rows of n values (n a
// multiple of 8), ld apart, maxes[r] the maximum of row r.
func scaleMaxRows512(x []float32, ld, rows, n int, s float32, maxes []float32) {
	if rows <= 0 || n <= 0 {
		for r := 0; r < rows; r++ {
			maxes[r] = float32(math.Inf(-1))
		}
		return
	}
	if n%8 != 0 {
		panic("kernels: scaleMaxRows512 needs whole groups of 8")
	}
	_ = x[(rows-1)*ld+n-1]
	_ = maxes[rows-1]
	scaleMaxRowsAVX512(&x[0], ld, rows, n/8, s, &maxes[0])
}

// expSumRows512 is expSumVec512 on rows rows of n values (n a multiple of
// 8), ld apart, subs[r] subtracted in row r and sums[r] its sum.
func expSumRows512(x []float32, ld, rows, n int, subs, sums []float32) {
	if rows <= 0 || n <= 0 {
		clear(sums[:max(rows, 0)])
		return
	}
	if n%8 != 0 {
		panic("kernels: expSumRows512 needs whole groups of 8")
	}
	_ = x[(rows-1)*ld+n-1]
	_, _ = subs[rows-1], sums[rows-1]
	expSumRowsAVX512(&x[0], ld, rows, n/8, &subs[0], &sums[0])
}

func scaleMaxWith(kern func(x *float32, n8 int, s float32) float32, x []float32, s float32) float32 {
	n8 := len(x) / 8
	m := float32(math.Inf(-1))
	if n8 > 0 {
		m = kern(&x[0], n8, s)
	}
	for i := 8 * n8; i < len(x); i++ {
		x[i] *= s
		m = max(m, x[i])
	}
	return m
}

func expSumWith(kern func(x *float32, n8 int, sub float32) float32, x []float32, sub float32) float32 {
	n8 := len(x) / 8
	var sum float32
	if n8 > 0 {
		sum = kern(&x[0], n8, sub)
	}
	if tail := x[8*n8:]; len(tail) > 0 {
		var t [8]float32
		for i := range t {
			t[i] = float32(math.Inf(-1)) // exp(−Inf) = 0 adds nothing
		}
		copy(t[:], tail)
		sum += kern(&t[0], 1, sub)
		copy(tail, t[:])
	}
	return sum
}

func siluMulVec(dst, gate, up []float32) {
	n := len(dst)
	gate, up = gate[:n], up[:n]
	n8 := n / 8
	if n8 > 0 {
		siluMulAVX2(&dst[0], &gate[0], &up[0], n8)
	}
	if r := n - 8*n8; r > 0 {
		var d, g, u [8]float32
		copy(g[:], gate[8*n8:])
		copy(u[:], up[8*n8:])
		siluMulAVX2(&d[0], &g[0], &u[0], 1)
		copy(dst[8*n8:], d[:r])
	}
}

// inPlace8 runs an in-place kernel over 8-value vectors on x, the tail
// through a padded copy.
func inPlace8(kern func(x *float32, n8 int), x []float32) {
	n8 := len(x) / 8
	if n8 > 0 {
		kern(&x[0], n8)
	}
	if r := len(x) - 8*n8; r > 0 {
		var t [8]float32
		copy(t[:], x[8*n8:])
		kern(&t[0], 1)
		copy(x[8*n8:], t[:r])
	}
}

func quickGELUVec(x []float32) { inPlace8(quickGELUAVX2, x) }

func geluTanhVec(x []float32) { inPlace8(geluTanhAVX2, x) }

//go:noescape
func addAVX2(dst, a, b *float32, n int)

//go:noescape
func ropeAVX2(lo, hi, c, s *float32, n int)

func init() {
	if hasAVX2 {
		addVec = addVecAVX2
		ropeHeads = ropeHeadsAVX2
	}
}

// addVecAVX2 is addGo with the whole groups of eight in assembly; a sum
// of two float32 values is exact-rounded either way, so the bits agree.
func addVecAVX2(dst, a, b []float32) {
	n := len(dst)
	a, b = a[:n], b[:n]
	n8 := n &^ 7
	if n8 > 0 {
		addAVX2(&dst[0], &a[0], &b[0], n8)
	}
	for i := n8; i < n; i++ {
		dst[i] = a[i] + b[i]
	}
}

// ropeHeadsAVX2 is ropeHeadsGo with the rotation of whole groups of eight
// in assembly (the same products and sums, so the same bits).
func ropeHeadsAVX2(x []float32, nTok, nHead, headDim int, cos, sin []float32) {
	half := headDim / 2
	h8 := half &^ 7
	for t := 0; t < nTok; t++ {
		c, s := cos[t*half:(t+1)*half], sin[t*half:(t+1)*half]
		for h := 0; h < nHead; h++ {
			v := x[(t*nHead+h)*headDim : (t*nHead+h+1)*headDim]
			if h8 > 0 {
				_, _ = v[half+h8-1], s[h8-1]
				ropeAVX2(&v[0], &v[half], &c[0], &s[0], h8)
			}
			for d := h8; d < half; d++ {
				// Unfused, as RoPERef and the vector loop.
				a, b := v[d], v[d+half]
				v[d] = float32(a*c[d]) - float32(b*s[d])
				v[d+half] = float32(b*c[d]) + float32(a*s[d])
			}
		}
	}
}
