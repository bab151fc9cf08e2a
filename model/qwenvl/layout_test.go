package qwenvl

import (
	"math"
	"slices"
	"testing"
)

// hfWindowIndex is transformers' get_window_index written the way the
// reference does it (pad the merged grid with -1 to whole windows, reshape
// to windows, drop the padding), as an independent check of layout.
func hfWindowIndex(grids [][3]int, win int) (index []int, cuWindow []int) {
	cuWindow = []int{0}
	offset := 0
	for _, g := range grids {
		lt, lh, lw := g[0], g[1]/2, g[2]/2
		padH, padW := win-lh%win, win-lw%win
		nh, nw := (lh+padH)/win, (lw+padW)/win
		for f := 0; f < lt; f++ {
			padded := make([]int, (lh+padH)*(lw+padW))
			for i := range padded {
				padded[i] = -1
			}
			for i := 0; i < lh; i++ {
				for j := 0; j < lw; j++ {
					padded[i*(lw+padW)+j] = f*lh*lw + i*lw + j
				}
			}
			for a := 0; a < nh; a++ {
				for b := 0; b < nw; b++ {
					count := 0
					for i := 0; i < win; i++ {
						for j := 0; j < win; j++ {
							if v := padded[(a*win+i)*(lw+padW)+b*win+j]; v >= 0 {
								index = append(index, v+offset)
								count++
							}
						}
					}
					if c := cuWindow[len(cuWindow)-1] + 4*count; c != cuWindow[len(cuWindow)-1] {
						cuWindow = append(cuWindow, c)
					}
				}
			}
		}
		offset += lt * lh * lw
	}
	return index, cuWindow
}

func TestWindowLayout(t *testing.T) {
	vm := &visionModel{windowed: true, window: 4, mergeSize: 2, patchVals: 1, headDim: 8}
	batches := [][][3]int{
		{{1, 2, 2}},
		{{1, 8, 8}},
		{{1, 12, 18}},
		{{1, 16, 16}, {1, 6, 20}, {2, 10, 4}},
		{{1, 22, 2}, {1, 2, 30}},
	}
	for _, grids := range batches {
		var imgs []ImageInput
		for _, g := range grids {
			imgs = append(imgs, ImageInput{Patches: make([]float32, g[0]*g[1]*g[2]), GridT: g[0], GridH: g[1], GridW: g[2]})
		}
		lay, err := vm.layout(imgs)
		if err != nil {
			t.Fatal(err)
		}
		idx, cu := hfWindowIndex(grids, 4)
		if !slices.Equal(lay.order, idx) || !slices.Equal(lay.window, cu) {
			t.Errorf("grids %v:\n order %v\n  want %v\n windows %v\n    want %v", grids, lay.order, idx, lay.window, cu)
		}
		want := []int{0}
		for _, g := range grids {
			for f := 0; f < g[0]; f++ {
				want = append(want, want[len(want)-1]+g[1]*g[2])
			}
		}
		if !slices.Equal(lay.full, want) {
			t.Errorf("grids %v: frame segments %v, want %v", grids, lay.full, want)
		}
	}
}

// TestVisionRotary checks the 2-D rotary angles of one patch against
// transformers' VisionRotaryEmbedding: for head dim 8 (rotary dim 4),
// inv = [1, 10000^(-1/2)], pair d rotates by (hpos, hpos, wpos, wpos)·(inv0,
// inv1, inv0, inv1).
func TestVisionRotary(t *testing.T) {
	vm := &visionModel{mergeSize: 2, patchVals: 1, headDim: 8}
	lay, err := vm.layout([]ImageInput{{Patches: make([]float32, 4*6), GridT: 1, GridH: 4, GridW: 6}})
	if err != nil {
		t.Fatal(err)
	}
	// Row 4·(1·3+2)+3 = 23 is unit (1, 2), sub-patch (1, 1): hpos 3, wpos 5.
	inv1 := math.Pow(10000, -0.5)
	want := []float64{3, 3 * inv1, 5, 5 * inv1}
	for d, a := range want {
		if c, s := lay.cos[23*4+d], lay.sin[23*4+d]; math.Abs(float64(c)-math.Cos(a)) > 1e-7 || math.Abs(float64(s)-math.Sin(a)) > 1e-7 {
			t.Errorf("pair %d: cos %v sin %v, want angle %v", d, c, s, a)
		}
	}
}
