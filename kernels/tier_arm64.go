package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The CPU features the arm64 tiers need, as the OS reports them
// (cpu_arm64.go reads the same for the default table).
var (
	hasNEON    = cpu.ARM64.HasASIMD
	hasDotProd = hasNEON && cpu.ARM64.HasASIMDDP
	hasI8MM    = hasDotProd && cpu.ARM64.HasI8MM
	hasBF16Ext = hasDotProd && hasBF16()
)

//go:noescape
func kernel6x16NEON(kc int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)

// microKernelNEON is the 6×16 FMLA microkernel: 24 four-wide accumulators
// (six rows by four vectors) stay in registers for the whole k loop, each
// output summed in k order by fused multiply-adds from zero and added to
// c at the end, as avx2's kernel6x16AVX2 does, so its bits are avx2's.
var microKernelNEON = asmKernel6x16(kernel6x16NEON)

// neonTile is the 6×16 tile of the arm64 tiers.
var neonTile = tile{kern: microKernelNEON, mr: gemmMR, nr: gemmNR}

// neonGEMM is the float32 GEMM of the arm64 tiers: weights decode into
// panels the FMLA kernel multiplies, the float types and Q8_0 and the
// 4-bit table types by NEON (pack_arm64.s, decode_arm64.s), the others by
// the portable decoders; all exact, so the same panels.
var neonGEMM = &gemmTier{tile: neonTile, pack8: pack8NEON, rowDecode: rowDecodersNEON, transpose8: transpose8NEON}

//go:noescape
func kernelSDOTUnit4x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

//go:noescape
func kernelSDOTMul2x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

// sdotGEMM is the integer GEMM of the neon-dotprod tier: the VNNI tiers'
// driver and layouts (gemm_vnni.go) with the byte products by SDOT
// (gemm_sdot_arm64.s). Activations arrive as q+128, which the kernels
// turn back into the signed q with one EOR per sixteen bytes: SDOT
// multiplies signed by signed, so a block's sums are Σ m·w·q without the
// starting sums, the same integers as VPDPBUSD's start + Σ m·w·(q+128).
// Everything around the kernels is NEON too: the activations quantized
// straight into the kernels' layout, the weights decoded per product
// (vnniRowsNEON, every type but the packed Q8_0) and packed
// (pack8U8NEON), a packed matrix's factors copied (sideAsm).
var sdotGEMM = &vnniTier{
	kern: vnniAsm(4, 1, kernelSDOTUnit4x16), kernMul: vnniAsm(2, 1, kernelSDOTMul2x16),
	rows: 4, span: 1, rowsMul: 2, spanMul: 1,
	pack8: pack8U8NEON, quant: quantizeRowU8NEON, quantStrided: quantizeStridedNEON(4), signed: true, dec: vnniRowsNEON,
}

// pack8U8NEON is pack8U8Go by the float32 panel packer: a group of four
// bytes moves as one 32-bit value.
func pack8U8NEON(src []int8, kc int, dst []int8) {
	n8 := kc / 32
	if n8 == 0 {
		return
	}
	_ = src[8*kc-1]
	_ = dst[((kc/4-1)*gemmNR+7)*4+3]
	pack8F32NEON((*byte)(unsafe.Pointer(&src[0])), kc, n8, (*float32)(unsafe.Pointer(&dst[0])))
}

// smmlaGEMM is the integer GEMM of the i8mm tier: sdotGEMM's driver with
// the byte products by SMMLA (gemm_smmla_arm64.s), on activations
// interleaved by eight bytes and panels of eight-byte column chunks
// (pack8S8x8NEON; pack8S8x8 is its portable reference), the operands
// SMMLA reads whole. The same block sums, so the same bits.
var smmlaGEMM = &vnniTier{
	kern: vnniAsm(4, 1, kernelSMMLAUnit4x16), kernMul: vnniAsm(2, 1, kernelSMMLAMul2x16),
	rows: 4, span: 1, rowsMul: 2, spanMul: 1, chunk: 8,
	pack8: pack8S8x8NEON, quant: quantizeRowU8NEON, quantStrided: quantizeStridedNEON(8), signed: true, dec: vnniRowsNEON,
}

// pack8S8x8 moves the eight-byte chunks of eight decoded rows (kc bytes
// each, kc apart) into columns 0..7 of a panel: chunk q of row r to
// dst[(q*vnniNR+r)*8:].
func pack8S8x8(src []int8, kc int, dst []int8) {
	s, d := bytesOf(src), bytesOf(dst)
	for r := 0; r < 8; r++ {
		row := s[r*kc : (r+1)*kc]
		for q := 0; q < kc/8; q++ {
			put64(d[(q*vnniNR+r)*8:], le64(row[8*q:]))
		}
	}
}

