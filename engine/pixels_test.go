package engine

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"
)

// opaqueRGBA draws a w×h opaque image whose content depends on seed.
func opaqueRGBA(w, h, seed int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, color.RGBA{uint8(x*7 + seed*31), uint8(y*5 + seed*17), uint8((x ^ y) + seed), 255})
		}
	}
	return img
}

// TestPixelsPart: an image given as decoded pixels embeds bit for bit as
// the same pixels in a PNG file do (single vectors and multi-vector rows,
// a size the model resizes and one it takes as it is, a sub-image whose
// bounds do not start at 0), with every cache off so both go through
// decoding, resizing and the model.
func TestPixelsPart(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.EmbeddingCacheBytes, c.EncoderCacheBytes, c.ImageCacheBytes = -1, -1, -1 })
	big := opaqueRGBA(300, 200, 3)
	sub := big.SubImage(image.Rect(17, 9, 17+123, 9+77)).(*image.RGBA)
	for _, tc := range []struct {
		name string
		img  *image.RGBA
	}{{"resized", opaqueRGBA(97, 61, 1)}, {"exact", opaqueRGBA(56, 56, 2)}, {"subimage", sub}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := png.Encode(&buf, tc.img); err != nil {
				t.Fatal(err)
			}
			for _, multi := range []bool{false, true} {
				fromPNG := embed(t, e, Request{Inputs: []Input{ImageInput(buf.Bytes())}, Multivector: multi})
				fromPix := embed(t, e, Request{Inputs: []Input{{Parts: []Part{Pixels(tc.img)}}}, Multivector: multi})
				// Both kinds in one request too (batched in one vision pass).
				both := embed(t, e, Request{Inputs: []Input{{Parts: []Part{Pixels(tc.img)}}, ImageInput(buf.Bytes())}, Multivector: multi})
				for _, got := range []Embedding{fromPix.Embeddings[0], both.Embeddings[0], both.Embeddings[1]} {
					want := fromPNG.Embeddings[0]
					if got.Tokens != want.Tokens {
						t.Fatalf("multi=%v: %d tokens, PNG %d", multi, got.Tokens, want.Tokens)
					}
					if !sameBits(got.Vector, want.Vector) {
						t.Fatalf("multi=%v: single vector differs from the PNG's (max diff %g)", multi, maxDiff(got.Vector, want.Vector))
					}
					if len(got.Multi) != len(want.Multi) {
						t.Fatalf("multi=%v: %d rows, PNG %d", multi, len(got.Multi), len(want.Multi))
					}
					for i := range got.Multi {
						if !sameBits(got.Multi[i], want.Multi[i]) {
							t.Fatalf("multi=%v: row %d differs from the PNG's", multi, i)
						}
					}
				}
			}
		})
	}
}

// TestPixelsPartRefused: translucent and empty pixel images are input
// errors.
func TestPixelsPartRefused(t *testing.T) {
	e := sharedEngine(t)
	trans := opaqueRGBA(40, 40, 1)
	trans.Pix[3] = 128
	for name, img := range map[string]*image.RGBA{"translucent": trans, "empty": image.NewRGBA(image.Rect(0, 0, 0, 0))} {
		_, err := e.Embed(t.Context(), Request{Inputs: []Input{{Parts: []Part{Pixels(img)}}}})
		if _, ok := AsInputError(err); !ok {
			t.Errorf("%s: %v, want an InputError", name, err)
		}
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
