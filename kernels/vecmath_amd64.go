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

func siluMulVec(dst, gate, up []float32) { siluMulWith(siluMulAVX2, dst, gate, up) }

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

// hasVecLoops reports whether the vector loops of vecmath_simd.go and
// norm_vec.go run here: they need AVX2 and FMA.
var hasVecLoops = hasAVX2

func addVecAVX2(dst, a, b []float32) { addVecWith(addAVX2, dst, a, b) }

func ropeHeadsAVX2(x []float32, nTok, nHead, headDim int, cos, sin []float32) {
	ropeHeadsWith(ropeAVX2, x, nTok, nHead, headDim, cos, sin)
}
