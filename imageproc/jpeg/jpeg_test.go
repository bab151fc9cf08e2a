package jpeg

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vembed/vembed/internal/fixtures"
)

// residual compares two RGB buffers: the largest and mean absolute
// difference and the number of differing bytes.
func residual(got, want []uint8) (maxd int, mean float64, n int) {
	sum := 0
	for i := range want {
		d := int(got[i]) - int(want[i])
		if d < 0 {
			d = -d
		}
		if d != 0 {
			n++
		}
		sum += d
		maxd = max(maxd, d)
	}
	return maxd, float64(sum) / float64(len(want)), n
}

// checkExact decodes data and requires every byte to equal want (the
// pixels Pillow 9.4 / libjpeg-turbo 2.1 produce): bit-exactness is the
// goal, so the tolerance is zero.
func checkExact(t *testing.T, name string, data, want []byte, w, h int) {
	t.Helper()
	img, err := Decode(data, 1<<26)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if img.Width != w || img.Height != h {
		t.Fatalf("%s: size %dx%d, want %dx%d", name, img.Width, img.Height, w, h)
	}
	if len(want) != w*h*3 {
		t.Fatalf("%s: reference has %d bytes, want %d", name, len(want), w*h*3)
	}
	maxd, mean, n := residual(img.Pix, want)
	t.Logf("%s: max residual %d, mean %.4f, %d bytes differ", name, maxd, mean, n)
	if n != 0 {
		t.Errorf("%s: not bit-exact: max %d mean %.4f (%d of %d bytes differ)", name, maxd, mean, n, len(want))
	}
}

func TestFixtures(t *testing.T) {
	dir := fixtures.Dir(t, "images")
	raw, err := os.ReadFile(filepath.Join(dir, "images.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Images []struct {
			File       string `json:"file"`
			Format     string `json:"format"`
			Width      int    `json:"width"`
			Height     int    `json:"height"`
			DecodedRGB struct {
				File string `json:"file"`
			} `json:"decoded_rgb"`
		} `json:"images"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, im := range idx.Images {
		if im.Format != "JPEG" && !strings.HasSuffix(im.File, ".jpg") {
			continue
		}
		n++
		data, err := os.ReadFile(filepath.Join(dir, im.File))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, im.DecodedRGB.File))
		if err != nil {
			t.Fatal(err)
		}
		checkExact(t, im.File, data, want, im.Width, im.Height)
		info, err := DecodeConfig(data)
		if err != nil {
			t.Fatalf("%s: DecodeConfig: %v", im.File, err)
		}
		if info.Width != im.Width || info.Height != im.Height || info.Components != 3 || info.ColorTransform != "ycbcr" {
			t.Errorf("%s: DecodeConfig = %+v", im.File, info)
		}
		if strings.Contains(im.File, "progressive") != info.Progressive {
			t.Errorf("%s: Progressive = %v", im.File, info.Progressive)
		}
		if strings.Contains(im.File, "orientation6") && info.EXIFOrientation != 6 {
			t.Errorf("%s: EXIFOrientation = %d, want 6", im.File, info.EXIFOrientation)
		}
	}
	if n == 0 {
		t.Fatal("no JPEG fixtures listed in images.json")
	}
}
