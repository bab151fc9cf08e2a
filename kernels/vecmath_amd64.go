package kernels

import "math"

//go:noescape
func scaleMaxAVX2(x *float32, n8 int, s float32) float32

//go:noescape
func expSumAVX2(x *float32, n8 int, sub float32) float32

//go:noescape
func siluMulAVX2(dst, gate, up *float32, n8 int)

//go:noescape
func quickGELUAVX2(x *float32, n8 int)

//go:noescape
func geluTanhAVX2(x *float32, n8 int)

// The wrappers run the assembly over whole groups of eight and pass a tail
// through an eight-wide temporary, so every element sees the same
// arithmetic.

func scaleMaxVec(x []float32, s float32) float32 {
	n8 := len(x) / 8
	m := float32(math.Inf(-1))
	if n8 > 0 {
		m = scaleMaxAVX2(&x[0], n8, s)
	}
	for i := 8 * n8; i < len(x); i++ {
		x[i] *= s
		m = max(m, x[i])
	}
	return m
}

func expSumVec(x []float32, sub float32) float32 {
	n8 := len(x) / 8
	var sum float32
	if n8 > 0 {
		sum = expSumAVX2(&x[0], n8, sub)
	}
	if tail := x[8*n8:]; len(tail) > 0 {
		var t [8]float32
		for i := range t {
			t[i] = float32(math.Inf(-1)) // exp(−Inf) = 0 adds nothing
		}
		copy(t[:], tail)
		sum += expSumAVX2(&t[0], 1, sub)
		copy(tail, t[:])
	}
	return sum
}

func siluMulVec(dst, gate, up []float32) {
	n := len(dst)
	gate, up = gate[:n], up[:n]
	n8 := n / 8
	if n8 > 0 {
		siluMulAVX2(&dst[0], &gate[0], &up[0], n8)
	}
	if r := n - 8*n8; r > 0 {
		var d, g, u [8]float32
		copy(g[:], gate[8*n8:])
		copy(u[:], up[8*n8:])
		siluMulAVX2(&d[0], &g[0], &u[0], 1)
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

func quickGELUVec(x []float32) { inPlace8(quickGELUAVX2, x) }

func geluTanhVec(x []float32) { inPlace8(geluTanhAVX2, x) }
