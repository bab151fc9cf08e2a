package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// ulpDiff is the distance in float32 ulps between got and the float64 want.
func ulpDiff(got float32, want float64) float64 {
	w := float32(want)
	ulp := math.Nextafter32(float32(math.Abs(float64(w))), float32(math.Inf(1))) - float32(math.Abs(float64(w)))
	return math.Abs(float64(got)-want) / float64(ulp)
}

// TestVectorExp sweeps the vector exp over its whole range against
// math.Exp: within 2 ulp for every normal result, exact 0 for −Inf and for
// inputs whose result is below the flush threshold.
func TestVectorExp(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	const n = 1 << 20
	x := make([]float32, n)
	for i := range x {
		x[i] = -87 + 175*float32(i)/n
	}
	got := append([]float32(nil), x...)
	expSumVec(got, 0)
	var worst float64
	for i, v := range x {
		worst = max(worst, ulpDiff(got[i], math.Exp(float64(v))))
	}
	t.Logf("worst error %.2f ulp", worst)
	if worst > 2 {
		t.Fatalf("vector exp off by %.2f ulp", worst)
	}
	sp := []float32{float32(math.Inf(-1)), -1000, -88}
	expSumVec(sp, 0)
	for i, v := range sp {
		if v != 0 {
			t.Errorf("exp of tiny input %d = %v, want 0", i, v)
		}
	}
	s := []float32{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8} // sum covers the tail path
	sum := expSumVec(s, 1)
	var want float64
	for _, v := range []float64{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8} {
		want += math.Exp(v - 1)
	}
	if math.Abs(float64(sum)-want) > 1e-5*want {
		t.Fatalf("expSum = %v, want %v", sum, want)
	}
}

// TestAddAndRoPEVectorsMatchGo checks the assembly addition and rotation
// against the Go loops bit for bit, on lengths around every group size,
// with the destination aliasing an operand, and RoPE head sizes whose
// halves leave tails (vision towers use 80, LMs 128).
func TestAddAndRoPEVectorsMatchGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the CPU has no AVX2: the vector loops are not used")
	}
	rng := rand.New(rand.NewPCG(71, 72))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 100, 1280, 1283} {
		a, b := randVec(n, rng), randVec(n, rng)
		want := make([]float32, n)
		AddRef(want, a, b)
		got := make([]float32, n)
		addVecAVX2(got, a, b)
		sameBits(t, fmt.Sprintf("add n=%d", n), got, want)
		inPlace := append([]float32(nil), a...)
		addVecAVX2(inPlace, inPlace, b)
		sameBits(t, fmt.Sprintf("add in place n=%d", n), inPlace, want)
	}
	for _, headDim := range []int{2, 14, 16, 18, 32, 34, 64, 80, 128} {
		const nTok, nHead = 5, 3
		half := headDim / 2
		x := randVec(nTok*nHead*headDim, rng)
		cos, sin := randVec(nTok*half, rng), randVec(nTok*half, rng)
		want := append([]float32(nil), x...)
		RoPERef(want, nTok, nHead, headDim, cos, sin)
		ropeHeadsAVX2(x, nTok, nHead, headDim, cos, sin)
		sameBits(t, fmt.Sprintf("rope headDim=%d", headDim), x, want)
	}
}

// TestNormRowsAVX2MatchesGo checks the assembly RMSNorm and LayerNorm
// (with and without bias) against rmsNormRows and layerNormRows bit for
// bit: row counts around the four-row groups, widths with and without
// tails (the towers' 1280, the LMs' 2048), in place, and rows of zeros,
// huge values and NaN.
func TestNormRowsAVX2MatchesGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the CPU has no AVX2: the vector loops are not used")
	}
	rng := rand.New(rand.NewPCG(73, 74))
	for _, dim := range []int{1, 3, 4, 5, 8, 9, 16, 18, 80, 1280, 1283, 2048} {
		for _, rows := range []int{1, 3, 4, 5, 8, 9} {
			x, w := randVec(rows*dim, rng), randVec(dim, rng)
			for i := range x {
				x[i] *= float32(math.Exp2(float64(rng.IntN(41) - 20)))
			}
			if rows > 2 {
				clear(x[dim : 2*dim])
				x[2*dim] = 3e38
				if dim > 1 {
					x[2*dim+1] = -3e38
				}
			}
			if rows > 4 {
				x[4*dim+dim/2] = float32(math.NaN())
			}
			want := make([]float32, rows*dim)
			got := make([]float32, rows*dim)
			bias := randVec(dim, rng)
			for _, b := range [][]float32{nil, bias} {
				layerNormRows(want, x, w, b, dim, 1e-5)
				layerNormRowsAVX2(got, x, w, b, dim, 1e-5)
				sameBits(t, fmt.Sprintf("layernorm dim=%d rows=%d bias=%v", dim, rows, b != nil), got, want)
			}
			x2 := append([]float32(nil), x...)
			layerNormRowsAVX2(x2, x2, w, bias, dim, 1e-5)
			sameBits(t, fmt.Sprintf("layernorm in place dim=%d rows=%d", dim, rows), x2, want)

			rmsNormRows(want, x, w, dim, 1e-6)
			rmsNormRowsAVX2(got, x, w, dim, 1e-6)
			sameBits(t, fmt.Sprintf("rmsnorm dim=%d rows=%d", dim, rows), got, want)
			rmsNormRowsAVX2(x, x, w, dim, 1e-6)
			sameBits(t, fmt.Sprintf("rmsnorm in place dim=%d rows=%d", dim, rows), x, want)
		}
	}
}
