package kernels

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
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

// BenchmarkVNNIPanelDecode compares, for Q8_0, Q4_K, Q6_K and Q2_K on the avx512-vnni GEMM,
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
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ2_K} {
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

// TestVNNIPanelDecoders checks the avx512-vnni tier's panel decoders bit
// for bit against decoding the same panel row by row with the portable
// decoders and packing (vnniTier.decodePanel without a panel decoder):
// weights, factors fd (and fm for types with a minimum) and the starts
// (and multipliers for types with them) the kernels read, for every row
// count of a panel (rows past n1 zero), panels starting past row 0, every
// k slice of a row (32-value types: a short last slice) and scales that
// are NaN (quiet, signalling, negative), infinite, subnormal, the largest
// binary16 or zero. A signalling NaN scale is the one difference allowed:
// VCVTPH2PS sets its quiet bit, the portable conversion keeps the bits
// (either way a NaN factor makes the column's outputs NaN).
func TestVNNIPanelDecoders(t *testing.T) {
	if !hasAVX512VNNI {
		t.Skip("needs AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(65, 66))
	ref := *vnniAVX512
	ref.panel, ref.dec, ref.pack8 = nil, nil, pack8U8Go
	specials := []uint16{0x7e00, 0x7c01, 0xfe01, 0x7c00, 0xfc00, 0x0001, 0x8001, 0x03ff, 0x7bff, 0x0000, 0x8000}
	spans := [][2]int{{0, 1}, {0, 2}, {0, 3}, {0, 5}, {0, 7}, {0, 8}, {0, 9}, {0, 13}, {0, 15}, {0, 16}, {16, 21}, {5, 21}, {17, 18}}
	for _, typ := range slices.Sorted(maps.Keys(vnniAVX512.panel)) {
		dec := vnniDecoders[typ]
		ks := []int{512}
		if typ.BlockSize() == 32 {
			ks = []int{32, 288, 544}
		}
		for _, k := range ks {
			w := randMatrix(t, typ, 21, k, rng)
			ts := typ.TypeSize()
			for b := 0; b < len(w.Data); b += ts {
				if rng.IntN(3) == 0 {
					offs := scaleOffsets[typ]
					v := specials[rng.IntN(len(specials))]
					binary.LittleEndian.PutUint16(w.Data[b+offs[rng.IntN(len(offs))]:], v)
				}
			}
			for _, sp := range spans {
				row0, n1 := sp[0], sp[1]
				for k0 := 0; k0 < k; k0 += gemmKC {
					nb := min(gemmKC, k-k0) / i8Block
					out := func(g *vnniTier) ([]int8, []float32, []int32) {
						pp, fs, as := make([]int8, nb*vnniPanel), make([]float32, nb*vnniPanelF), make([]int32, nb*vnniAux)
						for i := range pp {
							pp[i] = 0x5a
						}
						for i := range fs {
							fs[i] = math.Float32frombits(0x7fa5a5a5)
						}
						for i := range as {
							as[i] = 0x5a5a5a5a
						}
						g.decodePanel(w, dec, row0, n1, k0, pp, fs, as, make([]int8, vnniNR*gemmKC), make([]int16, 2*gemmKC/i8Block), make([]int32, 2*gemmKC/i8Block))
						return pp, fs, as
					}
					gp, gf, ga := out(vnniAVX512)
					wp, wf, wa := out(&ref)
					where := fmt.Sprintf("%s k%d rows %d..%d k0 %d", typ, k, row0, n1, k0)
					nr := min(vnniNR, n1-row0)
					for j := range gp {
						if col := j % vnniPanel / 4 % vnniNR; col < nr && gp[j] != wp[j] {
							t.Fatalf("%s: weight byte %d (block %d, column %d) is %d, the portable decoder's %d", where, j, j/vnniPanel, col, gp[j], wp[j])
						}
					}
					for b := 0; b < nb; b++ {
						for r := nr; r < vnniNR; r++ {
							// A column past n1 is never written out;
							// its factor fd zero (of either sign) makes
							// it finite.
							if f := gf[b*vnniPanelF+r]; f != 0 {
								t.Fatalf("%s: block %d column %d (past the rows) has the factor %v", where, b, r, f)
							}
						}
						for r := 0; r < nr; r++ {
							fi := []int{b*vnniPanelF + r}
							if dec.hasMin {
								fi = append(fi, b*vnniPanelF+vnniNR+r)
							}
							for _, i := range fi {
								if math.Float32bits(gf[i]) != quietNaN(math.Float32bits(wf[i])) {
									t.Fatalf("%s: block %d column %d factor %d is %#08x, the portable decoder's %#08x", where, b, r, i%vnniPanelF/vnniNR, math.Float32bits(gf[i]), math.Float32bits(wf[i]))
								}
							}
							ai := []int{b*vnniAux + r}
							if !dec.unit {
								ai = append(ai, b*vnniAux+vnniNR+r, b*vnniAux+2*vnniNR+r)
							}
							for _, i := range ai {
								if ga[i] != wa[i] {
									t.Fatalf("%s: block %d column %d aux %d is %d, the portable decoder's %d", where, b, r, i%vnniAux/vnniNR, ga[i], wa[i])
								}
							}
						}
					}
				}
			}
		}
	}
}

// quietNaN is the float32 bits b with the quiet bit set if they are a
// signalling NaN (as the hardware conversions from binary16 give them).
func quietNaN(b uint32) uint32 {
	if b&0x7f800000 == 0x7f800000 && b&0x007fffff != 0 {
		return b | 0x00400000
	}
	return b
}
