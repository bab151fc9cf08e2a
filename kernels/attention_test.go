package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// attentionTol bounds |fast − reference| for one output value. A float32
// score q·k over headDim terms is off by at most δ = γ_headDim·scale·Σ|q_d·k_d|;
// an error δ in the scores changes each softmax weight by a factor within
// exp(±2δ), so the weighted mean of the values moves by at most about
// 2δ·max|v|. The float32 exponentials (a few ulp), the running rescales
// and the float32 sum of nk weighted values add γ_{nk+16}·max|v|.
func attentionTol(q, k []float32, v []float32, maxAbsV float64, hd, nk int, scale float32) float64 {
	return (2*gamma(hd)*float64(scale)*maxDotMag(q, k, hd) + gamma(nk+16)) * maxAbsV * 2
}

// maxDotMag is the largest Σ|q_d·k_d| over all query and key vectors.
func maxDotMag(q, k []float32, hd int) float64 {
	var qm, km float64
	for i := 0; i+hd <= len(q); i += hd {
		var s float64
		for _, x := range q[i : i+hd] {
			s += math.Abs(float64(x))
		}
		qm = max(qm, s)
	}
	for _, x := range k {
		km = max(km, math.Abs(float64(x)))
	}
	return qm * km
}

func TestAttention(t *testing.T) {
	cases := []struct {
		nTok, nHead, nKV, hd int
		mask                 Mask
	}{
		{1, 1, 1, 8, Mask{}},
		{7, 2, 1, 16, Mask{Causal: true}},
		{65, 4, 2, 80, Mask{}},
		{130, 2, 2, 128, Mask{Causal: true}},
		{200, 4, 1, 24, Mask{Segments: []int{0, 64, 128, 200}}},
		{150, 2, 1, 32, Mask{Causal: true, Segments: []int{0, 5, 100, 150}}},
		{40, 2, 2, 16, Mask{Segments: []int{3, 20, 30}}}, // tokens outside segments
		{300, 2, 1, 64, Mask{Causal: true}},
		// Vision windows: one key block per query block, packed inside the
		// work item when no two heads share keys; 80 leaves a 16-wide
		// value panel past the 32-wide ones, 8 a part of one.
		{203, 3, 3, 80, Mask{Segments: windows(203, 64)}},
		{203, 4, 2, 80, Mask{Segments: windows(203, 64)}},
		{70, 2, 2, 40, Mask{Segments: windows(70, 16)}},
		// More keys than one key block: the online softmax across blocks.
		{attnBK + 77, 2, 1, 16, Mask{}},
		{attnBK + 77, 2, 2, 24, Mask{Causal: true}},
	}
	eachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		for _, c := range cases {
			t.Run(fmt.Sprintf("tok%d_h%d_kv%d_d%d_causal%v_seg%d", c.nTok, c.nHead, c.nKV, c.hd, c.mask.Causal, len(c.mask.Segments)), func(t *testing.T) {
				q := randVec(c.nTok*c.nHead*c.hd, rng)
				k := randVec(c.nTok*c.nKV*c.hd, rng)
				v := randVec(c.nTok*c.nKV*c.hd, rng)
				scale := float32(1 / math.Sqrt(float64(c.hd)))
				want := make([]float32, len(q))
				AttentionRef(want, q, k, v, c.nTok, c.nHead, c.nKV, c.hd, scale, c.mask)
				got := make([]float32, len(q))
				for i := range got {
					got[i] = float32(math.NaN())
				}
				Attention(got, q, k, v, c.nTok, c.nHead, c.nKV, c.hd, scale, c.mask)
				var maxV float64
				for _, x := range v {
					maxV = max(maxV, math.Abs(float64(x)))
				}
				tol := attentionTol(q, k, v, maxV, c.hd, c.nTok, scale)
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); !(d <= tol) {
						t.Fatalf("out[%d] = %v, want %v (|diff| %.3g > %.3g)", i, got[i], want[i], d, tol)
					}
				}
			})
		}
	})
}
