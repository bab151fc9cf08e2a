package eval

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkScore times exact MaxSim search at a ViDoRe-like shape (32
// queries of 20 vectors against 64 pages of 512, width 128) through
// kernels.MatMul, and the same scores by direct float64 loops.
func BenchmarkScore(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var qs, ds []Vectors
	for range 32 {
		qs = append(qs, Vectors{Multi: randRows(rng, 20, 128)})
	}
	for range 64 {
		ds = append(ds, Vectors{Multi: randRows(rng, 512, 128)})
	}
	flops := float64(2 * 32 * 20 * 64 * 512 * 128)
	b.Run("matmul", func(b *testing.B) {
		for b.Loop() {
			if _, err := Score(qs, ds, true); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
	})
	b.Run("loops", func(b *testing.B) {
		for b.Loop() {
			for _, q := range qs {
				for _, d := range ds {
					var total float64
					for _, qv := range q.Multi {
						best := math.Inf(-1)
						for _, dv := range d.Multi {
							var s float64
							for k := range qv {
								s += float64(qv[k]) * float64(dv[k])
							}
							best = max(best, s)
						}
						total += best
					}
					_ = total
				}
			}
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
	})
}
