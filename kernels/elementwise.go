package kernels

import (
	"math"

	"github.com/vembed/vembed/internal/portmath"
)

// Elementwise operations and norms. They cost O(n) against the O(n·d) of the
// products around them; the fast tiers vectorize the exp-based activations,
// and on every tier but the reference the additions, RoPE and both norms
// take vector loops (on AVX2 CPUs and on arm64) that give the same bits as the Go ones
// (addVec, ropeHeads, rmsRows, layerRows). Large inputs are spread over
// the worker pool.

// parallelMin is the number of values below which an elementwise operation
// runs on the calling goroutine: handing work to the pool costs a few
// microseconds.
const parallelMin = 1 << 15

// parallelRange splits [0, n) into contiguous chunks, multiples of align,
// and calls fn on each, over the pool when n is large.
func parallelRange(n, align int, fn func(lo, hi int)) {
	w := workers()
	if n < parallelMin || w == 1 {
		fn(0, n)
		return
	}
	chunk := roundUp((n+4*w-1)/(4*w), align)
	parallelFor((n+chunk-1)/chunk, func(i int) {
		fn(i*chunk, min((i+1)*chunk, n))
	})
}

// rowsOp applies fn to every dim-wide row of x, in parallel when large.
func rowsOp(n, dim int, fn func(lo, hi int)) {
	if dim <= 0 {
		return
	}
	rows := n / dim
	parallelRange(rows*dim, dim, fn)
}

func rmsNormPar(dst, x, w []float32, dim int, eps float32) {
	rowsOp(len(x), dim, func(lo, hi int) { rmsRows(dst[lo:hi], x[lo:hi], w, dim, eps) })
}

// rmsRows is rmsNormRows, replaced at start-up by vector code giving the
// same bits where the CPU has it (norm_amd64.go, vecmath_arm64.go).
var rmsRows = rmsNormRows

func layerNormPar(dst, x, w, b []float32, dim int, eps float32) {
	rowsOp(len(x), dim, func(lo, hi int) { layerRows(dst[lo:hi], x[lo:hi], w, b, dim, eps) })
}

// layerRows is layerNormRows, replaced like rmsRows (norm_amd64.go, vecmath_arm64.go).
var layerRows = layerNormRows

// sum4 and sumSq4 return Σ v and Σ (v−c)² in float64 over four
// interleaved partial sums. One running sum makes every addition wait for
// the previous one (a 4-cycle latency per value); four independent chains
// keep the adder busy. The order differs from the reference's sequential
// sum, by float64 rounding only.
func sum4(v []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(v); i += 4 {
		q := v[i : i+4 : i+4]
		s0 += float64(q[0])
		s1 += float64(q[1])
		s2 += float64(q[2])
		s3 += float64(q[3])
	}
	for ; i < len(v); i++ {
		s0 += float64(v[i])
	}
	return (s0 + s1) + (s2 + s3)
}

func sumSq4(v []float32, c float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(v); i += 4 {
		q := v[i : i+4 : i+4]
		d0, d1, d2, d3 := float64(q[0])-c, float64(q[1])-c, float64(q[2])-c, float64(q[3])-c
		// A product is converted before it is added to (float64(a*b) + c): that
		// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
		// every build computes the same bits (TestNoFusedMultiplyAdd).
		s0 += float64(d0 * d0)
		s1 += float64(d1 * d1)
		s2 += float64(d2 * d2)
		s3 += float64(d3 * d3)
	}
	for ; i < len(v); i++ {
		d := float64(v[i]) - c
		s0 += float64(d * d)
	}
	return (s0 + s1) + (s2 + s3)
}

// rmsNormRows is RMSNormRef with the sum of squares in four chains.
func rmsNormRows(dst, x, w []float32, dim int, eps float32) {
	w = w[:dim]
	for r := 0; r+dim <= len(x); r += dim {
		xr, dr := x[r:r+dim:r+dim], dst[r:r+dim:r+dim]
		ss := sumSq4(xr, 0)
		inv := 1 / math.Sqrt(ss/float64(dim)+float64(eps))
		for i, v := range xr {
			dr[i] = float32(float64(v)*inv) * w[i]
		}
	}
}

// layerNormRows is LayerNormRef with its two sums in four chains each.
func layerNormRows(dst, x, w, b []float32, dim int, eps float32) {
	w = w[:dim]
	for r := 0; r+dim <= len(x); r += dim {
		xr, dr := x[r:r+dim:r+dim], dst[r:r+dim:r+dim]
		mean := sum4(xr) / float64(dim)
		vs := sumSq4(xr, mean)
		inv := 1 / math.Sqrt(vs/float64(dim)+float64(eps))
		for i, v := range xr {
			y := float32(float32((float64(v)-mean)*inv) * w[i])
			if b != nil {
				y += b[i]
			}
			dr[i] = y
		}
	}
}

func ropePar(x []float32, nTok, nHead, headDim int, cos, sin []float32) {
	half := headDim / 2
	rowsOp(nTok*nHead*headDim, nHead*headDim, func(lo, hi int) {
		t0, t1 := lo/(nHead*headDim), hi/(nHead*headDim)
		ropeHeads(x[lo:hi], t1-t0, nHead, headDim, cos[t0*half:], sin[t0*half:])
	})
}

// addVec and ropeHeads are the inner loops of the additions (residuals,
// biases) and of RoPE: portable Go, replaced at start-up by vector code
// where the CPU has it (vecmath_amd64.go, vecmath_arm64.go). Each output is the same
// correctly rounded sum or product either way, so every tier may use them
// without changing a bit.
var (
	addVec    = AddRef
	ropeHeads = RoPERef
)

func addPar(dst, a, b []float32) {
	parallelRange(len(dst), 16, func(lo, hi int) { addVec(dst[lo:hi], a[lo:hi], b[lo:hi]) })
}

func geluPar(x []float32) {
	parallelRange(len(x), 16, func(lo, hi int) { GELURef(x[lo:hi]) })
}

// elementwise returns the parallel forms of the activations over the given
// vector kernels.
func swiGLUWith(f func(dst, gate, up []float32)) func(dst, gate, up []float32) {
	return func(dst, gate, up []float32) {
		parallelRange(len(dst), 16, func(lo, hi int) { f(dst[lo:hi], gate[lo:hi], up[lo:hi]) })
	}
}

func inPlaceWith(f func(x []float32)) func(x []float32) {
	return func(x []float32) {
		parallelRange(len(x), 16, func(lo, hi int) { f(x[lo:hi]) })
	}
}

// siluMulGo, quickGELUGo and geluTanhGo are the portable activation
// kernels, in float32 arithmetic like the vector ones; their exp is
// portmath's, the same on every architecture (math.Exp is not).
func siluMulGo(dst, gate, up []float32) {
	for i := range dst {
		g := gate[i]
		dst[i] = g / (1 + float32(portmath.Exp(float64(-g)))) * up[i]
	}
}

func quickGELUGo(x []float32) {
	for i, v := range x {
		x[i] = v / (1 + float32(portmath.Exp(float64(-1.702*v))))
	}
}

// geluTanhGo computes 0.5·x·(1+tanh(z)) as x·σ(2z), the same function
// without the cancellation of 1+tanh(z) for negative x.
func geluTanhGo(x []float32) {
	for i, v := range x {
		x[i] = v / (1 + float32(portmath.Exp(float64(geluTanhK*(v+float32(geluTanhC*v*v*v))))))
	}
}
