package jpeg

// useVec selects the NEON colour conversion, upsampling and IDCT kernels
// (every ARMv8-A core has NEON).
var useVec = true

//go:noescape
func yccNEON(out *uint8, y, cb, cr *uint8, n int)

//go:noescape
func h2v2FancyNEON(out *uint8, near, far *uint8, n int)

//go:noescape
func h2FancyNEON(out *uint8, in *uint8, n int)

// The kernels color_vec.go drives.
var (
	yccKern       = yccNEON
	h2v2FancyKern = h2v2FancyNEON
	h2FancyKern   = h2FancyNEON
)

//go:noescape
func idctIslowNEON(in *[64]int16, q *[64]int32, dst *uint8, stride int) bool

// idctVec runs the NEON IDCT and reports whether it did; it declines
// blocks whose values could overflow its 32-bit lanes.
func idctVec(in *[64]int16, q *[64]int32, dst []uint8, stride int) bool {
	if !useVec {
		return false
	}
	_ = dst[7*stride+7]
	return idctIslowNEON(in, q, &dst[0], stride)
}
