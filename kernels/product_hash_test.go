package kernels

import (
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/vembed/vembed/gguf"
)

// productHash hashes the active tier's MatMul results by weights of the
// given types on fixed inputs: edge heights, widths and depths (tails of
// every row group, panel and k slice), with and without bias.
func productHash(t testing.TB, types []gguf.Type) uint64 {
	h := fnv.New64a()
	rng := rand.New(rand.NewPCG(91, 92))
	var buf [4]byte
	for _, typ := range types {
		ks := []int{33, 300}
		switch typ.BlockSize() {
		case 32:
			ks = []int{32, 288}
		case 256:
			ks = []int{256, 512}
		}
		for _, k := range ks {
			for _, n := range []int{17, 40} {
				w := randMatrix(t, typ, n, k, rng)
				w.BF16 = false // the bfloat16 tiers' products have their own bound
				for _, m := range []int{1, 5, 13} {
					x := randVec(m*k, rng)
					var bias []float32
					if m != 5 {
						bias = randVec(n, rng)
					}
					dst := make([]float32, m*n)
					MatMul(dst, x, m, w, bias)
					for _, v := range dst {
						b := math.Float32bits(v)
						buf[0], buf[1], buf[2], buf[3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
						h.Write(buf[:])
					}
				}
			}
		}
	}
	return h.Sum64()
}

// The products' bits on every architecture, recorded on x86: the float
// weights' float32 products of avx2 (and avx512, and neon, whose kernels
// sum each output in the same k order with fused multiply-adds) and the
// quantized weights' integer products of avx2-int8 (and of every integer
// tier: VNNI, AMX, SDOT, SMMLA). VEMBED_ARITH_RECORD=1 prints them.
const (
	floatProductHash = 0xad9f9c35f88c8db8
	int8ProductHash  = 0x5df68ba4a611e3de
)

// TestProductHash checks that each tier this CPU runs computes the
// recorded bits: float32 products by float weights on the tiers whose
// float products are avx2's, and products by the integer types on every
// integer tier. Recorded on x86 and checked on arm64, it ties the arm64
// tiers' products bit for bit to the x86 tiers' (issue: vectors from a
// Graviton and a Xeon must agree).
func TestProductHash(t *testing.T) {
	saved := Active()
	defer Use(saved)
	floats := []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16}
	ints := slices.Sorted(maps.Keys(int8Types))
	record := os.Getenv("VEMBED_ARITH_RECORD") != ""
	checked := 0
	for _, tier := range Available() {
		p, _ := TierProducts(tier)
		if err := Use(tier); err != nil {
			t.Fatal(err)
		}
		check := func(kind string, types []gguf.Type, want uint64, of Tier) {
			got := productHash(t, types)
			if record {
				t.Logf("%s: %s products %#x", tier, kind, got)
			} else if got != want {
				t.Errorf("%s: %s products hash to %#x, %s's to %#x", tier, kind, got, of, want)
			}
			checked++
		}
		if p.Float == TierAVX2 || p.Float == TierAVX512 || p.Float == TierNEON {
			check("float", floats, floatProductHash, TierAVX2)
		}
		if tierRounding[tier].Int8 {
			check("integer", ints, int8ProductHash, TierAVX2Int8)
		}
	}
	if checked == 0 {
		t.Skip("no tier of this CPU has recorded product bits")
	}
}
