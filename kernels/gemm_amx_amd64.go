package kernels

import "golang.org/x/sys/cpu"

// The amx tier: the integer products of the avx512-vnni tier with each
// 32-value block of a 16×16 tile summed by AMX int8 tiles (TDPBSSD) and
// the same float epilogue in AVX-512 (gemm_amxi8.go,
// gemm_amxi8_amd64.s): the same bits as avx2-int8's. Its weights are
// packed at load into tile records (every type of int8Types); products of
// weights not packed (packing off) take the avx512-vnni GEMM. Its kernel has run here only through a Go model of
// the tiles (amxtile_test.go) with the assembly's own epilogue: no machine
// it was written on has AMX. TestAMXI8MatchesAVX2Int8 runs the assembly
// wherever AMX exists. It stays opt-in (VEMBED_CPU=amx or Use) until it
// has been verified and measured faster than avx512-vnni there.

// hasAMX reports whether the CPU has AMX int8 tiles beside AVX-512 VNNI
// (for the epilogue) and the OS granted this process the tile state.
var hasAMX = hasAVX512VNNI && cpu.X86.HasAMXInt8 && amxGranted

// amxGranted reports whether the CPU has AMX tiles and the OS granted
// this process their state.
var amxGranted = cpu.X86.HasAMXTile && amxPermit()

// amxI8 is the GEMM of the amx tier.
var amxI8 = &amxI8Tier{
	kern:  kernelAMXI8Asm,
	quant: quantizeRowU8AVX2,
	dec:   vnniAVX512,
	small: func(dst, x []float32, m int, w *Matrix, bias []float32) { gemmVNNI(dst, x, m, w, bias, vnniAVX512) },
}

// amxTier returns the amx tier built on the integer tier i8 with the GEMM
// g (amxI8; the tests give a model of it): products by quantized weights
// of int8Types on the tiles (from i8's row threshold), everything else as
// i8.
func amxTier(i8 *impl, g *amxI8Tier) *impl {
	t := *i8
	t.tier = TierAMX
	t.products.Quantized = TierAMX
	t.optIn = true
	t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
		if !int8Types[w.Type] || w.Cols == 0 || m < int8Threshold(w.Type, int(int8MinRows.Load())) {
			i8.matMul(dst, x, m, w, bias)
			return
		}
		if p := w.amxPackedFor(g); p != nil {
			gemmAMXI8(dst, x, m, w, bias, g, p)
			return
		}
		g.small(dst, x, m, w, bias)
	}
	t.prepare = func(w *Matrix) { packAMX(w, g) }
	return &t
}
