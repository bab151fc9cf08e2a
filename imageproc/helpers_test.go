package imageproc

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"strings"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// randomImage returns an image of uniform noise, the hardest case for a
// resampler's clamping.
func randomImage(w, h int, seed uint64) *Image {
	r := rand.New(rand.NewPCG(seed, 1))
	img := NewImage(w, h)
	for i := range img.Pix {
		img.Pix[i] = uint8(r.UintN(256))
	}
	return img
}

// photoLike fills an RGBA image with smooth gradients, edges and mild noise,
// so that JPEG encoding, decoding and resizing see photo-like statistics.
func photoLike(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(7, 7))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			base := 128 + 90*fx - 60*fy
			if (x/97+y/131)%3 == 0 { // blocky objects with hard edges
				base = 255 - base
			}
			n := float64(r.IntN(17) - 8)
			c := func(v float64) uint8 { return uint8(min(max(v, 0), 255)) }
			m.SetRGBA(x, y, color.RGBA{c(base + n), c(base*0.8 + 40*fy + n), c(200 - base*0.5 + n), 255})
		}
	}
	return m
}

func encodeJPEG(t testing.TB, m image.Image, quality int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
