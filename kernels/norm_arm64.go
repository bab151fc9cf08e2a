package kernels

//go:noescape
func sumSqRows4NEON(x *float32, stride int, n4 int, c *[4]float64, out *[16]float64)

//go:noescape
func sumRows4NEON(x *float32, stride int, n4 int, out *[16]float64)

//go:noescape
func layerScaleNEON(dst, x, w, b *float32, n4 int, mean, inv float64)

//go:noescape
func rmsScaleNEON(dst, x, w *float32, n4 int, inv float64)

// The kernels norm_vec.go drives.

func sumSqRows4V(x *float32, stride int, n4 int, c *[4]float64, out *[16]float64) {
	sumSqRows4NEON(x, stride, n4, c, out)
}

func sumRows4V(x *float32, stride int, n4 int, out *[16]float64) { sumRows4NEON(x, stride, n4, out) }

func rmsScaleV(dst, x, w *float32, n4 int, inv float64) { rmsScaleNEON(dst, x, w, n4, inv) }

func layerScaleV(dst, x, w, b *float32, n4 int, mean, inv float64) {
	layerScaleNEON(dst, x, w, b, n4, mean, inv)
}
