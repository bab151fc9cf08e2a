package imageproc

// useVec selects the NEON loops of the resampling passes (every ARMv8-A
// core has NEON); the tests run them and the portable loops.
var useVec = true

//go:noescape
func vertAccNEON(acc *int32, src *uint8, n int, w int32)

//go:noescape
func splitNEON(pr, pg, pb *int32, src *uint8, n int)

//go:noescape
func horizNEON(dst *uint8, pr, pg, pb *int32, first *int32, w *int32, taps int, nout int)

// The kernels resize_vec.go drives.
var (
	vertAccKern = vertAccNEON
	splitKern   = splitNEON
	horizKern   = horizNEON
)
