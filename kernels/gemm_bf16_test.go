package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// bf16Slack is what a bfloat16 tier (tierRounding's BF16) may add to the float32 bound of
// a product of k terms of total magnitude mag = Σ|x·w| by weights of type
// typ (gemm_bf16.go): activations and weights rounded to bfloat16 move
// each product by at most e = ua + uw + ua·uw of itself (ua = 2⁻⁸; uw = 2⁻⁸
// for F16 and F32 weights, 0 for BF16 ones, which are exact), and the
// float32 sum of the rounded products, at most (1+e)·mag, adds γ_{k+1} of
// that beyond the γ_{k+1}·mag the float32 bound has. VDPBF16PS treats
// denormal inputs and outputs as zero: at most 2⁻¹²⁶ per product and sum,
// which the last term covers.
func bf16Slack(typ gguf.Type, k int, mag float64) float64 {
	if !tierRounding[Active()].BF16 || !bf16Types[typ] {
		return 0
	}
	if Active() == TierNEONBF16 {
		// BFDOT rounds its pair sums and additions to odd: each of the
		// K roundings errs by up to 2u, not u, which doubles the
		// summation term the callers allow (γ_{K+1} of the rounded
		// products, whose magnitudes are within 1+2⁻⁷+2⁻¹⁶ < 1+2⁻⁶ of
		// mag).
		return bf16Err(typ, k, mag) + gamma(k+1)*(1+0x1p-6)*mag
	}
	return bf16Err(typ, k, mag)
}

func bf16Err(typ gguf.Type, k int, mag float64) float64 {
	const ua = 1.0 / 256
	uw := ua
	if typ == gguf.TypeBF16 {
		uw = 0
	}
	e := ua + uw + ua*uw
	return e*mag + gamma(k+1)*e*mag + float64(2*k+2)*0x1p-126
}

// TestBF16DriverGo runs the blocked GEMM with the pair layout on portable
// Go narrowers and a Go microkernel (any CPU) against the float64
// reference with the bfloat16 bound, on the float weight types, odd sizes
// and k tails (odd k pads a pair with a zero), several k slices included.
func TestBF16DriverGo(t *testing.T) {
	g := &gemmTier{
		tile:   tile{kern: microKernelBF16Go(6, 16), mr: 6, nr: 16},
		narrow: &narrower{x: bf16RowsGo, panel: func(p []float32, kc, nr int) { bf16PanelGo(p, kc, nr, 0) }},
	}
	bf16MatMulCheck(t, func(dst, x []float32, m int, w *Matrix, bias []float32) { gemm(dst, x, m, w, bias, g) })
}

// bf16MatMulCheck checks mm against the float64 product of the decoded
// weights within bf16Err on top of the float32 bound.
func bf16MatMulCheck(t *testing.T, mm func(dst, x []float32, m int, w *Matrix, bias []float32)) {
	rng := rand.New(rand.NewPCG(63, 64))
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16} {
		for _, k := range []int{1, 2, 3, 31, 33, 64, 257, 300, 555} {
			for _, n := range []int{1, 17, 33, 130} {
				w := randMatrix(t, typ, n, k, rng)
				for _, m := range []int{1, 13, 14, 15, 30, 33} {
					t.Run(fmt.Sprintf("%s/k%d/n%d/m%d", typ, k, n, m), func(t *testing.T) {
						x := randVec(m*k, rng)
						bias := randVec(n, rng)
						dst := make([]float32, m*n)
						for i := range dst {
							dst[i] = float32(math.NaN())
						}
						mm(dst, x, m, w, bias)
						row := make([]float32, k)
						for j := 0; j < n; j++ {
							decoders[typ].decode(w.Data[j*w.RowBytes():], k, row, 1)
							for i := 0; i < m; i++ {
								var s, mag float64
								for kk, v := range row {
									p := float64(x[i*k+kk]) * float64(v)
									s += p
									mag += math.Abs(p)
								}
								s += float64(bias[j])
								mag += math.Abs(float64(bias[j]))
								tol := gamma(k+1)*mag + u*math.Abs(s) + bf16Err(typ, k, mag)
								if got := float64(dst[i*n+j]); !(math.Abs(got-s) <= tol) {
									t.Fatalf("dst[%d][%d] = %v, want %v ± %.3g", i, j, got, s, tol)
								}
							}
						}
					})
				}
			}
		}
	}
}

// bf16Specials are values whose rounding to bfloat16 has a rule of its
// own: ties, carries into the exponent, infinities, NaNs, denormals.
var bf16Specials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, 1.00390625, 1.01171875, 1.0078125 + 1.0/(1<<16),
	math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)),
	math.Float32frombits(0x7fc00000), math.Float32frombits(0x7f800001), math.Float32frombits(0xff812345),
	math.Float32frombits(0x00000001), math.Float32frombits(0x807fffff), math.Float32frombits(0x00800000),
	math.Float32frombits(0x3f80_8000), math.Float32frombits(0x3f81_8000), math.Float32frombits(0x7f7f_ffff),
}

// checkBF16Rounding checks a vector rounding of activation rows (rows)
// and of nr-wide weight panels (panel) against bf16Round, bit for bit,
// for every length and panel depth around the vector sizes, with the
// special values mixed in.
func checkBF16Rounding(t *testing.T, rows func(dst, src []float32, m, k int), panel func(pan []float32, kc, nr int), nr int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(61, 62))
	for _, k := range []int{1, 2, 7, 8, 9, 31, 32, 33, 64, 95, 300} {
		const m = 3
		src := randVec(m*k, rng)
		for i := range src {
			if rng.IntN(4) == 0 {
				src[i] = bf16Specials[rng.IntN(len(bf16Specials))]
			} else {
				src[i] *= float32(math.Ldexp(1, rng.IntN(60)-30))
			}
		}
		lda := (k + 1) / 2
		got, want := make([]float32, m*lda), make([]float32, m*lda)
		rows(got, src, m, k)
		bf16RowsGo(want, src, m, k)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("rows k=%d: word %d is %#08x, want %#08x (values %v, %v)", k, i, math.Float32bits(got[i]), math.Float32bits(want[i]), src[(i/lda)*k+2*(i%lda)], src[min((i/lda)*k+2*(i%lda)+1, len(src)-1)])
			}
		}
		kc := k
		p1 := make([]float32, kc*nr)
		for i := range p1 {
			p1[i] = src[i%len(src)]
		}
		p2 := append([]float32(nil), p1...)
		panel(p1, kc, nr)
		bf16PanelGo(p2, kc, nr, 0)
		for i := 0; i < (kc+1)/2*nr; i++ {
			if math.Float32bits(p1[i]) != math.Float32bits(p2[i]) {
				t.Fatalf("panel kc=%d: word %d is %#08x, want %#08x", kc, i, math.Float32bits(p1[i]), math.Float32bits(p2[i]))
			}
		}
	}
}
