package imageproc

import (
	"bytes"
	"image"
	"image/color"
	"testing"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
)

// FuzzDecode feeds arbitrary bytes to Decode. It must never panic, and an
// accepted image must respect the limits and be consistent; the limits keep
// every allocation bounded (at most fuzzLimits.MaxPixels pixels).
func FuzzDecode(f *testing.F) {
	small := photoLike(24, 17)
	gray16 := image.NewGray16(image.Rect(0, 0, 5, 4))
	pal := image.NewPaletted(image.Rect(0, 0, 6, 5), color.Palette{color.NRGBA{1, 2, 3, 0}, color.White})
	var bb, tb bytes.Buffer
	bmp.Encode(&bb, small)
	tiff.Encode(&tb, small, &tiff.Options{Compression: tiff.Deflate})
	jpg := encodeJPEG(f, small, 80)
	for _, seed := range [][]byte{
		encodePNG(f, small), encodePNG(f, gray16), encodePNG(f, pal),
		jpg, withEXIFOrientation(jpg, 8), gifWithTransparentColour(f),
		bb.Bytes(), tb.Bytes(), pngHeaderOnly(3, 3),
		riffWebP(riffChunk("VP8L", vp8lPixel(1, 2, 3, 4))), animatedWebP(2), faxTIFF(1),
		[]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x02\x00\x02\x00\x40\x02\x02\x44\x01\x00;"),
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	catchPanics = false
	defer func() { catchPanics = true }()
	lim := Limits{MaxBytes: 1 << 20, MaxWidth: 4096, MaxHeight: 4096, MaxPixels: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte, orient bool) {
		img, err := Decode(data, DecodeOptions{Limits: lim, ApplyEXIFOrientation: orient})
		if err != nil {
			return
		}
		if img.Width <= 0 || img.Height <= 0 || int64(img.Width)*int64(img.Height) > lim.MaxPixels ||
			len(img.Pix) != 3*img.Width*img.Height {
			t.Fatalf("accepted image %dx%d with %d bytes", img.Width, img.Height, len(img.Pix))
		}
	})
}
