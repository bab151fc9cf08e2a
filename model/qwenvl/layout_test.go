package qwenvl

import (
	"math"
	"slices"
	"testing"
)

// TestMRoPEPositions checks get_rope_index semantics on hand-worked
// sequences: text positions advance by one; an image starting at p covers
// t = p, h = p..p+lh-1, w = p..p+lw-1; the next token continues at
// p + max(lh, lw).
func TestMRoPEPositions(t *testing.T) {
	img := func(first, gh, gw int) placedImage {
		return placedImage{ImageEmbedding: ImageEmbedding{First: first, GridT: 1, GridH: gh, GridW: gw}, lt: 1, lh: gh / 2, lw: gw / 2}
	}
	type p = [3]int
	cases := []struct {
		name    string
		n       int
		imgs    []placedImage
		tStride int
		want    []p
	}{
		{"text", 3, nil, 0, []p{{0, 0, 0}, {1, 1, 1}, {2, 2, 2}}},
		{"image in the middle", 9, []placedImage{img(2, 4, 6)}, 0, []p{
			{0, 0, 0}, {1, 1, 1},
			{2, 2, 2}, {2, 2, 3}, {2, 2, 4}, {2, 3, 2}, {2, 3, 3}, {2, 3, 4},
			{5, 5, 5}}},
		{"two images back to back", 7, []placedImage{img(1, 4, 2), img(3, 2, 4)}, 0, []p{
			{0, 0, 0},
			{1, 1, 1}, {1, 2, 1},
			{3, 3, 3}, {3, 3, 4},
			{5, 5, 5}, {6, 6, 6}}},
		{"tall image at the start", 4, []placedImage{img(0, 6, 2)}, 0, []p{
			{0, 0, 0}, {0, 1, 0}, {0, 2, 0},
			{3, 3, 3}}},
		{"two frames, Qwen2-VL counts them", 6, []placedImage{{ImageEmbedding: ImageEmbedding{First: 1, GridT: 2, GridH: 2, GridW: 4}, lt: 2, lh: 1, lw: 2}}, 1, []p{
			{0, 0, 0},
			{1, 1, 1}, {1, 1, 2}, {2, 1, 1}, {2, 1, 2},
			{3, 3, 3}}},
	}
	for _, c := range cases {
		got := mropePositions(c.n, c.imgs, c.tStride)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
		}
	}
}

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

// TestMRoPESections checks that pair k takes t for k < s0, h below s0+s1 and
// w below s0+s1+s2, the split transformers makes with mrope_section.
func TestMRoPESections(t *testing.T) {
	lm := &textModel{headDim: 16, ropeBase: 100, sections: [4]int{2, 3, 3, 0}}
	cos, sin := lm.ropeTables([][3]int{{1, 2, 3}})
	comp := []int{1, 1, 2, 2, 2, 3, 3, 3}
	for k, c := range comp {
		a := float64(c) * math.Pow(100, -2*float64(k)/16)
		if math.Abs(float64(cos[k])-math.Cos(a)) > 1e-7 || math.Abs(float64(sin[k])-math.Sin(a)) > 1e-7 {
			t.Errorf("pair %d: cos %v sin %v, want angle %v", k, cos[k], sin[k], a)
		}
	}
}
