package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// needTier skips the test when the CPU lacks tier, saying so, and makes it
// active until the test ends.
func needTier(t *testing.T, tier Tier) {
	t.Helper()
	if !slices.Contains(Available(), tier) {
		t.Skipf("tier %s is not available on this CPU (have %v)", tier, Available())
	}
	saved := Active()
	t.Cleanup(func() { Use(saved) })
}

// TestAVX512MatchesAVX2 checks that the avx512 tier's float32 products are
// bit for bit avx2's on every weight type, for sizes around both tiles'
// heights and widths and k lengths with tails: both accumulate every
// output in k order by FMA per k slice, so any difference is a bug in a
// tile, a packer or the edge handling.
func TestAVX512MatchesAVX2(t *testing.T) {
	needTier(t, TierAVX512)
	rng := rand.New(rand.NewPCG(51, 52))
	for _, typ := range allTypes {
		ks := []int{1, 7, 33, 300, 520}
		switch typ.BlockSize() {
		case 32:
			ks = []int{32, 288}
		case 256:
			ks = []int{256, 768}
		}
		for _, k := range ks {
			for _, n := range []int{1, 17, 33, 161} {
				w := randMatrix(t, typ, n, k, rng)
				bias := randVec(n, rng)
				for _, m := range []int{1, 13, 14, 15, 43} {
					x := randVec(m*k, rng)
					run := func(tier Tier) []float32 {
						Use(tier)
						dst := make([]float32, m*n)
						MatMul(dst, x, m, w, bias)
						return dst
					}
					sameBits(t, fmt.Sprintf("%s k%d n%d m%d", typ, k, n, m), run(TierAVX512), run(TierAVX2))
				}
			}
		}
	}
}

// TestAVX512AttentionMatchesAVX2 checks the attention on the avx512 tile
// against avx2's, bit for bit, for head sizes that fill the 32-wide panels
// or not (80 is the Qwen2-VL vision head) and query counts around the
// tile height.
func TestAVX512AttentionMatchesAVX2(t *testing.T) {
	needTier(t, TierAVX512)
	rng := rand.New(rand.NewPCG(53, 54))
	for _, c := range []struct{ nTok, nHead, nKV, hd int }{{1, 2, 1, 16}, {29, 4, 2, 24}, {200, 2, 2, 80}, {131, 4, 1, 128}, {75, 3, 3, 48}, {attnBK + 45, 2, 1, 80}} {
		qs, ks := c.nHead*c.hd, c.nKV*c.hd
		q, k, v := randVec(c.nTok*qs, rng), randVec(c.nTok*ks, rng), randVec(c.nTok*ks, rng)
		scale := float32(1 / math.Sqrt(float64(c.hd)))
		masks := []Mask{{}, {Causal: true}}
		if c.nTok > 10 {
			masks = append(masks, Mask{Segments: []int{0, 5, c.nTok / 2, c.nTok}}, Mask{Segments: windows(c.nTok, 64)})
		}
		for _, mask := range masks {
			run := func(tier Tier) []float32 {
				Use(tier)
				out := make([]float32, c.nTok*qs)
				Attention(out, q, k, v, c.nTok, c.nHead, c.nKV, c.hd, scale, mask)
				return out
			}
			sameBits(t, fmt.Sprintf("%+v %+v", c, mask), run(TierAVX512), run(TierAVX2))
		}
	}
}

// BenchmarkFloatKernel runs each float tile's microkernel alone over 384
// rows and one panel of k = gemmKC (or gemmKC pairs for bfloat16) held in
// L1 and L2, the ceiling of the blocked GEMM: GFLOPS of wall time, and per
// CPU-second, which other load on the machine disturbs less. On Zen 5
// each reached 96% of its instruction's per-core peak per CPU-second
// (avx2 120, avx512 243, avx512-bf16 475 GFLOPS).
func BenchmarkFloatKernel(b *testing.B) {
	const kc, rows = gemmKC, 384
	a := randVec(rows*kc, rand.New(rand.NewPCG(1, 2)))
	for _, c := range []struct {
		name string
		ok   bool
		t    tile
		mul  int // flops per k step and output: 2, or 4 for a pair
	}{
		{"avx2/6x16", hasAVX2, avx2Tile, 2},
		{"avx512/8x32", hasAVX512, avx512Tile, 2},
		{"avx512-bf16/8x32", hasAVX512BF16, bf16GEMM.tile, 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			if !c.ok {
				b.Skip("not on this CPU")
			}
			p := randVec(kc*c.t.nr, rand.New(rand.NewPCG(3, 4)))
			if c.mul == 4 {
				for i := range p {
					p[i] = math.Float32frombits(bf16Round(p[i]) * 0x10001)
				}
			}
			out := make([]float32, rows*c.t.nr)
			c0 := cpuTime()
			for b.Loop() {
				for i := 0; i < rows; i += c.t.mr {
					c.t.kern(kc, a[i*kc:], kc, p, out[i*c.t.nr:], c.t.nr, true)
				}
			}
			flops := float64(c.mul*rows*c.t.nr*kc) * float64(b.N)
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOPS")
			b.ReportMetric(flops/(cpuTime()-c0).Seconds()/1e9, "GFLOPS/cpu-s")
		})
	}
}

