package imageproc

import "golang.org/x/sys/cpu"

// useVec selects the AVX2 kernels of the two resampling passes. They
// compute the same int32 sums as the portable loops (integer arithmetic is
// exact, so only the order of additions changes), which the tests check by
// running both.
var useVec = cpu.X86.HasAVX2 && cpu.X86.HasAVX

// The kernels resize_vec.go drives.
var (
	vertAccKern = vertAccAVX2
	splitKern   = splitAVX2
	horizKern   = horizAVX2
)

//go:noescape
func vertAccAVX2(acc *int32, src *uint8, n int, w int32)

//go:noescape
func splitAVX2(pr, pg, pb *int32, src *uint8, n int)

//go:noescape
func horizAVX2(dst *uint8, pr, pg, pb *int32, first *int32, w *int32, taps int, nout int)
