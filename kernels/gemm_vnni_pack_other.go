//go:build !amd64 && !arm64

package kernels

// copySide32 copies n runs of 16 four-byte values from src, consecutive,
// to dst, stride values apart (at least 16).
func copySide32[T float32 | int32](dst []T, stride int, src []T, n int) {
	copySide32Go(dst, stride, src, n)
}

// widenSide sign-extends n runs of 2·16 int16 from src, consecutive, to
// int32 at dst, stride values apart (at least 32).
func widenSide(dst []int32, stride int, src []int16, n int) { widenSideGo(dst, stride, src, n) }

// halvesSide converts n runs of 16 binary16 values from src, consecutive,
// to float32 at dst, stride values apart (at least 16).
func halvesSide(dst []float32, stride int, src []uint16, n int) { halvesSideGo(dst, stride, src, n) }

// startsSide writes n runs of 16 starts q·128 from the quotients q at
// src, consecutive, to dst, stride values apart (at least 16).
func startsSide(dst []int32, stride int, src []int16, n int) { startsSideGo(dst, stride, src, n) }
