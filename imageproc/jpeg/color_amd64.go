package jpeg

import "golang.org/x/sys/cpu"

// useVec selects the AVX2 colour conversion, upsampling and IDCT kernels.
// They evaluate the same integer expressions as the portable loops, so
// their output is identical; the tests run both.
var useVec = cpu.X86.HasAVX2 && cpu.X86.HasAVX

//go:noescape
func yccAVX2(out *uint8, y, cb, cr *uint8, n int)

//go:noescape
func h2v2FancyAVX2(out *uint8, near, far *uint8, n int)

//go:noescape
func h2FancyAVX2(out *uint8, in *uint8, n int)

// The kernels color_vec.go drives.
var (
	yccKern       = yccAVX2
	h2v2FancyKern = h2v2FancyAVX2
	h2FancyKern   = h2FancyAVX2
)

//go:noescape
func idctIslowAVX2(in *[64]int16, q *[64]int32, dst *uint8, stride int) bool

// idctVec runs the vector IDCT and reports whether it did; it declines
// blocks whose values could overflow its 32-bit lanes.
func idctVec(in *[64]int16, q *[64]int32, dst []uint8, stride int) bool {
	if !useVec {
		return false
	}
	_ = dst[7*stride+7]
	return idctIslowAVX2(in, q, &dst[0], stride)
}
