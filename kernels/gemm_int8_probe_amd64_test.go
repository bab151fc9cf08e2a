//go:build linux

package kernels

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/vembed/vembed/gguf"
)

// BenchmarkInt8Probe times candidate integer inner loops against the FMA
// peak of the same run, in MACs per FMA-MAC (an FMA is 8 MACs): above 1 an
// integer loop multiplies faster than the f32 microkernel can at best.
// (a) maddwd6x16: int16 pairs, VPMADDWD + VPADDD per k pair, 6x16 tile;
// (b) maddubsw4x16: u8×s8 VPMADDUBSW, VPMADDWD by ones, VPADDD per four k;
// (c) maddubswI16: eight VPMADDUBSW summed in int16 before one VPMADDWD.
//
// Measured on the 2-core Zen 3 (one thread; least time of 2000 runs, the
// machine being shared): (a) 1.42, (b) 1.73, (c) 2.06 times the FMA MAC
// rate. The loops are bound by the two vector multiply pipes and by
// instructions issued, so MACs per multiply instruction and per
// instruction decide. The tier uses (c)'s idea on a 3x16 tile (int16 sums
// over four k steps for weights within ±16, two within ±32:
// kernelU8x3x16), and (a) for the 8-bit and codebook types, whose values
// would saturate VPMADDUBSW.
func BenchmarkInt8Probe(b *testing.B) {
	if !hasAVX2 {
		b.Skip("needs AVX2")
	}
	peak, _ := FMAPeak(1, 200*time.Millisecond)
	a16 := make([]int16, 64)
	b16 := make([]int16, 64)
	a8 := make([]int8, 64)
	b8 := make([]uint8, 256)
	cases := []struct {
		name string
		macs float64
		run  func(n int)
	}{
		{"maddwd6x16", 192, func(n int) { probeMaddwd6x16(n, &a16[0], &b16[0]) }},
		{"maddubsw4x16", 256, func(n int) { probeMaddubsw4x16(n, &a8[0], &b8[0]) }},
		{"maddubswI16", 1024, func(n int) { probeMaddubswI16(n, &a8[0], &b8[0]) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			const chunk = 1 << 12
			for b.Loop() {
				c.run(chunk)
			}
			gmacs := c.macs * chunk * float64(b.N) / b.Elapsed().Seconds() / 1e9
			b.ReportMetric(gmacs/(peak/2), "xFMA")
		})
	}
}

// BenchmarkI8Kernel times the integer microkernels and the float32 one
// alone on 256-deep slices of one L1-resident panel by 384 rows, in GMACs:
// their ratio is the most the integer tier can gain over the float32 one.
func BenchmarkI8Kernel(b *testing.B) {
	if !hasAVX2 {
		b.Skip("needs AVX2")
	}
	const kc, rows = gemmKC, 384
	nb := kc / i8Block
	f := make([]float32, nb*i8PanelF)
	tile := make([]float32, max(i8Rows, s8Rows)*gemmNR)
	c := make([]float32, rows*gemmNR)
	macs := float64(rows * gemmNR * kc)
	report := func(b *testing.B) {
		b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMACs")
	}
	a16 := make([]int16, rows*kc)
	ds := make([]float32, rows*2*nb)
	p16 := make([]int16, nb*i8PanelK)
	b.Run("int16", func(b *testing.B) {
		for b.Loop() {
			kernelI16AVX2(rows/i8Rows, nb, a16, i8Rows*kc, ds, i8Rows*2*nb, p16, f, tile, c, gemmNR, i8FlagAcc|i8FlagMin)
		}
		report(b)
	})
	a8 := make([]uint8, rows*kc)
	p8 := make([]int8, nb*u8Panel)
	aux := make([]int32, nb*u8Aux)
	for _, flags := range []int{i8FlagAcc | i8FlagMin | u8FlagSteps4, i8FlagAcc} {
		b.Run(fmt.Sprintf("u8/flags%d", flags), func(b *testing.B) {
			for b.Loop() {
				kernelU8AVX2(rows/u8Rows, nb, a8, u8Rows*kc, ds, u8Rows*2*nb, p8, aux, f, tile, c, gemmNR, flags)
			}
			report(b)
		})
	}
	b.Run("s8", func(b *testing.B) {
		for b.Loop() {
			kernelS8AVX2(rows/s8Rows, nb, a8, s8Rows*kc, ds, s8Rows*2*nb, p8, aux, f, tile, c, gemmNR, i8FlagAcc|i8FlagMin)
		}
		report(b)
	})
	a32 := make([]float32, rows*kc)
	p32 := make([]float32, kc*gemmNR)
	b.Run("f32", func(b *testing.B) {
		for b.Loop() {
			for i := 0; i < rows; i += gemmMR {
				microKernelAVX2(kc, a32[i*kc:], kc, p32, c[i*gemmNR:], gemmNR, true)
			}
		}
		report(b)
	})
}

// BenchmarkInt8Ratio reports, per weight type and height, how much faster
// the integer product is than the avx2 tier's float32 product of the same
// inputs, in one run: the two alternate and each keeps its least process
// CPU time (on a shared machine wall time mostly measures the neighbours;
// CPU time of the minimum run is the least disturbed figure). K=N=2048
// and M=512, 32 and 16 (the default row threshold); the integer path is
// called directly, past the tier's row threshold.
func BenchmarkInt8Ratio(b *testing.B) {
	if !hasAVX2 {
		b.Skip("needs AVX2")
	}
	saved := Active()
	defer Use(saved)
	Use(TierAVX2)
	_, au8 := archIntKernels()
	ai8, _ := archIntKernels()
	rng := rand.New(rand.NewPCG(9, 9))
	const k, n = 2048, 2048
	for _, typ := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ5_K, gguf.TypeQ3_K, gguf.TypeQ4_0,
		gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeQ8_K, gguf.TypeQ2_K} {
		w := randMatrix(b, typ, n, k, rng)
		for _, m := range []int{512, 32, 16} {
			x := randVec(m*k, rng)
			dst := make([]float32, m*n)
			b.Run(fmt.Sprintf("%s/M%d", typ, m), func(b *testing.B) {
				bestF, bestI := time.Duration(1<<62), time.Duration(1<<62)
				for b.Loop() {
					t0 := cpuTime()
					MatMul(dst, x, m, w, nil)
					t1 := cpuTime()
					if _, ok := u8Decoders[typ]; ok {
						gemmU8(dst, x, m, w, nil, au8["avx2"])
					} else {
						gemmInt8(dst, x, m, w, nil, ai8["avx2"])
					}
					t2 := cpuTime()
					bestF, bestI = min(bestF, t1-t0), min(bestI, t2-t1)
				}
				b.ReportMetric(float64(bestF)/float64(bestI), "int8/f32")
				b.ReportMetric(2*float64(m)*k*n/bestI.Seconds()/1e9, "int8-GFLOPS/CPU")
			})
		}
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
