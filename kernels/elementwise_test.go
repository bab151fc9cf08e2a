package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Sizes cover empty, sub-vector, tail and parallel (≥ parallelMin) inputs.
var elemSizes = []int{0, 1, 7, 8, 33, 3*parallelMin + 5}

// TestActivations checks SwiGLU, QuickGELU and GELUTanh against the reference. The
// fast forms compute σ-like ratios in float32: exp within 2 ulp, then one
// add, one divide and one multiply, each within ½ ulp, and the reference
// rounds once more: 8u·|ref| covers it. QuickGELU's exp argument 1.702·x is
// itself rounded to float32 (and so is the constant), a relative error of
// 2u that exp turns into an absolute 2u·|1.702·x| on its result, hence the
// extra term. The absolute 1e−30 allows for exp results below 1.7e−38 that
// the vector exp flushes to zero.
func TestActivations(t *testing.T) {
	eachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		for _, n := range elemSizes {
			gate, up := randVec(n, rng), randVec(n, rng)
			for i := range gate {
				gate[i] *= 8 // reach the flat parts of the curves
			}
			gate = append(gate, -200, 200, -88, 90)[:n]
			check := func(name string, argScale float64, got, want []float32) {
				for i := range want {
					rel := 8 + 2*argScale*math.Abs(float64(gate[i]))
					tol := rel*u*math.Abs(float64(want[i])) + 1e-30
					if d := math.Abs(float64(got[i] - want[i])); !(d <= tol) {
						t.Fatalf("%s n=%d [%d] (in %v): got %v want %v", name, n, i, gate[i], got[i], want[i])
					}
				}
			}
			want, got := make([]float32, n), make([]float32, n)
			SwiGLURef(want, gate, up)
			SwiGLU(got, gate, up)
			check("SwiGLU", 0, got, want)

			want, got = slices.Clone(gate), slices.Clone(gate)
			QuickGELURef(want)
			QuickGELU(got)
			check("QuickGELU", 1.702, got, want)

			// GELUTanh's exp argument K·(x + C·x³) takes five roundings
			// (C and K as float32 constants, four products and a sum of
			// like signs): 4u relative, so 2·4u·|arg| absolute on exp's
			// result. The reference computes 1 + tanh(z) in float64,
			// which for z ≪ 0 cancels down to one ulp of 1 (2⁻⁵³) times
			// |x|/2, so that much absolute error is its own.
			want, got = slices.Clone(gate), slices.Clone(gate)
			GELUTanhRef(want)
			GELUTanh(got)
			for i := range want {
				g := math.Abs(float64(gate[i]))
				arg := -geluTanhK * g * (1 + geluTanhC*g*g)
				tol := (8+2*4*arg)*u*math.Abs(float64(want[i])) + g*0x1p-53 + 1e-30
				if d := math.Abs(float64(got[i] - want[i])); !(d <= tol) {
					t.Fatalf("GELUTanh n=%d [%d] (in %v): got %v want %v", n, i, gate[i], got[i], want[i])
				}
			}
		}
	})
}

// TestExactOps checks the operations whose fast forms run the reference
// arithmetic on parallel chunks: results must be identical, aliasing
// included. The norms sum in another order and are checked by normClose.
func TestExactOps(t *testing.T) {
	eachTier(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(13, 14))
		for _, dim := range []int{1, 16, 80, 1280} {
			for _, rows := range []int{1, 3, 2*parallelMin/dim + 3} {
				t.Run(fmt.Sprintf("dim%d/rows%d", dim, rows), func(t *testing.T) {
					n := rows * dim
					x, w, b := randVec(n, rng), randVec(dim, rng), randVec(dim, rng)
					same := func(name string, got, want []float32) {
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s [%d]: got %v want %v", name, i, got[i], want[i])
							}
						}
					}
					want, got := make([]float32, n), slices.Clone(x)
					RMSNormRef(want, x, w, dim, 1e-6)
					RMSNorm(got, got, w, dim, 1e-6)
					normClose(t, "RMSNorm", got, want, w, nil)

					got = slices.Clone(x)
					LayerNormRef(want, x, w, b, dim, 1e-5)
					LayerNorm(got, got, w, b, dim, 1e-5)
					normClose(t, "LayerNorm", got, want, w, b)

					y := randVec(n, rng)
					AddRef(want, x, y)
					got = slices.Clone(x)
					Add(got, got, y)
					same("Add", got, want)

					copy(want, x)
					GELURef(want)
					got = slices.Clone(x)
					GELU(got)
					same("GELU", got, want)

					if dim%2 == 0 {
						nHead, hd := 1, dim
						if dim%16 == 0 {
							nHead, hd = dim/16, 16
						}
						cos, sin := randVec(rows*hd/2, rng), randVec(rows*hd/2, rng)
						copy(want, x)
						RoPERef(want, rows, nHead, hd, cos, sin)
						got = slices.Clone(x)
						RoPE(got, rows, nHead, hd, cos, sin)
						same("RoPE", got, want)
					}
				})
			}
		}
	})
}

// normClose checks a fast norm against the reference. The fast forms sum in
// float64 in another order, which moves the row's scale by a relative
// ~dim·2⁻⁵³ (and LayerNorm's mean by as much of max|x|). Rounding the
// normalized value y to float32 can then land one ulp (2u·|y|) away, and
// the product by w and the bias add each round once more (u each, on
// |y·w| ≤ |want| + |b|): 8u·(|want|+|b|) covers it. The absolute 1e−10·|w|
// bounds the mean's float64 error, ≪ 1e−12 for these inputs (|x| < 8,
// dim ≤ 1280), where y is tiny.
func normClose(t *testing.T, name string, got, want, w, b []float32) {
	t.Helper()
	dim := len(w)
	for i := range want {
		bias := 0.0
		if b != nil {
			bias = math.Abs(float64(b[i%dim]))
		}
		tol := 8*u*(math.Abs(float64(want[i]))+bias) + 1e-10*math.Abs(float64(w[i%dim]))
		if d := math.Abs(float64(got[i] - want[i])); !(d <= tol) {
			t.Fatalf("%s [%d]: got %v want %v (|diff| %.3g > %.3g)", name, i, got[i], want[i], d, tol)
		}
	}
}
