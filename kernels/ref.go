package kernels

import (
	"math"

	"github.com/vembed/vembed/gguf"
)

// The reference implementations: straightforward loops with float64
// accumulation where a sum runs over a dimension, single-threaded. They
// define what every fast tier must compute.

// MatMulRef is the reference MatMul.
func MatMulRef(dst, x []float32, m int, w *Matrix, bias []float32) {
	row := make([]float32, w.Cols)
	rb := w.RowBytes()
	for n := 0; n < w.Rows; n++ {
		if err := gguf.Dequantize(w.Type, w.Data[n*rb:(n+1)*rb], row); err != nil {
			panic(err) // NewMatrix validated the type and size
		}
		for i := 0; i < m; i++ {
			xi := x[i*w.Cols : (i+1)*w.Cols]
			var s float64
			for k, v := range row {
				// A product is converted before it is added to (float64(a*b) + c): that
				// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
				// every build computes the same bits (TestNoFusedMultiplyAdd).
				s += float64(float64(xi[k]) * float64(v))
			}
			if bias != nil {
				s += float64(bias[n])
			}
			dst[i*w.Rows+n] = float32(s)
		}
	}
}

// AttentionRef is the reference Attention: full scores, max-subtracted
// softmax in float64.
func AttentionRef(out, q, k, v []float32, nTok, nHead, nKV, headDim int, scale float32, mask Mask) {
	qs := nHead * headDim
	for t := 0; t < nTok; t++ {
		lo, hi := segmentOf(mask.Segments, t, nTok)
		if mask.Causal {
			hi = t + 1
		}
		attendRef(out[t*qs:(t+1)*qs], q[t*qs:(t+1)*qs], k, v, lo, hi, nHead, nKV, headDim, scale)
	}
}

// attendRef computes one token's attention output over keys [lo, hi), in
// float64.
func attendRef(out, q, k, v []float32, lo, hi, nHead, nKV, headDim int, scale float32) {
	group := nHead / nKV
	ks := nKV * headDim
	p := make([]float64, hi-lo)
	acc := make([]float64, headDim)
	for h := 0; h < nHead; h++ {
		g := h / group
		qv := q[h*headDim : (h+1)*headDim]
		maxv := math.Inf(-1)
		for j := lo; j < hi; j++ {
			kv := k[j*ks+g*headDim : j*ks+(g+1)*headDim]
			var s float64
			for d := range qv {
				s += float64(float64(qv[d]) * float64(kv[d]))
			}
			s *= float64(scale)
			p[j-lo] = s
			maxv = math.Max(maxv, s)
		}
		var sum float64
		for j := lo; j < hi; j++ {
			p[j-lo] = math.Exp(p[j-lo] - maxv)
			sum += p[j-lo]
		}
		clear(acc)
		for j := lo; j < hi; j++ {
			vv := v[j*ks+g*headDim : j*ks+(g+1)*headDim]
			for d := range acc {
				acc[d] += float64(p[j-lo] * float64(vv[d]))
			}
		}
		o := out[h*headDim : (h+1)*headDim]
		for d := range o {
			o[d] = float32(acc[d] / sum)
		}
	}
}

// AttentionKVRef is the reference AttentionKV: each query row runs the
// reference's loop over the keys it may see, so chunked and one-pass
// results agree exactly here too.
func AttentionKVRef(out, q []float32, nHead, nKV, headDim int, scale float32, spans []KVSpan) {
	qs := nHead * headDim
	for _, sp := range spans {
		for t := sp.Q0; t < sp.Q1; t++ {
			pos := sp.Pos + t - sp.Q0
			attendRef(out[t*qs:(t+1)*qs], q[t*qs:(t+1)*qs], sp.K, sp.V, 0, pos+1, nHead, nKV, headDim, scale)
		}
	}
}

