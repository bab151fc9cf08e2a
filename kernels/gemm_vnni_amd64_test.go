package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/vembed/vembed/gguf"
)

// BenchmarkVNNIPeak reports the VPDPBUSD peaks (Peak: zmm and the ymm
// AVX-VNNI form) on one thread and on GOMAXPROCS, beside which
// BenchmarkVNNIKernel's rates read.
func BenchmarkVNNIPeak(b *testing.B) {
	for _, u := range []PeakUnit{PeakVNNI512, PeakVNNI256} {
		for _, th := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/threads%d", u, th), func(b *testing.B) {
				var g float64
				for b.Loop() {
					p, ok := Peak(u, th, 100*time.Millisecond)
					if !ok {
						b.Skip("not on this CPU")
					}
					g = p
				}
				b.ReportMetric(g, "GOPS")
			})
		}
	}
}

// BenchmarkVNNIKernel reports the VNNI kernels' rate on one k slice of
// panels in L1 and 384 activation rows (as BenchmarkI8Kernel does for the
// AVX2 ones), in GMAC/s (one MAC is two of the peak's operations).
func BenchmarkVNNIKernel(b *testing.B) {
	const kc, rows = gemmKC, 384
	nb := kc / i8Block
	a := make([]uint8, rows*kc)
	ds := make([]float32, rows*2*nb)
	run := func(name string, ok bool, k vnniKernel, r, span, flags int) {
		b.Run(name, func(b *testing.B) {
			if !ok {
				b.Skip("not on this CPU")
			}
			p := make([]int8, span*nb*vnniPanel)
			aux := make([]int32, span*nb*vnniAux)
			f := make([]float32, span*nb*vnniPanelF)
			t := make([]float32, r*span*vnniNR)
			c := make([]float32, rows*span*vnniNR)
			for b.Loop() {
				k(rows/r, nb, a, r*kc, ds, r*2*nb, p, aux, f, t, c, span*vnniNR, flags)
			}
			b.ReportMetric(float64(rows*span*vnniNR*kc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMACs")
		})
	}
	for _, flags := range []int{i8FlagAcc, i8FlagAcc | i8FlagMin} {
		run(fmt.Sprintf("avx512/unit/flags%d", flags), hasAVX512VNNI, vnniAsm(6, 2, kernelVNNIUnit6x32), 6, 2, flags)
		run(fmt.Sprintf("avx512/tile-in-memory/flags%d", flags), hasAVX512VNNI, vnniAsm(6, 2, kernelVNNI6x32), 6, 2, flags)
		run(fmt.Sprintf("avx512/mul/flags%d", flags), hasAVX512VNNI, vnniAsm(6, 2, kernelVNNI6x32), 6, 2, flags|vnniFlagMul)
		run(fmt.Sprintf("avx/unit/flags%d", flags), hasAVXVNNI, vnniAsm(6, 1, kernelAVXVNNI6x16), 6, 1, flags)
		run(fmt.Sprintf("avx/mul/flags%d", flags), hasAVXVNNI, vnniAsm(3, 1, kernelAVXVNNI3x16), 3, 1, flags|vnniFlagMul)
	}
}

// BenchmarkVNNIPanelDecode compares, for Q8_0, Q4_K and Q6_K on the avx512-vnni GEMM,
// decoding whole panels by gathers (the tier's panel decoder) with
// decoding rows and packing them, at several row counts; it reports the
// process CPU time per product too, which other load on the machine
// disturbs less than the wall time.
func BenchmarkVNNIPanelDecode(b *testing.B) {
	if !hasAVX512VNNI {
		b.Skip("needs AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	const k, n = 2048, 2048
	rows := *vnniAVX512
	rows.panel = nil
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		w := randMatrix(b, typ, n, k, rng)
		for _, m := range []int{8, 32, 512} {
			x := randVec(m*k, rng)
			dst := make([]float32, m*n)
			for _, c := range []struct {
				name string
				g    *vnniTier
			}{{"panel", vnniAVX512}, {"rows", &rows}} {
				b.Run(fmt.Sprintf("%s/M%d/%s", typ, m, c.name), func(b *testing.B) {
					var r0, r1 syscall.Rusage
					syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
					for b.Loop() {
						gemmVNNI(dst, x, m, w, nil, c.g)
					}
					syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
					cpu := time.Duration(r1.Utime.Nano() - r0.Utime.Nano() + r1.Stime.Nano() - r0.Stime.Nano())
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}
