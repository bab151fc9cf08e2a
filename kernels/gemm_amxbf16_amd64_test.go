package kernels

import (
	"math"
	"testing"
	"unsafe"
)

// amxBF16TilesGo is a Go model of kernelAMXBF16: the same reads (whole
// steps of 16 pairs from a and b, then the padded tails) and sums.
func amxBF16TilesGo(n16 int, a *float32, lda int, b *float32, ta *float32, tb *float32, tail int, t *float32) {
	out := unsafe.Slice(t, 1024)
	clear(out)
	step := func(ap *float32, ldw int, bp *float32) {
		A := unsafe.Slice(ap, 31*ldw+16)
		B := unsafe.Slice(bp, 15*32+32)
		for m := 0; m < 32; m++ {
			for n := 0; n < 32; n++ {
				s := out[m*32+n]
				for p := 0; p < 16; p++ {
					x, w := math.Float32bits(A[m*ldw+p]), math.Float32bits(B[p*32+n])
					s += bf16Value(x>>16) * bf16Value(w>>16)
					s += bf16Value(x&0xffff) * bf16Value(w&0xffff)
				}
				out[m*32+n] = s
			}
		}
	}
	for i := 0; i < n16; i++ {
		step((*float32)(unsafe.Add(unsafe.Pointer(a), 64*i)), lda/4, (*float32)(unsafe.Add(unsafe.Pointer(b), 2048*i)))
	}
	if tail != 0 {
		step(ta, 16, tb)
	}
}

// TestAMXBF16LayoutGo runs the amx-bf16 tier's blocked GEMM with its
// microkernel's tile product replaced by amxBF16TilesGo (any AVX2 CPU):
// the 32×32 tile, the 16-pair steps and the zero-padded k tails, against
// the float64 reference with the bfloat16 bound.
func TestAMXBF16LayoutGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("the panel packers need AVX2")
	}
	saved := amxBF16Tiles
	amxBF16Tiles = amxBF16TilesGo
	defer func() { amxBF16Tiles = saved }()
	g := *amxBF16GEMM
	g.narrow = &narrower{x: bf16RowsGo, panel: func(p []float32, kc, nr int) { bf16PanelGo(p, kc, nr, 0) }}
	bf16MatMulCheck(t, func(dst, x []float32, m int, w *Matrix, bias []float32) { gemm(dst, x, m, w, bias, &g) })
}

// TestMatMulAMXBF16 checks the amx-bf16 tier against the float64
// reference with the bfloat16 bound, where the CPU has AMX bf16.
func TestMatMulAMXBF16(t *testing.T) {
	if !hasAMXBF16 {
		t.Skip("the CPU has no AMX bf16 tiles (or the OS did not grant them): the amx-bf16 tier is unverified here")
	}
	needTier(t, TierAMXBF16)
	Use(TierAMXBF16)
	bf16MatMulCheck(t, MatMul)
}
