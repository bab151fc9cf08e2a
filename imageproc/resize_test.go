package imageproc

import (
	"bytes"
	"fmt"
	"math"
	"testing"
)

// resizeReference is a literal, table-free transcription of Pillow's
// ImagingResample for 8-bit images with the BICUBIC filter: weights are
// recomputed for every output sample, the intermediate covers every source
// row, and each channel is handled separately. The fast path must agree
// with it exactly.
func resizeReference(src *Image, width, height int) *Image {
	weights := func(inSize, outSize, i int) (first int, w []int32) {
		scale := float64(inSize) / float64(outSize)
		fscale := math.Max(scale, 1)
		support := 2 * fscale
		center := (float64(i) + 0.5) * scale
		lo := max(int(center-support+0.5), 0)
		hi := min(int(center+support+0.5), inSize)
		var raw []float64
		sum := 0.0
		for x := lo; x < hi; x++ {
			v := bicubic(float64(float64(x)-center+0.5) * float64(1/fscale))
			raw = append(raw, v)
			sum += v
		}
		for _, v := range raw {
			if sum != 0 {
				v /= sum
			}
			if v < 0 {
				w = append(w, int32(math.Trunc(v*(1<<22)-0.5)))
			} else {
				w = append(w, int32(math.Trunc(v*(1<<22)+0.5)))
			}
		}
		return lo, w
	}
	clamp := func(acc int64) uint8 { return uint8(min(max(acc>>22, 0), 255)) }
	cur := src
	if width != src.Width {
		tmp := NewImage(width, src.Height)
		for y := 0; y < src.Height; y++ {
			for x := 0; x < width; x++ {
				first, w := weights(src.Width, width, x)
				for c := 0; c < 3; c++ {
					acc := int64(1 << 21)
					for i, k := range w {
						acc += int64(src.Pix[(y*src.Width+first+i)*3+c]) * int64(k)
					}
					tmp.Pix[(y*width+x)*3+c] = clamp(acc)
				}
			}
		}
		cur = tmp
	}
	if height == src.Height {
		return &Image{Width: cur.Width, Height: cur.Height, Pix: bytes.Clone(cur.Pix)}
	}
	out := NewImage(cur.Width, height)
	for y := 0; y < height; y++ {
		first, w := weights(cur.Height, height, y)
		for x := 0; x < cur.Width; x++ {
			for c := 0; c < 3; c++ {
				acc := int64(1 << 21)
				for i, k := range w {
					acc += int64(cur.Pix[((first+i)*cur.Width+x)*3+c]) * int64(k)
				}
				out.Pix[(y*cur.Width+x)*3+c] = clamp(acc)
			}
		}
	}
	return out
}

// forEachPath runs f with the assembly kernels (where the CPU has them)
// and with the portable loops.
func forEachPath(t *testing.T, f func(t *testing.T)) {
	saved := useVec
	defer func() { useVec = saved }()
	for _, simd := range []bool{true, false} {
		if simd && !saved {
			continue
		}
		useVec = simd
		t.Run(fmt.Sprintf("simd=%v", simd), f)
	}
}

func TestResizeMatchesReference(t *testing.T) { forEachPath(t, testResizeMatchesReference) }

func testResizeMatchesReference(t *testing.T) {
	sizes := [][4]int{
		{1, 1, 5, 7}, {5, 7, 1, 1}, {3, 2, 2, 3}, {40, 30, 40, 17}, {40, 30, 13, 30},
		{100, 80, 28, 28}, {28, 28, 100, 80}, {333, 517, 252, 392}, {640, 480, 252, 168},
		{97, 61, 98, 60}, {200, 200, 199, 201}, {17, 300, 56, 28}, {1000, 3, 5, 1},
	}
	for i, s := range sizes {
		src := randomImage(s[0], s[1], uint64(i))
		got := ResizeBicubic(src, s[2], s[3])
		want := resizeReference(src, s[2], s[3])
		if got.Width != s[2] || got.Height != s[3] {
			t.Fatalf("%v: size %dx%d", s, got.Width, got.Height)
		}
		if maxd, mean := pixelDiff(got.Pix, want.Pix); maxd != 0 {
			t.Errorf("%dx%d -> %dx%d: differs from reference by up to %d (mean %.3f)", s[0], s[1], s[2], s[3], maxd, mean)
		}
	}
}

