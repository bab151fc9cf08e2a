package kernels

import "math"

//go:noescape
func sumSqRows4AVX2(x *float32, stride int, n4 int, out *[16]float64)

//go:noescape
func rmsScaleAVX2(dst, x, w *float32, n4 int, inv float64)

func init() {
	if hasAVX2 {
		rmsRows = rmsNormRowsAVX2
	}
}

// rmsNormRowsAVX2 is rmsNormRows with its sums of squares four rows at a
// time and its scaling in assembly (norm_amd64.s): the same float64 and
// float32 operations in the same order, so the same bits.
func rmsNormRowsAVX2(dst, x, w []float32, dim int, eps float32) {
	if dim <= 0 {
		return
	}
	w = w[:dim]
	rows := len(x) / dim
	n4 := dim / 4
	var s [16]float64
	for r := 0; r < rows; r += 4 {
		g := min(4, rows-r)
		if n4 > 0 && g == 4 {
			_ = x[(r+4)*dim-1]
			sumSqRows4AVX2(&x[r*dim], 4*dim, n4, &s)
		}
		for j := 0; j < g; j++ {
			xr, dr := x[(r+j)*dim:(r+j+1)*dim], dst[(r+j)*dim:(r+j+1)*dim]
			var ss float64
			if g == 4 {
				s0, s1, s2, s3 := s[4*j], s[4*j+1], s[4*j+2], s[4*j+3]
				for _, v := range xr[4*n4:] {
					d := float64(v)
					s0 += d * d
				}
				ss = (s0 + s1) + (s2 + s3)
			} else {
				ss = sumSq4(xr, 0)
			}
			inv := 1 / math.Sqrt(ss/float64(dim)+float64(eps))
			if n4 > 0 {
				rmsScaleAVX2(&dr[0], &xr[0], &w[0], n4, inv)
			}
			for i := 4 * n4; i < dim; i++ {
				dr[i] = float32(float64(xr[i])*inv) * w[i]
			}
		}
	}
}
