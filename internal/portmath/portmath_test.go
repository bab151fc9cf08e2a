package portmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulps returns how many float64 steps apart a and b are.
func ulps(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Abs(math.Nextafter(b, math.Inf(1))-b)
}

// TestAgainstMath holds the functions to the standard library's within a
// few units in the last place (each of the two errs by about one, the
// series and reductions here by a few more), on the ranges the rotary
// tables use and beyond, and checks the special values. Pow's bound grows
// with |y·ln b|: the rounding of that product, relative 2^-53, becomes
// an error of |y·ln b| units in e^(y·ln b), and as much again from
// ln b's own error scaled by y.
func TestAgainstMath(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var worstExp, worstLog, worstLog1p float64
	for range 200000 {
		x := (r.Float64() - 0.5) * 1400
		worstExp = max(worstExp, ulps(Exp(x), math.Exp(x)))
		y := math.Ldexp(0.5+r.Float64(), r.IntN(2000)-1000)
		worstLog = max(worstLog, ulps(Log(y), math.Log(y)))
		z := math.Ldexp(r.Float64(), -r.IntN(60)) * float64(1-2*r.IntN(2))
		worstLog1p = max(worstLog1p, ulps(Log1p(z), math.Log1p(z)))
		b := []float64{1e4, 1e6, 5e6, 1e7}[r.IntN(4)]
		e := -r.Float64() * 2
		if u, bound := ulps(Pow(b, e), math.Pow(b, e)), 4+2*math.Abs(e*math.Log(b)); u > bound {
			t.Fatalf("Pow(%v, %v) = %v, %.1f ulps from math.Pow's %v (bound %.1f)", b, e, Pow(b, e), u, math.Pow(b, e), bound)
		}
	}
	t.Logf("worst ulps against math: Exp %.1f, Log %.1f, Log1p %.1f", worstExp, worstLog, worstLog1p)
	// Log1p adds to Log's error a division and a product.
	if worstExp > 4 || worstLog > 4 || worstLog1p > 6 {
		t.Errorf("worst ulps: Exp %.1f, Log %.1f (bound 4), Log1p %.1f (bound 6)", worstExp, worstLog, worstLog1p)
	}
	if u := ulps(Exp(1), math.E); u > 2 {
		t.Errorf("Exp(1) = %v, %.1f ulps from e", Exp(1), u)
	}
	for _, c := range []struct{ got, want float64 }{
		{Exp(0), 1}, {Exp(math.Inf(-1)), 0}, {Exp(800), math.Inf(1)}, {Exp(-800), 0},
		{Log(1), 0}, {Log(0), math.Inf(-1)}, {Log1p(0), 0}, {Log1p(-1), math.Inf(-1)}, {Log1p(math.Inf(1)), math.Inf(1)}, {Log(math.Inf(1)), math.Inf(1)}, {Pow(1e6, 0), 1},
	} {
		if c.got != c.want {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
	if !math.IsNaN(Log(-1)) || !math.IsNaN(Exp(math.NaN())) || !math.IsNaN(Log(math.NaN())) {
		t.Error("NaN in or a negative logarithm: no NaN out")
	}
}
