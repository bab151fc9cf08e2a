package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// needBF16 skips the test on CPUs without AVX512_BF16, saying so.
func needBF16(t *testing.T) {
	t.Helper()
	if !hasAVX512BF16 {
		t.Skip("the CPU has no AVX512_BF16 (or AVX-512 BW): the avx512-bf16 tier is verified only where it runs")
	}
}

// TestBF16RoundingMatchesGo checks the AVX-512 rounding of activation
// rows and weight panels against bf16Round (checkBF16Rounding).
func TestBF16RoundingMatchesGo(t *testing.T) {
	needBF16(t)
	checkBF16Rounding(t, bf16RowsAVX512, bf16PanelAVX512, avx512NR)
}

// TestMatMulBF16 checks the avx512-bf16 tier's products by float weights
// against the float64 reference within the bfloat16 bound (bf16Err), on
// every float type, odd sizes and k tails.
func TestMatMulBF16(t *testing.T) {
	needBF16(t)
	needTier(t, TierAVX512BF16)
	Use(TierAVX512BF16)
	bf16MatMulCheck(t, MatMul)
}

// TestBF16PairPackingMatches checks that packing eight rows straight to
// bfloat16 pairs (pack16, with the Go tails) gives the bits of decoding
// to float32 panels and rounding them, on every float type, odd k (tails
// under 16 values and odd pair counts), column counts short of eight
// rows, and several k slices.
func TestBF16PairPackingMatches(t *testing.T) {
	needBF16(t)
	old := *bf16GEMM
	nw := *old.narrow
	nw.pack16 = nil
	old.narrow = &nw
	rng := rand.New(rand.NewPCG(65, 66))
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16} {
		for _, k := range []int{1, 15, 16, 17, 33, 256, 300, 527} {
			for _, n := range []int{1, 7, 8, 9, 33, 130} {
				w := randMatrix(t, typ, n, k, rng)
				const m = 17
				x := randVec(m*k, rng)
				got, want := make([]float32, m*n), make([]float32, m*n)
				gemm(got, x, m, w, nil, bf16GEMM)
				gemm(want, x, m, w, nil, &old)
				sameBits(t, fmt.Sprintf("%s k%d n%d", typ, k, n), got, want)
			}
		}
	}
}

// TestBF16OnlyMarkedWeights checks that the avx512-bf16 tier multiplies
// in bfloat16 only the weights a model marks (Matrix.BF16): an unmarked
// float weight gives the bits of the tier it is built on, a marked one
// the bfloat16 product, which differs.
func TestBF16OnlyMarkedWeights(t *testing.T) {
	needBF16(t)
	needTier(t, TierAVX512BF16)
	base := TierAVX512
	if slices.Contains(Available(), TierAVX512VNNI) {
		base = TierAVX512VNNI
	}
	rng := rand.New(rand.NewPCG(67, 68))
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16} {
		const m, n, k = 19, 45, 301
		w := randMatrix(t, typ, n, k, rng)
		x := randVec(m*k, rng)
		run := func(tier Tier, marked bool) []float32 {
			if err := Use(tier); err != nil {
				t.Fatal(err)
			}
			w.BF16 = marked
			out := make([]float32, m*n)
			MatMul(out, x, m, w, nil)
			return out
		}
		sameBits(t, fmt.Sprintf("%s unmarked", typ), run(TierAVX512BF16, false), run(base, false))
		narrow, wide := run(TierAVX512BF16, true), run(base, true)
		same := true
		for i := range narrow {
			same = same && math.Float32bits(narrow[i]) == math.Float32bits(wide[i])
		}
		if same {
			t.Errorf("%s: a marked weight gave float32 bits on avx512-bf16", typ)
		}
	}
}

// TestBF16MarkedQuantizedTakeBase checks that the avx512-bf16 tier leaves
// quantized weights to the tier it is built on even when a model marks
// them (a vision tower's MLP stored quantized): only float weights may be
// multiplied in bfloat16, so a marked quantized weight gives the base
// tier's bits, Q2_K's float32 product of the minimums included.
func TestBF16MarkedQuantizedTakeBase(t *testing.T) {
	needBF16(t)
	needTier(t, TierAVX512BF16)
	base := TierAVX512
	if slices.Contains(Available(), TierAVX512VNNI) {
		base = TierAVX512VNNI
	}
	rng := rand.New(rand.NewPCG(69, 70))
	for _, typ := range []gguf.Type{gguf.TypeQ2_K, gguf.TypeQ4_K, gguf.TypeQ8_0} {
		const m, n, k = 19, 45, 512
		w := randMatrix(t, typ, n, k, rng) // marked BF16
		x, bias := randVec(m*k, rng), randVec(n, rng)
		run := func(tier Tier) []float32 {
			if err := Use(tier); err != nil {
				t.Fatal(err)
			}
			out := make([]float32, m*n)
			MatMul(out, x, m, w, bias)
			return out
		}
		sameBits(t, fmt.Sprintf("%s marked", typ), run(TierAVX512BF16), run(base))
	}
}
