package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkFMAPeak reports the machine's FMA peak for 1 and 2 threads in the
// same run as the GEMM benchmarks, so their GFLOPS read as a fraction of it.
func BenchmarkFMAPeak(b *testing.B) {
	for _, th := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads%d", th), func(b *testing.B) {
			var g float64
			for b.Loop() {
				var ok bool
				if g, ok = FMAPeak(th, 100*time.Millisecond); !ok {
					b.Skip("no FMA probe for this CPU")
				}
			}
			b.ReportMetric(g, "GFLOPS")
		})
	}
}

// BenchmarkMatMul reports GFLOPS per tier, weight type and shape:
// M=512, K=N=2048 (prefill of an image or a batch) and M=32 (a short text).
func BenchmarkMatMul(b *testing.B) {
	saved := Active()
	defer Use(saved)
	rng := rand.New(rand.NewPCG(1, 1))
	const k, n = 2048, 2048
	for _, tier := range Available() {
		if tier == TierReference {
			continue
		}
		Use(tier)
		for _, typ := range allTypes {
			w := randMatrix(b, typ, n, k, rng)
			for _, m := range []int{512, 32} {
				x := randVec(m*k, rng)
				dst := make([]float32, m*n)
				b.Run(fmt.Sprintf("%s/%s/M%d", tier, typ, m), func(b *testing.B) {
					for b.Loop() {
						MatMul(dst, x, m, w, nil)
					}
					b.ReportMetric(2*float64(m)*k*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
				})
			}
		}
	}
}
