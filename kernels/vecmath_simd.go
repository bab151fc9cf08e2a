//go:build amd64 || arm64

package kernels

import "math"

// The drivers of the elementwise vector kernels (vecmath_amd64.s,
// vecmath_arm64.s): both architectures' kernels take whole groups of eight
// values, the lanes of one AVX2 register or two NEON ones, and give the
// same bits for them. The drivers run a kernel over the whole groups and
// pass a tail through an eight-wide temporary, so every element sees the
// same arithmetic.

func scaleMaxWith(kern func(x *float32, n8 int, s float32) float32, x []float32, s float32) float32 {
	n8 := len(x) / 8
	m := float32(math.Inf(-1))
	if n8 > 0 {
		m = kern(&x[0], n8, s)
	}
	for i := 8 * n8; i < len(x); i++ {
		x[i] *= s
		m = max(m, x[i])
	}
	return m
}

func expSumWith(kern func(x *float32, n8 int, sub float32) float32, x []float32, sub float32) float32 {
	n8 := len(x) / 8
	var sum float32
	if n8 > 0 {
		sum = kern(&x[0], n8, sub)
	}
	if tail := x[8*n8:]; len(tail) > 0 {
		var t [8]float32
		for i := range t {
			t[i] = float32(math.Inf(-1)) // exp(−Inf) = 0 adds nothing
		}
		copy(t[:], tail)
		sum += kern(&t[0], 1, sub)
		copy(tail, t[:])
	}
	return sum
}

func siluMulWith(kern func(dst, gate, up *float32, n8 int), dst, gate, up []float32) {
	n := len(dst)
	gate, up = gate[:n], up[:n]
	n8 := n / 8
	if n8 > 0 {
		kern(&dst[0], &gate[0], &up[0], n8)
	}
	if r := n - 8*n8; r > 0 {
		var d, g, u [8]float32
		copy(g[:], gate[8*n8:])
		copy(u[:], up[8*n8:])
		kern(&d[0], &g[0], &u[0], 1)
		copy(dst[8*n8:], d[:r])
	}
}

// inPlace8 runs an in-place kernel over 8-value vectors on x, the tail
// through a padded copy.
func inPlace8(kern func(x *float32, n8 int), x []float32) {
	n8 := len(x) / 8
	if n8 > 0 {
		kern(&x[0], n8)
	}
	if r := len(x) - 8*n8; r > 0 {
		var t [8]float32
		copy(t[:], x[8*n8:])
		kern(&t[0], 1)
		copy(x[8*n8:], t[:r])
	}
}

// addVecWith is AddRef with the whole groups of eight by kern; a sum of
// two float32 values is exact-rounded either way, so the bits agree.
func addVecWith(kern func(dst, a, b *float32, n int), dst, a, b []float32) {
	n := len(dst)
	a, b = a[:n], b[:n]
	n8 := n &^ 7
	if n8 > 0 {
		kern(&dst[0], &a[0], &b[0], n8)
	}
	for i := n8; i < n; i++ {
		dst[i] = a[i] + b[i]
	}
}

// ropeHeadsWith is RoPERef with the rotation of whole groups of eight by
// kern (the same products and sums, so the same bits).
func ropeHeadsWith(kern func(lo, hi, c, s *float32, n int), x []float32, nTok, nHead, headDim int, cos, sin []float32) {
	half := headDim / 2
	h8 := half &^ 7
	for t := 0; t < nTok; t++ {
		c, s := cos[t*half:(t+1)*half], sin[t*half:(t+1)*half]
		for h := 0; h < nHead; h++ {
			v := x[(t*nHead+h)*headDim : (t*nHead+h+1)*headDim]
			if h8 > 0 {
				_, _ = v[half+h8-1], s[h8-1]
				kern(&v[0], &v[half], &c[0], &s[0], h8)
			}
			for d := h8; d < half; d++ {
				// Unfused, as RoPERef and the vector loop.
				a, b := v[d], v[d+half]
				v[d] = float32(a*c[d]) - float32(b*s[d])
				v[d+half] = float32(b*c[d]) + float32(a*s[d])
			}
		}
	}
}
