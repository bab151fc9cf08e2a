package imageproc

// useVec selects the NEON widening loops of the resampling passes (every
// ARMv8-A core has NEON); the tests run them and the portable loops. The
// horizontal pass has no NEON kernel yet: it takes the portable loop.
var useVec = true

const vecHoriz = false

//go:noescape
func vertAccNEON(acc *int32, src *uint8, n int, w int32)

//go:noescape
func splitNEON(pr, pg, pb *int32, src *uint8, n int)

// The kernels resize_vec.go drives.
var (
	vertAccKern = vertAccNEON
	splitKern   = splitNEON
)

func horiz(dst []uint8, r, g, b []int32, k *kernel) bool { return false }
