package imageproc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

type fixtureArray struct {
	File  string `json:"file"`
	Shape []int  `json:"shape"`
}

type fixtureImage struct {
	Name       string       `json:"name"`
	File       string       `json:"file"`
	Format     string       `json:"format"`
	Width      int          `json:"width"`
	Height     int          `json:"height"`
	MinPixels  int          `json:"min_pixels"`
	MaxPixels  int          `json:"max_pixels"`
	DecodedRGB fixtureArray `json:"decoded_rgb"`
	Expected   struct {
		Error         string       `json:"error"`
		ResizedHeight int          `json:"resized_height"`
		ResizedWidth  int          `json:"resized_width"`
		GridTHW       [3]int       `json:"grid_thw"`
		NMergedTokens int          `json:"n_merged_tokens"`
		ResizedRGB    fixtureArray `json:"resized_rgb"`
		Patches       fixtureArray `json:"patches"`
	} `json:"expected"`
}

type fixtureIndex struct {
	ImageMean         [3]float32     `json:"image_mean"`
	ImageStd          [3]float32     `json:"image_std"`
	PatchSize         int            `json:"patch_size"`
	MergeSize         int            `json:"merge_size"`
	TemporalPatchSize int            `json:"temporal_patch_size"`
	Images            []fixtureImage `json:"images"`
}

func loadFixtures(t *testing.T) (string, *fixtureIndex) {
	t.Helper()
	dir := fixtures.Dir(t, "images")
	b, err := os.ReadFile(filepath.Join(dir, "images.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx fixtureIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	return dir, &idx
}

func readFixture(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (idx *fixtureIndex) config(im fixtureImage) Config {
	return Config{PatchSize: idx.PatchSize, MergeSize: idx.MergeSize, TemporalPatchSize: idx.TemporalPatchSize,
		Mean: idx.ImageMean, Std: idx.ImageStd, MinPixels: im.MinPixels, MaxPixels: im.MaxPixels}
}

// pixelDiff returns the largest and the mean absolute level difference.
func pixelDiff(a, b []uint8) (maxd int, mean float64) {
	sum := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		sum += d
		maxd = max(maxd, d)
	}
	return maxd, float64(sum) / float64(len(a))
}

// TestFixtureDecode checks decoding against Pillow's convert("RGB").
func TestFixtureDecode(t *testing.T) {
	dir, idx := loadFixtures(t)
	for _, im := range idx.Images {
		t.Run(im.Name, func(t *testing.T) {
			img, err := Decode(readFixture(t, dir, im.File), DecodeOptions{})
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if img.Width != im.Width || img.Height != im.Height {
				t.Fatalf("size %dx%d, want %dx%d", img.Width, img.Height, im.Width, im.Height)
			}
			want := readFixture(t, dir, im.DecodedRGB.File)
			maxd, mean := pixelDiff(img.Pix, want)
			if maxd == 0 {
				return
			}
			if im.Format == "JPEG" && !jpegExact {
				t.Logf("JPEG residual vs libjpeg-turbo: max %d, mean %.4f levels", maxd, mean)
				return
			}
			t.Errorf("decoded pixels differ from Pillow: max %d, mean %.4f levels", maxd, mean)
		})
	}
}

// TestFixtureResize checks smart resize, the bicubic resize (starting from
// Pillow's decoded pixels, so decoding cannot mask a resize error) and the
// patches.
func TestFixtureResize(t *testing.T) {
	dir, idx := loadFixtures(t)
	for _, im := range idx.Images {
		t.Run(im.Name, func(t *testing.T) {
			src := &Image{Width: im.Width, Height: im.Height, Pix: readFixture(t, dir, im.DecodedRGB.File)}
			cfg := idx.config(im)
			if im.Expected.Error != "" {
				_, err := FromImage(src, cfg)
				if !errors.Is(err, ErrSize) || !strings.Contains(err.Error(), im.Expected.Error) {
					t.Fatalf("error %v, want ErrSize with %q", err, im.Expected.Error)
				}
				return
			}
			w, h, err := cfg.TargetSize(src.Width, src.Height)
			if err != nil {
				t.Fatal(err)
			}
			if w != im.Expected.ResizedWidth || h != im.Expected.ResizedHeight {
				t.Fatalf("target %dx%d, want %dx%d", w, h, im.Expected.ResizedWidth, im.Expected.ResizedHeight)
			}
			resized := ResizeBicubic(src, w, h)
			want := readFixture(t, dir, im.Expected.ResizedRGB.File)
			if maxd, mean := pixelDiff(resized.Pix, want); maxd != 0 {
				t.Errorf("resized pixels differ from Pillow: max %d, mean %.4f", maxd, mean)
			}
			p, err := FromImage(src, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkPatches(t, p, im, readFixture(t, dir, im.Expected.Patches.File))
		})
	}
}

// TestFixturePreprocess runs the whole pipeline from the encoded file.
func TestFixturePreprocess(t *testing.T) {
	dir, idx := loadFixtures(t)
	for _, im := range idx.Images {
		if im.Format == "JPEG" && !jpegExact {
			continue // decoding residual reported by TestFixtureDecode
		}
		t.Run(im.Name, func(t *testing.T) {
			p, err := Preprocess(readFixture(t, dir, im.File), idx.config(im), DecodeOptions{})
			if im.Expected.Error != "" {
				if !errors.Is(err, ErrSize) {
					t.Fatalf("error %v, want ErrSize", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkPatches(t, p, im, readFixture(t, dir, im.Expected.Patches.File))
		})
	}
}

func checkPatches(t *testing.T, p *Patches, im fixtureImage, raw []byte) {
	t.Helper()
	if g := [3]int{p.GridT, p.GridH, p.GridW}; g != im.Expected.GridTHW {
		t.Fatalf("grid %v, want %v", g, im.Expected.GridTHW)
	}
	if p.MergedTokens() != im.Expected.NMergedTokens {
		t.Errorf("merged tokens %d, want %d", p.MergedTokens(), im.Expected.NMergedTokens)
	}
	if p.ResizedW != im.Expected.ResizedWidth || p.ResizedH != im.Expected.ResizedHeight {
		t.Errorf("resized %dx%d, want %dx%d", p.ResizedW, p.ResizedH, im.Expected.ResizedWidth, im.Expected.ResizedHeight)
	}
	if len(raw) != 4*len(p.Data) {
		t.Fatalf("%d patch values, want %d", len(p.Data), len(raw)/4)
	}
	// Same pixels, same float32 operations in the same order: the values
	// should be identical; 1e-6 leaves room for one ulp of |x| <= 2.2.
	const tol = 1e-6
	worst := 0.0
	for i, v := range p.Data {
		want := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		worst = max(worst, math.Abs(float64(v)-float64(want)))
	}
	if worst > tol {
		t.Errorf("patches differ by up to %g (tolerance %g)", worst, tol)
	}
}
