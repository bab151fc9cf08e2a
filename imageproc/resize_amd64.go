package imageproc

import "golang.org/x/sys/cpu"

// useVec selects the AVX2 kernels of the two resampling passes. They
// compute the same int32 sums as the portable loops (integer arithmetic is
// exact, so only the order of additions changes), which the tests check by
// running both.
var useVec = cpu.X86.HasAVX2 && cpu.X86.HasAVX

// vecHoriz reports whether the horizontal pass has a vector kernel here.
const vecHoriz = true

// The kernels resize_vec.go drives.
var (
	vertAccKern = vertAccAVX2
	splitKern   = splitAVX2
)

//go:noescape
func vertAccAVX2(acc *int32, src *uint8, n int, w int32)

//go:noescape
func splitAVX2(pr, pg, pb *int32, src *uint8, n int)

//go:noescape
func horizAVX2(dst *uint8, pr, pg, pb *int32, first *int32, w *int32, taps int, nout int)

// horiz computes one row of the horizontal pass into dst (3 bytes per
// output pixel) and reports whether it did. The planes must extend
// k.size entries past the last pixel any output reads.
func horiz(dst []uint8, r, g, b []int32, k *kernel) bool {
	nout := len(k.first32)
	if !useVec || nout == 0 || k.size%8 != 0 {
		return false
	}
	// The assembly reads through raw pointers; these checks keep every
	// access inside the slices.
	_ = r[k.span-1]
	_ = g[k.span-1]
	_ = b[k.span-1]
	_ = dst[3*nout-1]
	_ = k.w[nout*k.size-1]
	horizAVX2(&dst[0], &r[0], &g[0], &b[0], &k.first32[0], &k.w[0], k.size, nout)
	return true
}