// segmentOf returns the [lo, hi) bounds of the segment holding token t.
func segmentOf(seg []int, t, nTok int) (int, int) {
	if len(seg) == 0 {
		return 0, nTok
	}
	for i := 0; i+1 < len(seg); i++ {
		if t >= seg[i] && t < seg[i+1] {
			return seg[i], seg[i+1]
		}
	}
	return t, t + 1 // a token outside every segment attends to itself only
}

// RMSNormRef is the reference RMSNorm.
func RMSNormRef(dst, x, w []float32, dim int, eps float32) {
	for r := 0; r+dim <= len(x); r += dim {
		var ss float64
		for _, v := range x[r : r+dim] {
			ss += float64(float64(v) * float64(v))
		}
		inv := 1 / math.Sqrt(ss/float64(dim)+float64(eps))
		for i := 0; i < dim; i++ {
			dst[r+i] = float32(float64(x[r+i])*inv) * w[i]
		}
	}
}

// LayerNormRef is the reference LayerNorm.
func LayerNormRef(dst, x, w, b []float32, dim int, eps float32) {
	for r := 0; r+dim <= len(x); r += dim {
		var mean float64
		for _, v := range x[r : r+dim] {
			mean += float64(v)
		}
		mean /= float64(dim)
		var vs float64
		for _, v := range x[r : r+dim] {
			d := float64(v) - mean
			vs += float64(d * d)
		}
		inv := 1 / math.Sqrt(vs/float64(dim)+float64(eps))
		for i := 0; i < dim; i++ {
			y := float32(float32((float64(x[r+i])-mean)*inv) * w[i])
			if b != nil {
				y += b[i]
			}
			dst[r+i] = y
		}
	}
}

// RoPERef is the reference RoPE.
func RoPERef(x []float32, nTok, nHead, headDim int, cos, sin []float32) {
	half := headDim / 2
	for t := 0; t < nTok; t++ {
		c, s := cos[t*half:(t+1)*half], sin[t*half:(t+1)*half]
		for h := 0; h < nHead; h++ {
			v := x[(t*nHead+h)*headDim : (t*nHead+h+1)*headDim]
			for d := 0; d < half; d++ {
				a, b := v[d], v[d+half]
				// Each product rounds before the sum, as the vector
				// code does: the conversions keep compilers that fuse
				// a·b ± c (arm64, GOAMD64=v3) from changing the bits.
				v[d] = float32(a*c[d]) - float32(b*s[d])
				v[d+half] = float32(b*c[d]) + float32(a*s[d])
			}
		}
	}
}

// AddRef is the reference Add.
func AddRef(dst, a, b []float32) {
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// SwiGLURef is the reference SwiGLU.
func SwiGLURef(dst, gate, up []float32) {
	for i := range dst {
		g := float64(gate[i])
		dst[i] = float32(g/(1+math.Exp(-g))) * up[i]
	}
}

// GELURef is the reference exact GELU.
func GELURef(x []float32) {
	for i, v := range x {
		f := float64(v)
		x[i] = float32(0.5 * f * (1 + math.Erf(f/math.Sqrt2)))
	}
}

// The constants of the tanh GELU as the fast forms use them: σ(2z) with
// z = √(2/π)·(x + geluTanhC·x³), so exp's argument is geluTanhK·(…).
const (
	geluTanhC = 0.044715
	geluTanhK = -2 * 0.7978845608028654 // −2·√(2/π)
)

// GELUTanhRef is the reference tanh GELU, in float64 as written.
func GELUTanhRef(x []float32) {
	for i, v := range x {
		f := float64(v)
		x[i] = float32(0.5 * f * (1 + math.Tanh(0.7978845608028654*(f+float64(geluTanhC*f*f*f)))))
	}
}

// QuickGELURef is the reference quick GELU.
func QuickGELURef(x []float32) {
	for i, v := range x {
		f := float64(v)
		x[i] = float32(f / (1 + math.Exp(-1.702*f)))
	}
}
