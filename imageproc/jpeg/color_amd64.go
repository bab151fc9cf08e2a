package jpeg

import "golang.org/x/sys/cpu"

// useAVX2 selects the AVX2 colour conversion and upsampling kernels. They
// evaluate the same integer expressions as the portable loops, so their
// output is identical; the tests run both.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasAVX

//go:noescape
func yccAVX2(out *uint8, y, cb, cr *uint8, n int)

//go:noescape
func h2v2FancyAVX2(out *uint8, near, far *uint8, n int)

//go:noescape
func h2FancyAVX2(out *uint8, in *uint8, n int)

// yccVec converts the leading pixels of a row that the vector kernel
// handles (a multiple of 16) and returns how many it did.
func yccVec(out, y, cb, cr []uint8) int {
	n := len(y) &^ 15
	if !useAVX2 || n == 0 {
		return 0
	}
	// Bounds the raw-pointer accesses of the assembly.
	_, _, _ = out[3*n-1], cb[n-1], cr[n-1]
	yccAVX2(&out[0], &y[0], &cb[0], &cr[0], n)
	return n
}

// h2v2FancyVec computes the outputs of h2v2FancyRow for interior inputs
// 1..m (m a multiple of 16, m <= len(near)-2) and returns m.
func h2v2FancyVec(out, near, far []uint8) int {
	m := (len(near) - 2) &^ 15
	if !useAVX2 || m <= 0 {
		return 0
	}
	_, _ = out[2*m+1], far[m+1]
	h2v2FancyAVX2(&out[2], &near[1], &far[1], m)
	return m
}

// h2FancyVec computes the outputs of h2FancyRow for interior inputs 1..m
// (m a multiple of 16, m <= len(in)-2) and returns m.
func h2FancyVec(out, in []uint8) int {
	m := (len(in) - 2) &^ 15
	if !useAVX2 || m <= 0 {
		return 0
	}
	_ = out[2*m+1]
	h2FancyAVX2(&out[2], &in[1], m)
	return m
}

//go:noescape
func idctIslowAVX2(in *[64]int16, q *[64]int32, dst *uint8, stride int) bool

// idctVec runs the vector IDCT and reports whether it did; it declines
// blocks whose values could overflow its 32-bit lanes.
func idctVec(in *[64]int16, q *[64]int32, dst []uint8, stride int) bool {
	if !useAVX2 {
		return false
	}
	_ = dst[7*stride+7]
	return idctIslowAVX2(in, q, &dst[0], stride)
}