// A constant image stays constant: the fixed-point weights of each output
// sample sum to 2^22 within a few units, far less than the 2^21 rounding
// margin a level can absorb.
func TestResizeConstant(t *testing.T) {
	for _, v := range []uint8{0, 1, 127, 254, 255} {
		src := NewImage(123, 77)
		for i := range src.Pix {
			src.Pix[i] = v
		}
		for _, s := range [][2]int{{28, 28}, {300, 200}, {123, 10}, {7, 77}} {
			out := ResizeBicubic(src, s[0], s[1])
			for i, p := range out.Pix {
				if p != v {
					t.Fatalf("level %d resized to %v: pixel %d is %d", v, s, i, p)
				}
			}
		}
	}
}

func TestResizeSameSizeCopies(t *testing.T) {
	src := randomImage(30, 20, 9)
	out := ResizeBicubic(src, 30, 20)
	if !bytes.Equal(out.Pix, src.Pix) {
		t.Fatal("same-size resize changed pixels")
	}
	out.Pix[0]++
	if out.Pix[0] == src.Pix[0] {
		t.Fatal("same-size resize must return a copy")
	}
}

func TestResizeParallelMatchesSerial(t *testing.T) { forEachPath(t, testResizeParallel) }

func testResizeParallel(t *testing.T) {
	// Large enough to be split across goroutines.
	src := randomImage(1200, 900, 3)
	got := ResizeBicubic(src, 616, 448)
	want := resizeReference(src, 616, 448)
	if maxd, _ := pixelDiff(got.Pix, want.Pix); maxd != 0 {
		t.Fatalf("parallel resize differs from reference by %d", maxd)
	}
}

// The printed pixels are what Pillow 9.4 gives for the same input.
func ExampleResizeBicubic() {
	src := NewImage(4, 2)
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 10)
	}
	out := ResizeBicubic(src, 2, 1)
	fmt.Println(out.Width, out.Height, out.Pix)
	// Output: 2 1 [78 88 98 132 142 152]
}

func TestResizeDegenerateSizes(t *testing.T) {
	src := randomImage(4, 4, 1)
	for _, s := range [][2]int{{0, 3}, {3, 0}, {-1, 2}} {
		out := ResizeBicubic(src, s[0], s[1])
		if len(out.Pix) != 3*out.Width*out.Height || out.Width < 0 || out.Height < 0 {
			t.Errorf("%v: %dx%d with %d bytes", s, out.Width, out.Height, len(out.Pix))
		}
	}
	if out := ResizeBicubic(&Image{}, 5, 5); len(out.Pix) != 75 {
		t.Errorf("empty source: %d bytes", len(out.Pix))
	}
}

// TestSplitVector compares the vector widening of RGB rows into planes with
// the plain loop, for every row length up to 70 pixels.
func TestSplitVector(t *testing.T) {
	if !useVec {
		t.Skip("no vector kernel on this machine")
	}
	for n := 1; n <= 70; n++ {
		src := randomImage(n, 1, uint64(n))
		planes := make([]int32, 3*n)
		r, g, b := planes[:n], planes[n:2*n], planes[2*n:]
		done := splitVec(src.Pix, r, g, b)
		if done != n&^15 {
			t.Fatalf("%d pixels: vector part %d", n, done)
		}
		for x := range done {
			p := src.Pix[3*x:]
			if r[x] != int32(p[0]) || g[x] != int32(p[1]) || b[x] != int32(p[2]) {
				t.Fatalf("%d pixels: pixel %d is (%d %d %d), want %v", n, x, r[x], g[x], b[x], p[:3])
			}
		}
	}
}
