package kernels

//go:noescape
func copy64StridedNEON(dst *byte, dstStride int, src *byte, n int)

//go:noescape
func widen32StridedNEON(dst *int32, dstStride int, src *int16, n int)

//go:noescape
func halvesStridedNEON(dst *float32, dstStride int, src *uint16, n int)

//go:noescape
func startsStridedNEON(dst *int32, dstStride int, src *int16, n int)

// sideAsm are the side copies of packed matrices on NEON.
var sideAsm = sideKernels{hasNEON, copy64StridedNEON, widen32StridedNEON, halvesStridedNEON, startsStridedNEON}
