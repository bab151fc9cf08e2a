package ref64

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestRMSNorm(t *testing.T) {
	// mean(x²) = (9+16)/2 = 12.5.
	got := RMSNorm([]float64{3, -4}, []float64{1, 2}, 0)
	r := 1 / math.Sqrt(12.5)
	if !near(got[0], 3*r) || !near(got[1], -8*r) {
		t.Errorf("RMSNorm = %v", got)
	}
}

// TestAttend checks a masked, grouped case by hand: row 0 sees only key
// 0, so it reads v[0]; row 1 sees both keys, weighted by the softmax of
// its scores. Two query heads share the one kv head.
func TestAttend(t *testing.T) {
	q := [][]float64{{1, 0, 0, 1}, {2, 0, 0, 0}}
	k := [][]float64{{1, 0}, {0, 1}}
	v := [][]float64{{10, 20}, {30, 40}}
	out := Attend(q, k, v, 2, 1, func(i, j int) bool { return j <= i })
	for e, want := range []float64{10, 20, 10, 20} {
		if !near(out[0][e], want) {
			t.Errorf("row 0 = %v, want v[0] for both heads", out[0])
		}
	}
	// Row 1, head 0: scores 2/√2 and 0; head 1: 0 and 0.
	p := 1 / (1 + math.Exp(-2/math.Sqrt2))
	for e, want := range []float64{p*10 + (1-p)*30, p*20 + (1-p)*40, 20, 30} {
		if !near(out[1][e], want) {
			t.Errorf("row 1 = %v, want %v at %d", out[1], want, e)
		}
	}
}

func TestRotate(t *testing.T) {
	// One head of 4: pairs (x0, x2) and (x1, x3) turn by π/2 and 0.
	x := []float64{1, 2, 3, 4}
	Rotate(x, 1, func(j int) float64 { return []float64{math.Pi / 2, 0}[j] })
	for i, want := range []float64{-3, 2, 1, 4} {
		if !near(x[i], want) {
			t.Errorf("Rotate = %v", x)
		}
	}
}

// TestVisionAngle: heads of 8 have quarters of 2 pairs, at frequencies 1
// and 10000^(−1/2) = 1/100; the first two pairs turn with the row.
func TestVisionAngle(t *testing.T) {
	angle := VisionAngle(3, 5, 8)
	for j, want := range []float64{3, 0.03, 5, 0.05} {
		if got := angle(j); !near(got, want) {
			t.Errorf("pair %d: angle %v, want %v", j, got, want)
		}
	}
}

func TestSiLUAndCosine(t *testing.T) {
	if got := SiLU(0); got != 0 {
		t.Errorf("SiLU(0) = %v", got)
	}
	if got, want := SiLU(2), 2/(1+math.Exp(-2)); !near(got, want) {
		t.Errorf("SiLU(2) = %v, want %v", got, want)
	}
	// (1, 1) against (1, 0): 45°.
	if got := Cosine([]float32{1, 1}, []float64{1, 0}); !near(got, math.Sqrt2/2) {
		t.Errorf("Cosine = %v, want √2/2", got)
	}
}
