package kernels

import (
	"unsafe"

	"github.com/vembed/vembed/gguf"
	"golang.org/x/sys/cpu"
)

// hasAVX512 reports whether the CPU and OS support the avx512 tier:
// AVX-512 F with the ZMM state saved by the OS (x/sys/cpu reports AVX-512
// only when the OS saves it), besides what avx2 needs.
var hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F

// avx512MR and avx512NR are the avx512 tile: 8 rows by two 16-wide vectors,
// 16 zmm accumulators. Taller tiles of the same width load fewer values per
// FMA (16 per 28 FMAs at 14 rows, all 32 registers, against 10 per 16) but
// measured 3-6% slower on Zen 5 (12 and 14 rows; 6 and 10 rows were no
// faster either): rows of a a multiple of 4 KiB apart (k = 1024, 2048)
// share one L1 set, whose 12 ways 14 rows overflow. The panel width 32
// divides gemmNC and the attention's key blocks; an 80-wide vision head
// pads to 96 in the value product, as it would with 48.
const (
	avx512MR = 8
	avx512NR = 32
)

//go:noescape
func kernel8x32AVX512(kc int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)

// microKernelAVX512 is the 8×32 FMA microkernel.
func microKernelAVX512(kc int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool) {
	// The assembly reads and writes through raw pointers; these checks keep
	// every access inside the slices.
	_ = a[(avx512MR-1)*lda+kc-1]
	_ = b[kc*avx512NR-1]
	_ = c[(avx512MR-1)*ldc+avx512NR-1]
	var ac int
	if acc {
		ac = 1
	}
	kernel8x32AVX512(kc, &a[0], lda, &b[0], &c[0], ldc, ac)
}

// avx512Tile is the tile of the avx512 tier.
var avx512Tile = tile{kern: microKernelAVX512, mr: avx512MR, nr: avx512NR}

//go:noescape
func kernel8x16AVX512(kc int, a *float32, lda int, b *float32, c *float32, ldc int, acc int)

// microKernel16AVX512 is the 8×16 FMA microkernel, one zmm wide.
func microKernel16AVX512(kc int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool) {
	_ = a[(avx512MR-1)*lda+kc-1]
	_ = b[kc*16-1]
	_ = c[(avx512MR-1)*ldc+15]
	var ac int
	if acc {
		ac = 1
	}
	kernel8x16AVX512(kc, &a[0], lda, &b[0], &c[0], ldc, ac)
}

// avx512Narrow is the 8×16 tile that takes the attention's last value
// panel when the head size leaves at most 16 columns past the 32-wide
// panels: an 80-wide vision head then computes 80 columns, not 96, and
// needs no edge tile. Its outputs are accumulated as the 8×32 tile's, so
// the bits are the same.
var avx512Narrow = &tile{kern: microKernel16AVX512, mr: avx512MR, nr: 16}

//go:noescape
func pack8F32x32(src *byte, stride int, n8 int, dst *float32)

//go:noescape
func pack8F16x32(src *byte, stride int, n8 int, dst *float32)

//go:noescape
func pack8BF16x32(src *byte, stride int, n8 int, dst *float32)

// packer32 is packer for the 32-wide panels of the avx512 tile.
func packer32(f func(src *byte, stride int, n8 int, dst *float32), size int) pack8Func {
	return func(src []byte, stride int, n8 int, dst []float32) {
		if n8 == 0 {
			return
		}
		_ = src[7*stride+n8*8*size-1]
		_ = dst[(n8*8-1)*avx512NR+7]
		f(&src[0], stride, n8, &dst[0])
	}
}

// transpose8x32 packs eight float32 rows, stride floats apart, into
// columns 0..7 of n8·8 rows of a 32-wide panel.
func transpose8x32(src []float32, stride, n8 int, dst []float32) {
	if n8 == 0 {
		return
	}
	_ = src[7*stride+n8*8-1]
	_ = dst[(n8*8-1)*avx512NR+7]
	pack8F32x32((*byte)(unsafe.Pointer(&src[0])), 4*stride, n8, &dst[0])
}

// avx512GEMM is the float32 GEMM of the avx512 tier: avx2's panel decoders
// with 32-wide packers.
var avx512GEMM = &gemmTier{tile: avx512Tile, pack8: map[gguf.Type]pack8Func{
	gguf.TypeF32:  packer32(pack8F32x32, 4),
	gguf.TypeF16:  packer32(pack8F16x32, 2),
	gguf.TypeBF16: packer32(pack8BF16x32, 2),
}, rowDecode: rowDecodersAVX2, transpose8: transpose8x32}

// avx512Tier returns the avx512 tier built from the avx2 tier t: MatMul and
// attention on the avx512 tile, the rest as avx2.
func avx512Tier(t impl) *impl {
	t.tier = TierAVX512
	t.products = Products{TierAVX512, TierAVX512, TierAVX512}
	t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
		matMul(dst, x, m, w, bias, avx512GEMM)
	}
	at := &attnTier{tile: avx512Tile, narrow: avx512Narrow, scaleMax: scaleMaxVec512, expSum: expSumVec512,
		scaleMaxRows: scaleMaxRows512, expSumRows: expSumRows512, transpose8: transpose8x32}
	t.attention = at.attention
	t.attentionKV = at.attentionKV
	return &t
}
