package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vembed/vembed/gguf"
)

// BenchmarkQ2KRatio reports, per integer GEMM and height, how much faster
// the integer product by Q2_K weights is than a float32 tier's product of
// the same inputs, in one run: the two alternate and each keeps its least
// process CPU time (as BenchmarkInt8Ratio). The pairs are each integer
// tier against the float32 products it would otherwise run (avx2-int8
// takes avx512's on AVX-512 CPUs, avx2's elsewhere; avx-vnni CPUs have no
// AVX-512). K=N=2048.
func BenchmarkQ2KRatio(b *testing.B) {
	if !hasAVX2 {
		b.Skip("needs AVX2")
	}
	_, au8 := archIntKernels()
	avx2 := &gemmTier{tile: avx2Tile, rowDecode: rowDecodersAVX2, transpose8: transpose8AVX2}
	type pair struct {
		name  string
		ok    bool
		int8  func(dst, x []float32, m int, w *Matrix)
		float *gemmTier
	}
	u8 := func(dst, x []float32, m int, w *Matrix) { gemmU8(dst, x, m, w, nil, au8["avx2"]) }
	vnni := func(g *vnniTier) func(dst, x []float32, m int, w *Matrix) {
		return func(dst, x []float32, m int, w *Matrix) { gemmVNNI(dst, x, m, w, nil, g) }
	}
	pairs := []pair{
		{"avx2-int8/avx2", true, u8, avx2},
		{"avx2-int8/avx512", hasAVX512, u8, avx512GEMM},
		{"avx512-vnni/avx512", hasAVX512VNNI, vnni(vnniAVX512), avx512GEMM},
		{"avx-vnni/avx2", hasAVXVNNI, vnni(vnniAVX), avx2},
	}
	rng := rand.New(rand.NewPCG(9, 9))
	const k, n = 2048, 2048
	w := randMatrix(b, gguf.TypeQ2_K, n, k, rng)
	for _, p := range pairs {
		for _, m := range []int{512, 32, 8, 1} {
			x := randVec(m*k, rng)
			dst := make([]float32, m*n)
			b.Run(fmt.Sprintf("%s/M%d", p.name, m), func(b *testing.B) {
				if !p.ok {
					b.Skip("not on this CPU")
				}
				bestF, bestI := time.Duration(1<<62), time.Duration(1<<62)
				for b.Loop() {
					t0 := cpuTime()
					gemm(dst, x, m, w, nil, p.float)
					t1 := cpuTime()
					p.int8(dst, x, m, w)
					t2 := cpuTime()
					bestF, bestI = min(bestF, t1-t0), min(bestI, t2-t1)
				}
				b.ReportMetric(float64(bestF)/float64(bestI), "int8/f32")
				b.ReportMetric(2*float64(m)*k*n/bestI.Seconds()/1e9, "int8-GOPS/CPU")
			})
		}
	}
}

// TestQ2KMinimumsFloatTiers checks that the avx2-int8 tier's Q2_K
// products are the same bits whichever float32 GEMM computes the
// minimums' product: avx512's, which every integer tier takes on AVX-512
// CPUs, and avx2's, which they take on AVX2-only ones (and whose results
// the tier's arithmetic name, shared by both kinds of CPU, promises). The
// depths reach past one k slice of the minimums' product (gemmKC halves,
// K = 4096) and the widths and heights past both float tiles' edges.
func TestQ2KMinimumsFloatTiers(t *testing.T) {
	if !hasAVX512 {
		t.Skip("needs AVX-512 for the avx512 float32 GEMM")
	}
	_, au8 := archIntKernels()
	avx2 := &gemmTier{tile: avx2Tile, rowDecode: rowDecodersAVX2, transpose8: transpose8AVX2}
	saved := halfMinGEMM
	t.Cleanup(func() { halfMinGEMM = saved })
	rng := rand.New(rand.NewPCG(61, 62))
	for _, k := range []int{256, 4352, 8960} {
		for _, n := range []int{1, 17, 33, 161} {
			w := randMatrix(t, gguf.TypeQ2_K, n, k, rng)
			for _, m := range []int{1, 7, 13, 43} {
				x := randVec(m*k, rng)
				var bias []float32
				if m%2 == 1 {
					bias = randVec(n, rng)
				}
				run := func(g *gemmTier) []float32 {
					halfMinGEMM = g
					dst := make([]float32, m*n)
					gemmU8(dst, x, m, w, bias, au8["avx2"])
					return dst
				}
				sameBits(t, fmt.Sprintf("k%d n%d m%d", k, n, m), run(avx2), run(avx512GEMM))
			}
		}
	}
}
