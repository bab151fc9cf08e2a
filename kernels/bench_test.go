package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vembed/vembed/gguf"
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

// BenchmarkAttention reports GFLOPS of the fused attention, counting the
// 4·headDim flops of the two products per visible (query, key) pair: a
// full-attention vision layer, a windowed one and a causal text layer.
func BenchmarkAttention(b *testing.B) {
	saved := Active()
	defer Use(saved)
	cases := []struct {
		name                 string
		nTok, nHead, nKV, hd int
		mask                 Mask
	}{
		{"vit_full_1024", 1024, 16, 16, 80, Mask{}},
		{"vit_window64_1024", 1024, 16, 16, 80, Mask{Segments: windows(1024, 64)}},
		{"lm_causal_1024", 1024, 16, 2, 128, Mask{Causal: true}},
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for _, tier := range Available() {
		if tier == TierReference {
			continue
		}
		Use(tier)
		for _, c := range cases {
			q := randVec(c.nTok*c.nHead*c.hd, rng)
			k := randVec(c.nTok*c.nKV*c.hd, rng)
			v := randVec(c.nTok*c.nKV*c.hd, rng)
			out := make([]float32, len(q))
			pairs := visiblePairs(c.nTok, c.mask)
			b.Run(fmt.Sprintf("%s/%s", tier, c.name), func(b *testing.B) {
				for b.Loop() {
					Attention(out, q, k, v, c.nTok, c.nHead, c.nKV, c.hd, 0.1, c.mask)
				}
				b.ReportMetric(4*float64(c.hd*c.nHead)*pairs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			})
		}
	}
}

// windows returns segment boundaries of equal windows over n tokens.
func windows(n, size int) []int {
	var s []int
	for i := 0; i < n; i += size {
		s = append(s, i)
	}
	return append(s, n)
}

// visiblePairs counts the (query, key) pairs a mask allows.
func visiblePairs(nTok int, mask Mask) float64 {
	var n float64
	for t := 0; t < nTok; t++ {
		lo, hi := segmentOf(mask.Segments, t, nTok)
		if mask.Causal {
			hi = t + 1
		}
		n += float64(hi - lo)
	}
	return n
}

// BenchmarkDecode reports the portable panel decoders' cost per value,
// written contiguously and with the 16-float stride of a packed panel.
func BenchmarkDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, typ := range allTypes {
		w := randMatrix(b, typ, 1, 256, rng)
		dst := make([]float32, 256*16)
		for _, stride := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/s%d", typ, stride), func(b *testing.B) {
				for b.Loop() {
					decoders[typ].decode(w.Data, 256, dst, stride)
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/256, "ns/value")
			})
		}
	}
}

// BenchmarkElementwise reports ns per value of the elementwise operations
// on a 1024×2048 activation, to set against the GEMMs around them (a
// 2048-wide projection costs 4096 flops per value of its output).
func BenchmarkElementwise(b *testing.B) {
	saved := Active()
	defer Use(saved)
	rng := rand.New(rand.NewPCG(3, 3))
	const rows, dim = 1024, 2048
	x, y, w := randVec(rows*dim, rng), randVec(rows*dim, rng), randVec(dim, rng)
	dst := make([]float32, rows*dim)
	cs, sn := randVec(rows*64, rng), randVec(rows*64, rng)
	ops := []struct {
		name string
		fn   func()
	}{
		{"RMSNorm", func() { RMSNorm(dst, x, w, dim, 1e-6) }},
		{"LayerNorm", func() { LayerNorm(dst, x, w, w, dim, 1e-6) }},
		{"RoPE", func() { RoPE(dst, rows, dim/128, 128, cs, sn) }},
		{"Add", func() { Add(dst, x, y) }},
		{"SwiGLU", func() { SwiGLU(dst, x, y) }},
		{"GELU", func() { copy(dst, x); GELU(dst) }},
		{"QuickGELU", func() { copy(dst, x); QuickGELU(dst) }},
	}
	for _, tier := range Available() {
		if tier == TierReference {
			continue
		}
		Use(tier)
		for _, op := range ops {
			b.Run(fmt.Sprintf("%s/%s", tier, op.name), func(b *testing.B) {
				for b.Loop() {
					op.fn()
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/(rows*dim), "ns/value")
			})
		}
	}
}

// BenchmarkMatMulStreamed reports weights per second of a Q4_K product
// of an LM's FFN shape (N=11008, K=2048) whose weights come from memory,
// not cache, as they do in a pass over a whole model: 16 matrices (200
// MB) used in turn. M=27 is a short query, where decoding the weights is
// most of the work; M=432 a batch of sixteen.
func BenchmarkMatMulStreamed(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const k, n = 2048, 11008
	ws := make([]*Matrix, 16)
	for i := range ws {
		ws[i] = randMatrix(b, gguf.TypeQ4_K, n, k, rng)
	}
	for _, m := range []int{27, 432} {
		x := randVec(m*k, rng)
		dst := make([]float32, m*n)
		b.Run(fmt.Sprintf("M%d", m), func(b *testing.B) {
			i := 0
			for b.Loop() {
				MatMul(dst, x, m, ws[i%len(ws)], nil)
				i++
			}
			b.ReportMetric(float64(n)*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
		})
	}
}
