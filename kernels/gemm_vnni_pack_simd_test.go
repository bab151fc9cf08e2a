//go:build amd64 || arm64

package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSideCopyAsm checks the assembly copies of a packed matrix's side
// data (AVX2, NEON) against the portable ones on random values, for run
// counts from none to odd ones, leaving the entries between runs alone.
func TestSideCopyAsm(t *testing.T) {
	if !sideAsm.ok {
		t.Skip("the CPU does not run the side copies' assembly")
	}
	rng := rand.New(rand.NewPCG(51, 52))
	for _, n := range []int{0, 1, 2, 3, 7, 8, 17} {
		src := make([]int32, n*vnniNR+1)
		mul := make([]int16, n*2*vnniNR+1)
		for i := range src {
			src[i] = int32(rng.Uint32())
		}
		for i := range mul {
			mul[i] = int16(rng.Uint32())
		}
		for _, stride := range []int{vnniPanelF, vnniAux} {
			want, got := make([]int32, n*stride+1), make([]int32, n*stride+1)
			for i := range want {
				want[i] = int32(rng.Uint32())
			}
			copy(got, want)
			copySide32Go(want, stride, src, n)
			copySide32(got, stride, src, n)
			if !slices.Equal(got, want) {
				t.Fatalf("copy of %d runs, stride %d: %v, want %v", n, stride, got, want)
			}
			halves := make([]uint16, n*vnniNR+1)
			quot := make([]int16, n*vnniNR+1)
			for i := range halves {
				halves[i] = uint16(rng.Uint32())
				if halves[i]&0x7c00 == 0x7c00 {
					halves[i] &^= 0x4000 // no NaNs or infinities: the conversion quiets NaNs
				}
				quot[i] = int16(rng.Uint32())
			}
			fw, fg := make([]float32, len(want)), make([]float32, len(want))
			halvesSideGo(fw, stride, halves, n)
			halvesSide(fg, stride, halves, n)
			for i := range fw {
				if math.Float32bits(fw[i]) != math.Float32bits(fg[i]) {
					t.Fatalf("halves of %d runs, stride %d: [%d] %v, want %v", n, stride, i, fg[i], fw[i])
				}
			}
			startsSideGo(want, stride, quot, n)
			startsSide(got, stride, quot, n)
			if !slices.Equal(got, want) {
				t.Fatalf("starts of %d runs, stride %d: %v, want %v", n, stride, got, want)
			}
			if stride < 2*vnniNR {
				continue
			}
			widenSideGo(want, stride, mul, n)
			widenSide(got, stride, mul, n)
			if !slices.Equal(got, want) {
				t.Fatalf("widening of %d runs, stride %d: %v, want %v", n, stride, got, want)
			}
		}
	}
}
