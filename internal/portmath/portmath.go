// Package portmath computes the few transcendental functions whose results
// feed embeddings (the rotary frequencies, attention's rescaling, the
// portable activations, Gated DeltaNet's decays, the rerankers' sigmoid)
// with the same bits on every architecture. The standard library's do not: math.Pow, Exp and
// Log are assembly on amd64 and arm64, different algorithms, and its Go
// code is compiled with fused multiply-adds on arm64; their results differ
// in the last bit for a share of the inputs (math.Pow(1e6, -2k/128): 17 of
// 128 frequencies), which a position of a few thousand multiplies into a
// different float32 rotation. The functions here use only IEEE basic
// operations (each correctly rounded everywhere), every product converted
// before it is added so that no compiler fuses it, and exact scalings.
// They are accurate to a few units in the last place, not correctly
// rounded: what matters is that they are the same everywhere.
package portmath

import "math"

// ln2Hi + ln2Lo = ln 2; ln2Hi has its low 32 bits zero, so n·ln2Hi is exact
// for |n| < 2^20.
const (
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
	ln2   = 0.693147180559945309417232121458176568
)

// Exp returns e^x: x = n·ln 2 + r with |r| ≤ ln2/2, e^r by its Taylor series
// to r^17 (the next term is below 2^-70 of the sum), scaled by 2^n exactly.
func Exp(x float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 1):
		return x
	case math.IsInf(x, -1):
		return 0
	case x > 709.8:
		return math.Inf(1)
	case x < -745.2:
		return 0
	}
	n := math.Floor(x/ln2 + 0.5)
	r := float64(x-float64(n*ln2Hi)) - float64(n*ln2Lo)
	// Horner over the Taylor coefficients 1/k!, highest first.
	s := invFact[len(invFact)-1]
	for k := len(invFact) - 2; k >= 0; k-- {
		s = float64(s*r) + invFact[k]
	}
	return math.Ldexp(s, int(n))
}

// invFact holds 1/k! for k = 0..17, each rounded once from its exact
// value (a constant expression), so the same on every build.
var invFact = [18]float64{1, 1, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
	1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800, 1.0 / 87178291200,
	1.0 / 1307674368000, 1.0 / 20922789888000, 1.0 / 355687428096000}

// Log1p returns ln(1+x) for x > −1, accurate for small x: with u = 1+x
// rounded, ln(u)·x/(u−1) corrects for that rounding (u−1 is exact).
func Log1p(x float64) float64 {
	u := 1 + x
	if u == 1 {
		return x
	}
	if math.IsInf(u, 1) {
		return u
	}
	return Log(u) * (x / (u - 1))
}

// Log returns ln x for x > 0: x = m·2^e with √½ ≤ m < √2, and
// ln m = 2·atanh(s), s = (m−1)/(m+1), |s| ≤ 0.172, by its series to s^29.
func Log(x float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 1):
		return x
	case x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	}
	m, e := math.Frexp(x)
	if m < math.Sqrt2/2 {
		m *= 2
		e--
	}
	s := (m - 1) / (m + 1)
	s2 := s * s
	var t float64
	for k := 29; k >= 3; k -= 2 {
		t = float64(t*s2) + 1/float64(k)
	}
	lm := 2 * (s + float64(float64(s*s2)*t))
	return float64(float64(e)*ln2Hi) + (float64(float64(e)*ln2Lo) + lm)
}

// Pow returns b^y for b > 0 as e^(y·ln b).
func Pow(b, y float64) float64 {
	return Exp(float64(y * Log(b)))
}
