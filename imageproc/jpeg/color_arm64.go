package jpeg

// useVec selects the NEON colour conversion and upsampling kernels (every
// ARMv8-A core has NEON).
var useVec = true

// hasIDCTVec reports whether idctVec has a vector kernel here: not yet on
// arm64, where the IDCT is the portable one.
const hasIDCTVec = false

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

func idctVec(in *[64]int16, q *[64]int32, dst []uint8, stride int) bool { return false }