// archTiers lists the tiers specific to arm64, best first.
func archTiers() []*impl {
	if !hasNEON {
		return nil
	}
	t := *generic
	t.tier = TierNEON
	// avx2's bits: the same products, attention, norms and activations
	// (TestArithmeticRevision checks the name's hash under emulation).
	t.bits = string(TierAVX2)
	t.products = Products{TierNEON, TierNEON, TierNEON}
	t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
		matMul(dst, x, m, w, bias, neonGEMM)
	}
	at := &attnTier{tile: neonTile, scaleMax: scaleMaxVec, expSum: expSumVec, transpose8: transpose8NEON}
	t.attention = at.attention
	t.attentionKV = at.attentionKV
	t.swiGLU = swiGLUWith(siluMulVec)
	t.quickGELU = inPlaceWith(quickGELUVec)
	t.geluTanh = inPlaceWith(geluTanhVec)
	// Q2_K's minimums (gemm_int8_q2k.go) take the FMLA kernel, whose bits
	// are avx2's: the integer tiers stay avx2-int8's.
	halfMinGEMM = neonGEMM
	out := []*impl{&t}
	if hasDotProd {
		out = append([]*impl{armInt8Tier(t, TierNEONDotProd, sdotGEMM)}, out...)
	}
	if hasI8MM {
		out = append([]*impl{armInt8Tier(t, TierI8MM, smmlaGEMM)}, out...)
	}
	if hasBF16Ext {
		out = append([]*impl{neonBF16Tier(*out[0])}, out...)
	}
	return out
}

// armInt8Tier returns the integer tier name built on the neon tier t:
// products by quantized weights of int8Types through g from the row
// threshold on (SetInt8MinRows), everything else as t; weights of the
// types Prepare packs are packed for g at load.
func armInt8Tier(t impl, name Tier, g *vnniTier) *impl {
	f32 := t.matMul
	t.tier = name
	t.bits = string(TierAVX2Int8)
	t.products.Quantized = name
	t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
		if !int8Types[w.Type] || w.Cols == 0 || m < int8Threshold(w.Type, int(int8MinRows.Load())) {
			f32(dst, x, m, w, bias)
			return
		}
		gemmVNNI(dst, x, m, w, bias, g)
	}
	t.prepare = func(w *Matrix) { packVNNI(w, g) }
	return &t
}

//go:noescape
func kernelBF16x6x16NEON(kp int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)

//go:noescape
func bf16RowNEON(src *float32, n8 int, dst *float32)

//go:noescape
func bf16PanelPairsNEON(src *float32, np int, dst *float32)

// neonBF16GEMM is the bfloat16 GEMM of the neon-bf16 tier: the rounding
// to pairs by NEON (gemm_bf16_arm64.s: bf16Round's integer steps, so its
// bits) and the BFDOT 6×16 kernel.
var neonBF16GEMM = &gemmTier{
	tile: tile{kern: asmKernel6x16(kernelBF16x6x16NEON), mr: gemmMR, nr: gemmNR},
	narrow: &narrower{
		x:     bf16RowsWith(bf16RowNEON, 8),
		panel: bf16PanelWith(bf16PanelPairsNEON, gemmNR),
	},
}

// neonBF16Tier returns the neon-bf16 tier built on the integer tier base:
// marked float weights in bfloat16, everything else as base. Opt-in.
func neonBF16Tier(base impl) *impl {
	t := base
	t.tier = TierNEONBF16
	t.optIn = true
	t.products.Marked = TierNEONBF16
	t.bits = string(TierNEONBF16) + "+" + base.bits
	t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
		if !w.BF16 || !bf16Types[w.Type] || w.Cols == 0 {
			base.matMul(dst, x, m, w, bias)
			return
		}
		gemm(dst, x, m, w, bias, neonBF16GEMM)
	}
	return &t
}

// archIntKernels lists the avx2-int8 kernels of this architecture: none
// (the integer tiers here are VNNI-style GEMMs, archVNNIKernels).
func archIntKernels() (map[string]*i8Tier, map[string]*u8Tier) { return nil, nil }

// archVNNIKernels lists the integer GEMMs this CPU runs, for the tests.
func archVNNIKernels() map[string]*vnniTier {
	out := map[string]*vnniTier{}
	if hasDotProd {
		out[string(TierNEONDotProd)] = sdotGEMM
	}
	if hasI8MM {
		out[string(TierI8MM)] = smmlaGEMM
	}
	return out
}

// fmaProbe is the x86 FMA probe (PeakFMA256): none here; the FMLA probe
// is PeakFMLA (archPeakProbes).
func fmaProbe() (func(n int), float64) { return nil, 0 }

//go:noescape
func kernelSMMLAUnit4x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

//go:noescape
func kernelSMMLAMul2x16(ng int, nb int, a *uint8, as int, ds *float32, dss int, b *int8, aux *int32, f *float32, t *float32, c *float32, ldc int, flags int)

//go:noescape
func quantizeU8NEON(x *float32, nb int, q *uint8, ds *float32)

//go:noescape
func quantizeU8StridedNEON(x *float32, nb int, q *uint8, stride int, chunk int, ds *float32)

// quantizeStridedNEON returns quantizeRowU8NEON writing the groups of
// chunk (4 or 8) bytes of q stride bytes apart, a vnniTier.quantStrided.
func quantizeStridedNEON(chunk int) func(x []float32, q []uint8, stride int, ds []float32) {
	return func(x []float32, q []uint8, stride int, ds []float32) {
		nb := len(x) / i8Block
		if nb == 0 {
			return
		}
		_, _ = q[(i8Block/chunk*nb-1)*stride+chunk-1], ds[2*nb-1]
		quantizeU8StridedNEON(&x[0], nb, &q[0], stride, chunk, &ds[0])
	}
}

// quantizeRowU8NEON is quantizeRowU8 in assembly (the same bits, tested).
func quantizeRowU8NEON(x []float32, q []uint8, ds []float32) {
	nb := len(x) / i8Block
	if nb == 0 {
		return
	}
	_, _, _ = x[nb*i8Block-1], q[nb*i8Block-1], ds[2*nb-1]
	quantizeU8NEON(&x[0], nb, &q[0], &ds[0])
}
