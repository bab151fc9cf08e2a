//go:build amd64 || arm64

package kernels

import "unsafe"

// packer wraps an assembly panel packer for values of size bytes with the
// bounds checks that keep it inside its slices.
func packer(f func(src *byte, stride int, n8 int, dst *float32), size int) pack8Func {
	return func(src []byte, stride int, n8 int, dst []float32) {
		if n8 == 0 {
			return
		}
		_ = src[7*stride+n8*8*size-1]
		_ = dst[(n8*8-1)*gemmNR+7]
		f(&src[0], stride, n8, &dst[0])
	}
}

// transpose8With packs eight float32 rows, stride floats apart, into
// columns 0..7 of n8·8 rows of a gemmNR-wide panel with f, a float32
// panel packer (pack8F32, pack8F32NEON).
func transpose8With(f func(src *byte, stride int, n8 int, dst *float32), src []float32, stride, n8 int, dst []float32) {
	if n8 == 0 {
		return
	}
	_ = src[7*stride+n8*8-1]
	_ = dst[(n8*8-1)*gemmNR+7]
	f((*byte)(unsafe.Pointer(&src[0])), 4*stride, n8, &dst[0])
}
