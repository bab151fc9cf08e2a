//go:build amd64 || arm64

package kernels

import "math"

// rmsNormRowsVec is rmsNormRows with its sums of squares four rows at a
// time and its scaling in assembly (norm_amd64.s, norm_arm64.s): the same
// float64 and float32 operations in the same order, every product rounded
// before it is added (the conversions forbid fusing them), so the same
// bits on every architecture.
func rmsNormRowsVec(dst, x, w []float32, dim int, eps float32) {
	if dim <= 0 {
		return
	}
	w = w[:dim]
	rows := len(x) / dim
	n4 := dim / 4
	var s [16]float64
	var zero [4]float64
	for r := 0; r < rows; r += 4 {
		g := min(4, rows-r)
		if n4 > 0 && g == 4 {
			_ = x[(r+4)*dim-1]
			sumSqRows4V(&x[r*dim], 4*dim, n4, &zero, &s)
		}
		for j := 0; j < g; j++ {
			xr, dr := x[(r+j)*dim:(r+j+1)*dim], dst[(r+j)*dim:(r+j+1)*dim]
			var ss float64
			if g == 4 {
				s0, s1, s2, s3 := s[4*j], s[4*j+1], s[4*j+2], s[4*j+3]
				for _, v := range xr[4*n4:] {
					d := float64(v)
					s0 += float64(d * d)
				}
				ss = (s0 + s1) + (s2 + s3)
			} else {
				ss = sumSq4(xr, 0)
			}
			inv := 1 / math.Sqrt(ss/float64(dim)+float64(eps))
			if n4 > 0 {
				rmsScaleV(&dr[0], &xr[0], &w[0], n4, inv)
			}
			for i := 4 * n4; i < dim; i++ {
				dr[i] = float32(float64(xr[i])*inv) * w[i]
			}
		}
	}
}

// lanes4 finishes a sum4/sumSq4 of row xr from the four lane sums l that
// the assembly left for its first 4·n4 values: the tail into lane 0, then
// the lanes paired as sum4 and sumSq4 pair them.
func lanes4(l []float64, xr []float32, n4 int, c float64, sq bool) float64 {
	s0, s1, s2, s3 := l[0], l[1], l[2], l[3]
	for _, v := range xr[4*n4:] {
		d := float64(v) - c
		if sq {
			s0 += float64(d * d)
		} else {
			s0 += d
		}
	}
	return (s0 + s1) + (s2 + s3)
}

// layerNormRowsVec is layerNormRows with both sums four rows at a time
// and the normalization in assembly: the same operations in the same
// order, so the same bits.
func layerNormRowsVec(dst, x, w, b []float32, dim int, eps float32) {
	if dim <= 0 {
		return
	}
	w = w[:dim]
	var bp *float32
	if b != nil {
		b = b[:dim]
		bp = &b[0]
	}
	rows := len(x) / dim
	n4 := dim / 4
	var s [16]float64
	var mean, inv [4]float64
	for r := 0; r < rows; r += 4 {
		g := min(4, rows-r)
		if n4 == 0 || g < 4 {
			layerNormRows(dst[r*dim:(r+g)*dim], x[r*dim:(r+g)*dim], w, b, dim, eps)
			continue
		}
		_ = x[(r+4)*dim-1]
		sumRows4V(&x[r*dim], 4*dim, n4, &s)
		for j := range 4 {
			mean[j] = lanes4(s[4*j:4*j+4], x[(r+j)*dim:(r+j+1)*dim], n4, 0, false) / float64(dim)
		}
		sumSqRows4V(&x[r*dim], 4*dim, n4, &mean, &s)
		for j := range 4 {
			vs := lanes4(s[4*j:4*j+4], x[(r+j)*dim:(r+j+1)*dim], n4, mean[j], true)
			inv[j] = 1 / math.Sqrt(vs/float64(dim)+float64(eps))
		}
		for j := range 4 {
			xr, dr := x[(r+j)*dim:(r+j+1)*dim], dst[(r+j)*dim:(r+j+1)*dim]
			layerScaleV(&dr[0], &xr[0], &w[0], bp, n4, mean[j], inv[j])
			for i := 4 * n4; i < dim; i++ {
				y := float32(float32((float64(xr[i])-mean[j])*inv[j]) * w[i])
				if b != nil {
					y += b[i]
				}
				dr[i] = y
			}
		}
	}
}
