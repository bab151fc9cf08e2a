package kernels

import "unsafe"

//go:noescape
func copy64StridedAVX2(dst *byte, dstStride int, src *byte, n int)

//go:noescape
func widen32StridedAVX2(dst *int32, dstStride int, src *int16, n int)

// copySide32 copies n runs of 16 four-byte values from src, consecutive,
// to dst, stride values apart (at least 16).
func copySide32[T float32 | int32](dst []T, stride int, src []T, n int) {
	if n <= 0 {
		return
	}
	_, _ = dst[(n-1)*stride+vnniNR-1], src[n*vnniNR-1]
	if !hasAVX2 {
		copySide32Go(dst, stride, src, n)
		return
	}
	copy64StridedAVX2((*byte)(unsafe.Pointer(&dst[0])), 4*stride, (*byte)(unsafe.Pointer(&src[0])), n)
}

// widenSide sign-extends n runs of 2·16 int16 from src, consecutive, to
// int32 at dst, stride values apart (at least 32).
func widenSide(dst []int32, stride int, src []int16, n int) {
	if n <= 0 {
		return
	}
	_, _ = dst[(n-1)*stride+2*vnniNR-1], src[n*2*vnniNR-1]
	if !hasAVX2 {
		widenSideGo(dst, stride, src, n)
		return
	}
	widen32StridedAVX2(&dst[0], 4*stride, &src[0], n)
}

//go:noescape
func halvesStridedAVX2(dst *float32, dstStride int, src *uint16, n int)

//go:noescape
func startsStridedAVX2(dst *int32, dstStride int, src *int16, n int)

// halvesSide converts n runs of 16 binary16 values from src, consecutive,
// to float32 at dst, stride values apart (at least 16).
func halvesSide(dst []float32, stride int, src []uint16, n int) {
	if n <= 0 {
		return
	}
	_, _ = dst[(n-1)*stride+vnniNR-1], src[n*vnniNR-1]
	if !hasAVX2 {
		halvesSideGo(dst, stride, src, n)
		return
	}
	halvesStridedAVX2(&dst[0], 4*stride, &src[0], n)
}

// startsSide writes n runs of 16 starts q·128 from the quotients q at
// src, consecutive, to dst, stride values apart (at least 16).
func startsSide(dst []int32, stride int, src []int16, n int) {
	if n <= 0 {
		return
	}
	_, _ = dst[(n-1)*stride+vnniNR-1], src[n*vnniNR-1]
	if !hasAVX2 {
		startsSideGo(dst, stride, src, n)
		return
	}
	startsStridedAVX2(&dst[0], 4*stride, &src[0], n)
}