// TestArithmeticNames checks which tiers declare the same arithmetic:
// those whose bit-identity the tests prove (avx512 with avx2, the VNNI
// tiers with avx2-int8) and no others.
func TestArithmeticNames(t *testing.T) {
	saved := Active()
	defer Use(saved)
	names := map[Tier]string{}
	for _, tier := range Available() {
		if err := Use(tier); err != nil {
			t.Fatal(err)
		}
		names[tier] = Arithmetic()
		if names[tier] == "" {
			t.Errorf("tier %s names no arithmetic", tier)
		}
	}
	same := [][2]Tier{{TierAVX512, TierAVX2}, {TierAVX512VNNI, TierAVX2Int8}, {TierAVXVNNI, TierAVX2Int8}}
	for _, p := range same {
		a, okA := names[p[0]]
		b, okB := names[p[1]]
		if okA && okB && a != b {
			t.Errorf("%s computes %q, %s %q: want the same", p[0], a, p[1], b)
		}
	}
	different := [][2]Tier{{TierAVX2, TierAVX2Int8}, {TierAVX512BF16, TierAVX512VNNI}, {TierAVX512BF16, TierAVX512}, {TierGeneric, TierAVX2}, {TierReference, TierGeneric}}
	for _, p := range different {
		a, okA := names[p[0]]
		b, okB := names[p[1]]
		if okA && okB && a == b {
			t.Errorf("%s and %s both compute %q: their results differ", p[0], p[1], a)
		}
	}
}

// TestSoftmaxVec512MatchesAVX2 checks the avx512 tier's zmm scaleMax and
// expSum against the AVX2 ones bit for bit (values and returned maximum or
// sum), on lengths around the 8- and 16-value groups, over exp's whole
// range with -Inf, NaN, zeros of both signs and inputs past its clamps.
func TestSoftmaxVec512MatchesAVX2(t *testing.T) {
	needTier(t, TierAVX512)
	rng := rand.New(rand.NewPCG(55, 56))
	special := []float32{float32(math.Inf(-1)), float32(math.NaN()), 0, float32(math.Copysign(0, -1)), -1000, 100, -87.5, 88.5}
	for n := 0; n <= 70; n++ {
		for round := 0; round < 4; round++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = (rng.Float32() - 0.5) * 200
				if round == 3 && rng.IntN(4) == 0 {
					x[i] = special[rng.IntN(len(special))]
				}
			}
			s := rng.Float32() * 2
			a, b := slices.Clone(x), slices.Clone(x)
			ma, mb := scaleMaxVec512(a, s), scaleMaxVec(b, s)
			sameBits(t, fmt.Sprintf("scaleMax n%d round%d", n, round), a, b)
			sameBits(t, fmt.Sprintf("scaleMax n%d round%d max", n, round), []float32{ma}, []float32{mb})
			sub := x[0:min(1, n)]
			var m float32
			if len(sub) > 0 {
				m = sub[0]
			}
			a, b = slices.Clone(x), slices.Clone(x)
			sa, sb := expSumVec512(a, m), expSumVec(b, m)
			sameBits(t, fmt.Sprintf("expSum n%d round%d", n, round), a, b)
			sameBits(t, fmt.Sprintf("expSum n%d round%d sum", n, round), []float32{sa}, []float32{sb})
		}
	}
	// The row kernels: each row as the one-row AVX2 functions give it,
	// the values between rows (ld > n) untouched.
	for _, n := range []int{8, 16, 24, 64, 136} {
		for _, rows := range []int{1, 7, 8, 13} {
			ld := n + 8*rng.IntN(3)
			x := make([]float32, rows*ld)
			for i := range x {
				x[i] = (rng.Float32() - 0.5) * 200
				if rng.IntN(8) == 0 {
					x[i] = special[rng.IntN(len(special))]
				}
			}
			s := rng.Float32() * 2
			a, b := slices.Clone(x), slices.Clone(x)
			maxes, subs, sums := make([]float32, rows), make([]float32, rows), make([]float32, rows)
			scaleMaxRows512(a, ld, rows, n, s, maxes)
			for r := range rows {
				m := scaleMaxVec(b[r*ld:r*ld+n], s)
				sameBits(t, fmt.Sprintf("scaleMaxRows n%d rows%d max %d", n, rows, r), maxes[r:r+1], []float32{m})
				subs[r] = max(m, -1)
			}
			sameBits(t, fmt.Sprintf("scaleMaxRows n%d rows%d", n, rows), a, b)
			expSumRows512(a, ld, rows, n, subs, sums)
			for r := range rows {
				sum := expSumVec(b[r*ld:r*ld+n], subs[r])
				sameBits(t, fmt.Sprintf("expSumRows n%d rows%d sum %d", n, rows, r), sums[r:r+1], []float32{sum})
			}
			sameBits(t, fmt.Sprintf("expSumRows n%d rows%d", n, rows), a, b)
		}
	}

	const n = 1 << 16
	x := make([]float32, n)
	for i := range x {
		x[i] = -90 + 180*float32(i)/n
	}
	a, b := slices.Clone(x), slices.Clone(x)
	sameBits(t, "expSum sweep sum", []float32{expSumVec512(a, 0)}, []float32{expSumVec(b, 0)})
	sameBits(t, "expSum sweep", a, b)
}
