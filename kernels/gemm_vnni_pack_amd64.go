package kernels

//go:noescape
func copy64StridedAVX2(dst *byte, dstStride int, src *byte, n int)

//go:noescape
func widen32StridedAVX2(dst *int32, dstStride int, src *int16, n int)

//go:noescape
func halvesStridedAVX2(dst *float32, dstStride int, src *uint16, n int)

//go:noescape
func startsStridedAVX2(dst *int32, dstStride int, src *int16, n int)

// sideAsm are the side copies of packed matrices in AVX2 (with F16C for
// the binary16 factors, which hasAVX2 includes).
var sideAsm = sideKernels{hasAVX2, copy64StridedAVX2, widen32StridedAVX2, halvesStridedAVX2, startsStridedAVX2}
