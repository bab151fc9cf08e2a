// Package ref64 is the float64 arithmetic of the transformer references
// that tests check the engine against: plain loops, no blocking, no
// shortcuts, so that a reference reads as its formula.
package ref64

import "math"

// RMSNorm returns x/√(mean(x²)+eps)·w.
func RMSNorm(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	r := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * r * w[i]
	}
	return out
}

// Attend is softmax(q·kᵀ/√d)·v per head over rows of q, where allowed(i,
// j) says which keys row i sees; each kv head serves heads/kvHeads
// consecutive query heads.
func Attend(q, k, v [][]float64, heads, kvHeads int, allowed func(i, j int) bool) [][]float64 {
	d := len(q[0]) / heads
	out := make([][]float64, len(q))
	for i := range q {
		out[i] = make([]float64, heads*d)
		for h := range heads {
			kh := h / (heads / kvHeads)
			sc := make([]float64, len(k))
			mx := math.Inf(-1)
			for j := range k {
				sc[j] = math.Inf(-1)
				if allowed(i, j) {
					var s float64
					for e := range d {
						s += q[i][h*d+e] * k[j][kh*d+e]
					}
					sc[j] = s / math.Sqrt(float64(d))
				}
				mx = math.Max(mx, sc[j])
			}
			var z float64
			for j := range sc {
				sc[j] = math.Exp(sc[j] - mx)
				z += sc[j]
			}
			for j := range sc {
				for e := range d {
					out[i][h*d+e] += sc[j] / z * v[j][kh*d+e]
				}
			}
		}
	}
	return out
}

// Rotate turns the first and second halves of each of the heads of x by
// the angles angle(j), j < d/2 (transformers' rotate_half convention).
func Rotate(x []float64, heads int, angle func(j int) float64) {
	d := len(x) / heads
	for h := range heads {
		v := x[h*d : (h+1)*d]
		for j := range d / 2 {
			c, s := math.Cos(angle(j)), math.Sin(angle(j))
			a, b := v[j], v[j+d/2]
			v[j], v[j+d/2] = a*c-b*s, b*c+a*s
		}
	}
}

// VisionAngle is the angle function of Rotate for a patch of a Qwen-VL
// vision tower at row hpos and column wpos, heads of hd dimensions: the
// first quarter of a head's dimensions turn with the row, the second with
// the column, by frequencies 10000^(−2i/(hd/2)) over a quarter.
func VisionAngle(hpos, wpos, hd int) func(j int) float64 {
	return func(j int) float64 {
		pos := hpos
		if j >= hd/4 {
			pos = wpos
		}
		return float64(pos) * math.Pow(10000, -2*float64(j%(hd/4))/float64(hd/2))
	}
}

// SiLU is v·sigmoid(v), the gate of SwiGLU.
func SiLU(v float64) float64 { return v / (1 + math.Exp(-v)) }

// Cosine is the cosine of an engine's float32 row a and a reference's
// float64 row b, over b's length.
func Cosine(a []float32, b []float64) float64 {
	var ab, aa, bb float64
	for i := range b {
		ab += float64(a[i]) * b[i]
		aa += float64(a[i]) * float64(a[i])
		bb += b[i] * b[i]
	}
	return ab / math.Sqrt(aa*bb)
}
