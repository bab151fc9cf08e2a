package vlm

import (
	"math"
	"slices"
	"testing"

	"github.com/vembed/vembed/internal/archhash"
	"github.com/vembed/vembed/model"
)

// TestMRoPEPositions checks get_rope_index semantics on hand-worked
// sequences: text positions advance by one; an image starting at p covers
// t = p, h = p..p+lh-1, w = p..p+lw-1; the next token continues at
// p + max(lh, lw).
func TestMRoPEPositions(t *testing.T) {
	img := func(first, gh, gw int) PlacedImage {
		return NewPlacedImage(model.ImageEmbedding{First: first, GridT: 1, GridH: gh, GridW: gw}, 1, gh/2, gw/2)
	}
	type p = [3]int
	cases := []struct {
		name    string
		n       int
		imgs    []PlacedImage
		tStride int
		want    []p
	}{
		{"text", 3, nil, 0, []p{{0, 0, 0}, {1, 1, 1}, {2, 2, 2}}},
		{"image in the middle", 9, []PlacedImage{img(2, 4, 6)}, 0, []p{
			{0, 0, 0}, {1, 1, 1},
			{2, 2, 2}, {2, 2, 3}, {2, 2, 4}, {2, 3, 2}, {2, 3, 3}, {2, 3, 4},
			{5, 5, 5}}},
		{"two images back to back", 7, []PlacedImage{img(1, 4, 2), img(3, 2, 4)}, 0, []p{
			{0, 0, 0},
			{1, 1, 1}, {1, 2, 1},
			{3, 3, 3}, {3, 3, 4},
			{5, 5, 5}, {6, 6, 6}}},
		{"tall image at the start", 4, []PlacedImage{img(0, 6, 2)}, 0, []p{
			{0, 0, 0}, {0, 1, 0}, {0, 2, 0},
			{3, 3, 3}}},
		{"two frames, Qwen2-VL counts them", 6, []PlacedImage{NewPlacedImage(model.ImageEmbedding{First: 1, GridT: 2, GridH: 2, GridW: 4}, 2, 1, 2)}, 1, []p{
			{0, 0, 0},
			{1, 1, 1}, {1, 1, 2}, {2, 1, 1}, {2, 1, 2},
			{3, 3, 3}}},
	}
	for _, c := range cases {
		got := MRoPEPositions(c.n, c.imgs, c.tStride)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
		}
	}
}

// TestMRoPESections checks that pair k takes t for k < s0, h below s0+s1 and
// w below s0+s1+s2, the split transformers makes with mrope_section.
func TestMRoPESections(t *testing.T) {
	lm := &Decoder{HeadDim: 16, ropeBase: 100, sections: [4]int{2, 3, 3, 0}}
	cos, sin := lm.RopeTables([][3]int{{1, 2, 3}})
	comp := []int{1, 1, 2, 2, 2, 3, 3, 3}
	for k, c := range comp {
		a := float64(c) * math.Pow(100, -2*float64(k)/16)
		if math.Abs(float64(cos[k])-math.Cos(a)) > 1e-7 || math.Abs(float64(sin[k])-math.Sin(a)) > 1e-7 {
			t.Errorf("pair %d: cos %v sin %v, want angle %v", k, cos[k], sin[k], a)
		}
	}
}

// ropeGolden is TestRopeTablesSameEverywhere's hash, recorded on amd64.
const ropeGolden = 0x7fc4ee5728c96fa9

// TestRopeTablesSameEverywhere pins the bits of a text M-RoPE table to
// position 32,767 (base 10⁶, 64 frequencies), so that arm64 (under qemu
// in CI) must compute the same: with math.Pow's frequencies 20 of its
// 4.2 million rotations at positions past 2,400 differed between the
// architectures by a float32 unit.
func TestRopeTablesSameEverywhere(t *testing.T) {
	pos := make([][3]int, 32768)
	for p := range pos {
		pos[p] = [3]int{p, p, p}
	}
	cos, sin := RopeTables(pos, 128, 1e6, [4]int{16, 24, 24, 0}, false)
	h := archhash.NewHash()
	h.Put(cos)
	h.Put(sin)
	if got := h.Sum(); got != ropeGolden {
		t.Errorf("rotary table hash %#x, recorded %#x", got, uint64(ropeGolden))
	}
}
