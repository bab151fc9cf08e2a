package kernels

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasAMXBF16 reports whether the CPU has AMX bf16 tiles (and the OS gave
// this process the tile state) beside the avx512-bf16 tier.
var hasAMXBF16 = hasAVX512BF16 && hasAMX && cpu.X86.HasAMXBF16

//go:noescape
func kernelAMXBF16(n16 int, a *float32, lda int, b *float32, ta *float32, tb *float32, tail int, t *float32)

// amxBF16Scratch is the microkernel's scratch in floats: the 32×32 sums,
// the 64-byte tile configuration, the zero-padded tails of a (32 rows of
// 16 pairs) and b (16 rows of 32 pairs).
const amxBF16Scratch = 1024 + 16 + 512 + 512

// amxBF16Config writes the tile configuration: palette 1, all eight tiles
// 16 rows of 64 bytes.
func amxBF16Config(cfg []byte) {
	clear(cfg[:64])
	cfg[0] = 1
	for t := 0; t < 8; t++ {
		binary.LittleEndian.PutUint16(cfg[16+2*t:], 64)
		cfg[48+t] = 16
	}
}

// amxBF16Tiles is the tile product the microkernel runs: the assembly, or
// a Go model of it in the tests.
var amxBF16Tiles = kernelAMXBF16

// microKernelAMXBF16 is the 32×32 microkernel over kp pairs: whole steps of
// 16 pairs from a and b in place, the rest through zero-padded copies,
// then c (+)= the sums.
func microKernelAMXBF16(kp int, a []float32, lda int, b []float32, c []float32, ldc int, acc bool) {
	const mr, nr = 32, 32
	_ = a[(mr-1)*lda+kp-1]
	_ = b[kp*nr-1]
	_ = c[(mr-1)*ldc+nr-1]
	sp := getScratch(amxBF16Scratch)
	defer putScratch(sp)
	s := *sp
	out, cfgF, ta, tb := s[:1024], s[1024:1040], s[1040:1552], s[1552:2064]
	n16 := kp / 16
	rest := kp - 16*n16
	if rest > 0 {
		clear(ta)
		clear(tb)
		for r := 0; r < mr; r++ {
			copy(ta[r*16:r*16+rest], a[r*lda+16*n16:r*lda+kp])
		}
		copy(tb, b[16*n16*nr:kp*nr])
	}
	amxBF16Config(unsafe.Slice((*byte)(unsafe.Pointer(&cfgF[0])), 64))
	amxBF16Tiles(n16, &a[0], 4*lda, &b[0], &ta[0], &tb[0], rest, &out[0])
	for r := 0; r < mr; r++ {
		cr, or := c[r*ldc:r*ldc+nr], out[r*nr:(r+1)*nr]
		if acc {
			for j := range cr {
				cr[j] = or[j] + cr[j]
			}
			continue
		}
		copy(cr, or)
	}
}

// amxBF16GEMM is bf16GEMM on the AMX tile.
var amxBF16GEMM = &gemmTier{
	tile:       tile{kern: microKernelAMXBF16, mr: 32, nr: avx512NR},
	pack8:      avx512GEMM.pack8,
	rowDecode:  avx512GEMM.rowDecode,
	transpose8: avx512GEMM.transpose8,
	narrow:     bf16GEMM.narrow,
}

// amxBF16Tier returns the amx-bf16 tier built on the avx512-bf16 tier bf.
func amxBF16Tier(bf impl) *impl {
	t := bf
	t.tier = TierAMXBF16
	t.products.Marked = TierAMXBF16
	t.optIn = true
	// Its tiles sum in their own order: not assumed to reproduce
	// avx512-bf16's bits.
	t.bits = "amx-bf16+" + bf.bits[len("avx512-bf16+"):]
	t.matMul = func(dst, x []float32, m int, w *Matrix, bias []float32) {
		if !w.BF16 || !bf16Types[w.Type] || w.Cols == 0 {
			bf.matMul(dst, x, m, w, bias)
			return
		}
		gemm(dst, x, m, w, bias, amxBF16GEMM)
	}
	if int8Tiers[bf.tier] {
		int8Tiers[TierAMXBF16] = true
	}
	return &t
}
