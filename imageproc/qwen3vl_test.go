package imageproc

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

// qwen3VLConfig is Qwen3-VL-Embedding's official preprocessing.
func qwen3VLConfig() Config {
	return Config{PatchSize: 16, MergeSize: 2, TemporalPatchSize: 2, Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5},
		MinPixels: 4096, MaxPixels: 1843200, QwenVLUtils: true}
}

// TestQwen3VLFixtures preprocesses every image of the qwen3vl fixture
// cases: the resized pixels must be exact and the patches within 1e-6.
func TestQwen3VLFixtures(t *testing.T) {
	dir := filepath.Join(fixtures.Dir(t, "qwen3vl"), "cases")
	cases, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range cases {
		cdir := filepath.Join(dir, e.Name())
		var c struct {
			Images []struct {
				File       string       `json:"file"`
				ResizedHW  [2]int       `json:"resized_hw"`
				GridTHW    [3]int       `json:"grid_thw"`
				ResizedRGB fixtures.Raw `json:"resized_rgb"`
				Patches    fixtures.Raw `json:"patches"`
			} `json:"images"`
		}
		fixtures.ReadJSON(t, filepath.Join(cdir, "case.json"), &c)
		for _, im := range c.Images {
			n++
			data, err := os.ReadFile(filepath.Join(cdir, im.File))
			if err != nil {
				t.Fatal(err)
			}
			p, err := Preprocess(data, qwen3VLConfig(), DecodeOptions{})
			if err != nil {
				t.Fatalf("%s: %v", im.File, err)
			}
			if p.ResizedH != im.ResizedHW[0] || p.ResizedW != im.ResizedHW[1] || [3]int{p.GridT, p.GridH, p.GridW} != im.GridTHW {
				t.Fatalf("%s: resized %dx%d grid %dx%dx%d, want %v grid %v", im.File, p.ResizedH, p.ResizedW, p.GridT, p.GridH, p.GridW, im.ResizedHW, im.GridTHW)
			}
			img, err := Decode(data, DecodeOptions{alphaOnWhite: true})
			if err != nil {
				t.Fatal(err)
			}
			rs := ResizeBicubic(img, p.ResizedW, p.ResizedH)
			if !bytes.Equal(rs.Pix, fixtures.ReadRaw(t, cdir, im.ResizedRGB, 1)) {
				t.Errorf("%s: resized pixels differ", im.File)
			}
			want := fixtures.ReadF32(t, cdir, im.Patches)
			worst := 0.0
			for i, v := range want {
				worst = math.Max(worst, math.Abs(float64(p.Data[i]-v)))
			}
			if worst > 1e-6 || len(p.Data) != len(want) {
				t.Errorf("%s: patches differ by %g (%d values, want %d)", im.File, worst, len(p.Data), len(want))
			}
		}
	}
	if n == 0 {
		t.Fatal("no images in the qwen3vl cases")
	}
}

// TestAlphaOnWhite checks the qwen-vl-utils conversion: an RGBA PNG is
// composited on white with Pillow's rounding, other modes keep dropping
// alpha, and the transformers path keeps the straight colours.
func TestAlphaOnWhite(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for i := range 64 * 64 {
		m.SetNRGBA(i%64, i/64, color.NRGBA{R: uint8(i), G: 200, B: 7, A: uint8(i * 3)})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	white, err := Decode(buf.Bytes(), DecodeOptions{alphaOnWhite: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Decode(buf.Bytes(), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 64 * 64 {
		a := float64(uint8(i * 3))
		for c, v := range []uint8{uint8(i), 200, 7} {
			want := math.Round((255*(255-a) + float64(v)*a) / 255)
			if got := white.Pix[3*i+c]; math.Abs(float64(got)-want) > 0 {
				t.Fatalf("pixel %d channel %d: %d, want %v", i, c, got, want)
			}
			if plain.Pix[3*i+c] != v {
				t.Fatalf("pixel %d channel %d without compositing: %d, want %d", i, c, plain.Pix[3*i+c], v)
			}
		}
	}
}

// TestSmartResizeVLUtils checks the qwen-vl-utils rounding: short sides are
// raised to the factor instead of refused, and the budget still holds.
func TestSmartResizeVLUtils(t *testing.T) {
	for _, c := range []struct{ h, w, wantH, wantW int }{
		{200, 300, 192, 288}, {20, 40, 64, 96}, {1, 1, 64, 64}, {10, 2000, 32, 1984}, {112, 168, 128, 160},
	} {
		h, w, err := SmartResizeVLUtils(c.h, c.w, 32, 4096, 1843200)
		if err != nil || h != c.wantH || w != c.wantW {
			t.Errorf("%dx%d: %dx%d (%v), want %dx%d", c.h, c.w, h, w, err, c.wantH, c.wantW)
		}
		if h*w > 1843200 || h*w < 4096 || h%32 != 0 || w%32 != 0 {
			t.Errorf("%dx%d -> %dx%d breaks the budget", c.h, c.w, h, w)
		}
	}
	if _, _, err := SmartResizeVLUtils(10, 2020, 32, 4096, 1843200); err == nil {
		t.Error("aspect ratio 202 accepted")
	}
}
