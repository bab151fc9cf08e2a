//go:build amd64 || arm64

package kernels

import "unsafe"

// sideKernels are an architecture's loops that copy a packed matrix's
// per-block factors and aux into the kernels' layout (vnniPacked.side):
// n runs of 16 values (32 for widen32) from src, consecutive, to dst,
// dstStride bytes apart. ok reports whether the CPU runs them.
type sideKernels struct {
	ok      bool
	copy64  func(dst *byte, dstStride int, src *byte, n int)
	widen32 func(dst *int32, dstStride int, src *int16, n int)
	halves  func(dst *float32, dstStride int, src *uint16, n int)
	starts  func(dst *int32, dstStride int, src *int16, n int)
}

// copySide32 copies n runs of 16 four-byte values from src, consecutive,
// to dst, stride values apart (at least 16).
func copySide32[T float32 | int32](dst []T, stride int, src []T, n int) {
	if n <= 0 {
		return
	}
	_, _ = dst[(n-1)*stride+vnniNR-1], src[n*vnniNR-1]
	if !sideAsm.ok {
		copySide32Go(dst, stride, src, n)
		return
	}
	sideAsm.copy64((*byte)(unsafe.Pointer(&dst[0])), 4*stride, (*byte)(unsafe.Pointer(&src[0])), n)
}

// widenSide sign-extends n runs of 2·16 int16 from src, consecutive, to
// int32 at dst, stride values apart (at least 32).
func widenSide(dst []int32, stride int, src []int16, n int) {
	if n <= 0 {
		return
	}
	_, _ = dst[(n-1)*stride+2*vnniNR-1], src[n*2*vnniNR-1]
	if !sideAsm.ok {
		widenSideGo(dst, stride, src, n)
		return
	}
	sideAsm.widen32(&dst[0], 4*stride, &src[0], n)
}

// halvesSide converts n runs of 16 binary16 values from src, consecutive,
// to float32 at dst, stride values apart (at least 16).
func halvesSide(dst []float32, stride int, src []uint16, n int) {
	if n <= 0 {
		return
	}
	_, _ = dst[(n-1)*stride+vnniNR-1], src[n*vnniNR-1]
	if !sideAsm.ok {
		halvesSideGo(dst, stride, src, n)
		return
	}
	sideAsm.halves(&dst[0], 4*stride, &src[0], n)
}

// startsSide writes n runs of 16 starts q·128 from the quotients q at
// src, consecutive, to dst, stride values apart (at least 16).
func startsSide(dst []int32, stride int, src []int16, n int) {
	if n <= 0 {
		return
	}
	_, _ = dst[(n-1)*stride+vnniNR-1], src[n*vnniNR-1]
	if !sideAsm.ok {
		startsSideGo(dst, stride, src, n)
		return
	}
	sideAsm.starts(&dst[0], 4*stride, &src[0], n)
}
