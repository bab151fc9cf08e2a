package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestRowDecodersAVX2 checks the assembly row decoders bit for bit against
// gguf.Dequantize.
func TestRowDecodersAVX2(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	checkRowDecoders(t, rowDecodersAVX2)
}

// BenchmarkRowDecodersAVX2 reports ns per value of the assembly row
// decoders, to set against BenchmarkDecode's portable ones.
func BenchmarkRowDecodersAVX2(b *testing.B) {
	if !hasAVX2 {
		b.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, typ := range allTypes {
		dec, ok := rowDecodersAVX2[typ]
		if !ok {
			continue
		}
		w := randMatrix(b, typ, 1, 2048, rng)
		dst := make([]float32, 2048)
		b.Run(typ.String(), func(b *testing.B) {
			for b.Loop() {
				dec(w.Data, 2048, dst)
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/2048, "ns/value")
		})
	}
}

// BenchmarkIntRowDecodersAVX2 reports ns per value of the integer tiers'
// row decoders with assembly (the int16 path's and the VNNI tiers'), over
// a row of 2048 values.
func BenchmarkIntRowDecodersAVX2(b *testing.B) {
	if !hasAVX2 {
		b.Skip("no AVX2")
	}
	const n = 2048
	rng := rand.New(rand.NewPCG(2, 2))
	fd, fm := make([]float32, n/16), make([]float32, n/16)
	for _, typ := range allTypes {
		w := randMatrix(b, typ, 1, n, rng)
		if dec, ok := i8RowsAVX2[typ]; ok {
			q := make([]int16, n)
			b.Run("i16/"+typ.String(), func(b *testing.B) {
				for b.Loop() {
					dec(w.Data, n, q, fd, fm, 1)
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/n, "ns/value")
			})
		}
		if dec, ok := vnniRowsAVX2[typ]; ok {
			q, mul, sum := make([]int8, n), make([]int16, n/16), make([]int32, n/16)
			b.Run("vnni/"+typ.String(), func(b *testing.B) {
				for b.Loop() {
					dec(w.Data, n, q, fd, fm, 1, mul, sum)
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/n, "ns/value")
			})
		}
	}
}
