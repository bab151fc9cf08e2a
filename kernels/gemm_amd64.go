package kernels

import (
	"slices"

	"github.com/vembed/vembed/gguf"
	"golang.org/x/sys/cpu"
)

//go:noescape
func kernel6x16AVX2(kc int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)

// microKernelAVX2 is the 6×16 FMA microkernel: twelve 8-wide accumulators
// (six rows by two vectors) stay in registers for the whole k loop.
var microKernelAVX2 = asmKernel6x16(kernel6x16AVX2)

// avx2Tile is the 6×16 tile of the avx2 tiers.
var avx2Tile = tile{kern: microKernelAVX2, mr: gemmMR, nr: gemmNR}

// hasAVX2 reports whether the CPU and OS support the AVX2 tier: AVX2, FMA
// and F16C instructions with the YMM state saved by the OS (x/sys/cpu
// reports AVX only when the OS saves it).
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasAVX && cpu.X86.HasF16C

// archTiers lists the tiers specific to amd64, best first.
func archTiers() []*impl {
	if !hasAVX2 {
		return nil
	}
	t := *generic
	t.tier = TierAVX2
	t.bits = string(TierAVX2)
	t.products = Products{TierAVX2, TierAVX2, TierAVX2}
	g := &gemmTier{tile: avx2Tile, pack8: map[gguf.Type]pack8Func{
		gguf.TypeF32:  packer(pack8F32, 4),
		gguf.TypeF16:  packer(pack8F16, 2),
		gguf.TypeBF16: packer(pack8BF16, 2),
	}, rowDecode: rowDecodersAVX2, transpose8: transpose8AVX2}
	t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
		matMul(dst, x, m, w, bias, g)
	}
	at := &attnTier{tile: avx2Tile, scaleMax: scaleMaxVec, expSum: expSumVec, transpose8: transpose8AVX2}
	t.attention = at.attention
	t.attentionKV = at.attentionKV
	t.swiGLU = swiGLUWith(siluMulVec)
	t.quickGELU = inPlaceWith(quickGELUVec)
	t.geluTanh = inPlaceWith(geluTanhVec)
	halfMinGEMM = g
	i8 := int8Tier(t)
	if !hasAVX512 {
		return append(vnniTiers(i8), i8, &t)
	}
	halfMinGEMM = avx512GEMM
	// On AVX-512 CPUs the integer tiers (avx2-int8 and the VNNI ones)
	// take their float32 products (float weights, short products) from
	// the avx512 tier: the same bits as avx2's, faster. avx2 stays pure
	// AVX2.
	f := avx512Tier(t)
	i8 = int8Tier(*f)
	out := slices.Concat(vnniTiers(i8), []*impl{i8, f, &t})
	if hasAVX512BF16 {
		// Built on the best default tier so far, for the weights it does
		// not take.
		i := slices.IndexFunc(out, func(im *impl) bool { return !im.optIn })
		bf := bf16Tier(*out[i])
		out = append([]*impl{bf}, out...)
		if hasAMXBF16 {
			out = append([]*impl{amxBF16Tier(*bf)}, out...)
		}
	}
	return out
}

//go:noescape
func fmaLoopAVX2(n int)

// fmaProbe returns the peak-probe loop and the flops of one iteration.
func fmaProbe() (func(n int), float64) {
	if !hasAVX2 {
		return nil, 0
	}
	return fmaLoopAVX2, 12 * 8 * 2
}

//go:noescape
func pack8F32(src *byte, stride int, n8 int, dst *float32)

//go:noescape
func pack8F16(src *byte, stride int, n8 int, dst *float32)

//go:noescape
func pack8BF16(src *byte, stride int, n8 int, dst *float32)

// transpose8AVX2 packs eight float32 rows, stride floats apart, into
// columns 0..7 of n8·8 rows of a gemmNR-wide panel (avx2Tile's width).
func transpose8AVX2(src []float32, stride, n8 int, dst []float32) {
	transpose8With(pack8F32, src, stride, n8, dst)
}
