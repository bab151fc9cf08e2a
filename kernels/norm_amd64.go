package kernels

//go:noescape
func sumSqRows4AVX2(x *float32, stride int, n4 int, c *[4]float64, out *[16]float64)

//go:noescape
func sumRows4AVX2(x *float32, stride int, n4 int, out *[16]float64)

//go:noescape
func layerScaleAVX2(dst, x, w, b *float32, n4 int, mean, inv float64)

//go:noescape
func rmsScaleAVX2(dst, x, w *float32, n4 int, inv float64)

func init() {
	if hasAVX2 {
		rmsRows = rmsNormRowsVec
		layerRows = layerNormRowsVec
	}
}

// The kernels norm_vec.go drives.

func sumSqRows4V(x *float32, stride int, n4 int, c *[4]float64, out *[16]float64) {
	sumSqRows4AVX2(x, stride, n4, c, out)
}

func sumRows4V(x *float32, stride int, n4 int, out *[16]float64) { sumRows4AVX2(x, stride, n4, out) }

func rmsScaleV(dst, x, w *float32, n4 int, inv float64) { rmsScaleAVX2(dst, x, w, n4, inv) }

func layerScaleV(dst, x, w, b *float32, n4 int, mean, inv float64) {
	layerScaleAVX2(dst, x, w, b, n4, mean, inv)
}
