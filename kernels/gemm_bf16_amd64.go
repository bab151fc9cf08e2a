package kernels

import (
	"github.com/vembed/vembed/gguf"
	"golang.org/x/sys/cpu"
)

// hasAVX512BF16 reports whether the CPU runs the avx512-bf16 tier (VPERMW
// needs AVX-512 BW).
var hasAVX512BF16 = hasAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512BF16

//go:noescape
func kernel8x32BF16(kp int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)

//go:noescape
func bf16PanelPairs(src *float32, np int, dst *float32)

//go:noescape
func bf16Row(src *float32, n32 int, dst *float32)

// microKernelBF16 is the 8×32 VDPBF16PS microkernel over kp pairs of k.
func microKernelBF16(kp int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool) {
	_ = a[(avx512MR-1)*lda+kp-1]
	_ = b[kp*avx512NR-1]
	_ = c[(avx512MR-1)*ldc+avx512NR-1]
	var ac int
	if acc {
		ac = 1
	}
	kernel8x32BF16(kp, &a[0], lda, &b[0], &c[0], ldc, ac)
}

// bf16RowsAVX512 is narrower.x: whole groups of 32 values by
// VCVTNE2PS2BF16, the rest in Go.
var bf16RowsAVX512 = bf16RowsWith(bf16Row, 32)

// bf16PanelAVX512 is narrower.panel for 32-wide panels: whole row pairs
// by VCVTNE2PS2BF16 and VPERMW, an odd last row in Go.
var bf16PanelAVX512 = bf16PanelWith(bf16PanelPairs, avx512NR)

//go:noescape
func pack8F16Pairs(src *byte, stride int, n16 int, dst *float32)

//go:noescape
func pack8F32Pairs(src *byte, stride int, n16 int, dst *float32)

//go:noescape
func pack8BF16Pairs(src *byte, stride int, n16 int, dst *float32)

// pairPacker wraps an assembly pair packer (pack_bf16_amd64.s) for values
// of size bytes with the bounds checks that keep it inside its slices.
func pairPacker(f func(src *byte, stride int, n16 int, dst *float32), size int) pack8Func {
	return func(src []byte, stride int, n16 int, dst []float32) {
		if n16 == 0 {
			return
		}
		_ = src[7*stride+n16*16*size-1]
		_ = dst[(n16*8-1)*avx512NR+7]
		f(&src[0], stride, n16, &dst[0])
	}
}

// bf16GEMM is the GEMM of the avx512-bf16 tier for float weights: eight
// rows at a time packed straight to pairs, the rest decoded to float32
// and rounded.
var bf16GEMM = &gemmTier{
	tile:       tile{kern: microKernelBF16, mr: avx512MR, nr: avx512NR},
	pack8:      avx512GEMM.pack8,
	rowDecode:  avx512GEMM.rowDecode,
	transpose8: avx512GEMM.transpose8,
	narrow: &narrower{x: bf16RowsAVX512, panel: bf16PanelAVX512, pack16: map[gguf.Type]pack8Func{
		gguf.TypeF16:  pairPacker(pack8F16Pairs, 2),
		gguf.TypeF32:  pairPacker(pack8F32Pairs, 4),
		gguf.TypeBF16: pairPacker(pack8BF16Pairs, 2),
	}},
}

// bf16Tier returns the avx512-bf16 tier built on base: float weights
// through bf16GEMM, everything else as base.
func bf16Tier(base impl) *impl {
	t := base
	t.tier = TierAVX512BF16
	t.products.Marked = TierAVX512BF16
	// The default where the CPU has it: only matrices their model marks
	// (Matrix.BF16, the vision tower's weights) are multiplied in
	// bfloat16, which moves a product by up to 2⁻⁷ of its magnitude
	// (0.2-0.5% relative on a tower's rows; the embeddings stay within
	// cosine 0.9999 of float32); every other product is base's.
	t.bits = "avx512-bf16+" + base.bits
	if int8Tiers[base.tier] {
		// Quantized weights take base's integer products.
		int8Tiers[TierAVX512BF16] = true
	}
	t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
		if !w.BF16 || !bf16Types[w.Type] || w.Cols == 0 {
			base.matMul(dst, x, m, w, bias)
			return
		}
		gemm(dst, x, m, w, bias, bf16GEMM)
	}
	return &t
}
