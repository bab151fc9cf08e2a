package imageproc

import (
	"errors"
	"testing"
)

// Expected sizes computed with the reference smart_resize in Python.
func TestSmartResize(t *testing.T) {
	const jmin, jmax = 3136, 602112
	cases := []struct {
		name             string
		h, w, minP, maxP int
		wantH, wantW     int // 0: ErrSize expected
	}{
		{"tiny square upscaled to min pixels", 28, 28, jmin, jmax, 56, 56},
		{"width below factor", 27, 100, jmin, jmax, 0, 0},
		{"height below factor", 100, 27, jmin, jmax, 0, 0},
		{"one pixel", 1, 1, jmin, jmax, 0, 0},
		{"aspect exactly 200", 28, 5600, jmin, jmax, 28, 5600},
		{"aspect exactly 200 tall", 5600, 28, jmin, jmax, 5600, 28},
		{"aspect 201", 28, 5628, jmin, jmax, 0, 0},
		{"aspect 200 after rounding", 29, 5800, jmin, jmax, 28, 5796},
		{"multiple of 28 kept", 56, 84, jmin, jmax, 56, 84},
		{"multiple of 28 kept, square", 280, 280, jmin, jmax, 280, 280},
		{"half to even 2.5 and 4.5", 70, 126, jmin, jmax, 56, 112},
		{"half to even 1.5", 42, 42, jmin, jmax, 56, 56},
		{"half to even 1.5 and 2.5", 42, 70, jmin, jmax, 56, 56},
		{"half to even 3.5", 98, 98, jmin, jmax, 112, 112},
		{"float64 edge 38x38", 38, 38, jmin, jmax, 84, 84},
		{"min pixels ceil path", 30, 45, jmin, jmax, 56, 84},
		{"full HD", 1080, 1920, jmin, jmax, 560, 1008},
		{"spec example", 750, 1000, jmin, jmax, 672, 896},
		{"6 MP photo", 3000, 2000, jmin, jmax, 924, 616},
		{"huge", 10000, 10000, jmin, jmax, 756, 756},
		{"libjpeg maximum", 65500, 65500, jmin, jmax, 756, 756},
		{"max pixels exactly met", 224, 224, jmin, 50176, 224, 224},
		{"max equals min", 1000, 1000, jmin, 3136, 56, 56},
		{"large min pixels", 56, 56, 200704, 1003520, 448, 448},
	}
	for _, c := range cases {
		h, w, err := SmartResize(c.h, c.w, 28, c.minP, c.maxP)
		if c.wantH == 0 {
			if !errors.Is(err, ErrSize) {
				t.Errorf("%s: %dx%d: got %dx%d, %v; want ErrSize", c.name, c.h, c.w, h, w, err)
			}
			continue
		}
		if err != nil || h != c.wantH || w != c.wantW {
			t.Errorf("%s: %dx%d: got %dx%d, %v; want %dx%d", c.name, c.h, c.w, h, w, err, c.wantH, c.wantW)
		}
	}
}

// TestSmartResizeInvariants sweeps sizes and checks what the reference
// guarantees: multiples of the factor within the pixel budget.
func TestSmartResizeInvariants(t *testing.T) {
	const minP, maxP = 3136, 602112
	for h := 28; h < 4000; h += 37 {
		for w := 28; w < 4000; w += 53 {
			rh, rw, err := SmartResize(h, w, 28, minP, maxP)
			if err != nil {
				if float64(max(h, w))/float64(min(h, w)) <= 200 {
					t.Fatalf("%dx%d: %v", h, w, err)
				}
				continue
			}
			if rh%28 != 0 || rw%28 != 0 || rh*rw > maxP || rh*rw < minP {
				t.Fatalf("%dx%d -> %dx%d breaks the constraints", h, w, rh, rw)
			}
		}
	}
}

func TestSmartResizeMessages(t *testing.T) {
	_, _, err := SmartResize(40, 20, 28, 3136, 602112)
	if err == nil || !contains(err.Error(), "height:40 or width:20 must be larger than factor:28") {
		t.Errorf("error %v", err)
	}
	_, _, err = SmartResize(28, 5628, 28, 3136, 602112)
	if err == nil || !contains(err.Error(), "absolute aspect ratio must be smaller than 200, got 201.0") {
		t.Errorf("error %v", err)
	}
}
