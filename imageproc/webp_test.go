package imageproc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"math/rand/v2"
	"testing"
)

// fancyReference converts planar 4:2:0 YCbCr to RGB the way libwebp's
// EmitFancyRGB drives UpsampleRgbLinePair: output rows in pairs sharing two
// chroma rows, U and V packed into one uint32 (u | v<<16) and blended
// together, the first row (and the last of an even height) on its own.
// It is written independently of webpFancyRGB's per-row formulation.
func fancyReference(src *image.YCbCr) []uint8 {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	out := make([]uint8, 3*w*h)
	put := func(y, x int, uv uint32) {
		r, g, b := webpYUVToRGB(int(src.Y[y*src.YStride+x]), int(uv&0xff), int(uv>>16))
		copy(out[3*(y*w+x):], []uint8{r, g, b})
	}
	load := func(row, x int) uint32 {
		return uint32(src.Cb[row*src.CStride+x]) | uint32(src.Cr[row*src.CStride+x])<<16
	}
	// pair emits output rows top (and bottom, if >= 0) from chroma rows
	// tr (top) and cr (current).
	pair := func(top, bottom, tr, cr int) {
		last := (w - 1) >> 1
		tl, l := load(tr, 0), load(cr, 0)
		put(top, 0, (3*tl+l+0x00020002)>>2)
		if bottom >= 0 {
			put(bottom, 0, (3*l+tl+0x00020002)>>2)
		}
		for x := 1; x <= last; x++ {
			t, uv := load(tr, x), load(cr, x)
			avg := tl + t + l + uv + 0x00080008
			d12 := (avg + 2*(t+l)) >> 3
			d03 := (avg + 2*(tl+uv)) >> 3
			put(top, 2*x-1, (d12+tl)>>1)
			put(top, 2*x, (d03+t)>>1)
			if bottom >= 0 {
				put(bottom, 2*x-1, (d03+l)>>1)
				put(bottom, 2*x, (d12+uv)>>1)
			}
			tl, l = t, uv
		}
		if w&1 == 0 {
			put(top, w-1, (3*tl+l+0x00020002)>>2)
			if bottom >= 0 {
				put(bottom, w-1, (3*l+tl+0x00020002)>>2)
			}
		}
	}
	pair(0, -1, 0, 0)
	for y := 1; y+1 < h; y += 2 {
		pair(y, y+1, (y-1)/2, (y+1)/2)
	}
	if h%2 == 0 {
		pair(h-1, -1, h/2-1, h/2-1)
	}
	return out
}

func TestWebPFancyUpsampling(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range [][2]int{{1, 1}, {2, 2}, {1, 5}, {5, 1}, {3, 4}, {4, 3}, {16, 16}, {17, 9}, {33, 34}, {64, 31}} {
		m := image.NewYCbCr(image.Rect(0, 0, s[0], s[1]), image.YCbCrSubsampleRatio420)
		for _, p := range [][]uint8{m.Y, m.Cb, m.Cr} {
			for i := range p {
				p[i] = uint8(r.UintN(256))
			}
		}
		got := webpFancyRGB(m)
		if want := fancyReference(m); !bytes.Equal(got.Pix, want) {
			maxd, _ := pixelDiff(got.Pix, want)
			t.Errorf("%dx%d: differs from the line-pair formulation by up to %d", s[0], s[1], maxd)
		}
	}
}

// TestWebPYUVToRGB pins libwebp's fixed-point conversion at a few points,
// worked by hand from its formulas.
func TestWebPYUVToRGB(t *testing.T) {
	for _, c := range []struct{ y, u, v, r, g, b int }{
		{16, 128, 128, 0, 0, 0},
		{235, 128, 128, 255, 255, 255},
		{128, 128, 128, 130, 130, 130},
		{81, 90, 240, 254, 0, 0},
		{255, 128, 255, 255, 175, 255}, // R and B clamp from 481 and 278
	} {
		r, g, b := webpYUVToRGB(c.y, c.u, c.v)
		if int(r) != c.r || int(g) != c.g || int(b) != c.b {
			t.Errorf("yuv %d %d %d: rgb %d %d %d, want %d %d %d", c.y, c.u, c.v, r, g, b, c.r, c.g, c.b)
		}
	}
}

// vp8lPixel is a lossless WebP bitstream of a single pixel: no transforms,
// no colour cache, and five one-symbol prefix codes, so the pixel itself
// takes no bits.
func vp8lPixel(r, g, b, a uint8) []byte {
	var out []byte
	var acc uint64
	n := 0
	put := func(v uint64, bits int) {
		acc |= v << n
		n += bits
		for n >= 8 {
			out = append(out, byte(acc))
			acc >>= 8
			n -= 8
		}
	}
	put(0x2f, 8)                              // signature
	put(0, 14)                                // width - 1
	put(0, 14)                                // height - 1
	put(1, 1)                                 // alpha used
	put(0, 3)                                 // version
	put(0, 1)                                 // no transform
	put(0, 1)                                 // no colour cache
	put(0, 1)                                 // no meta prefix codes
	for _, sym := range []uint8{g, r, b, a} { // green, red, blue, alpha
		put(1, 1) // simple code
		put(0, 1) // one symbol
		put(1, 1) // 8-bit symbol
		put(uint64(sym), 8)
	}
	put(1, 1) // distance: simple code
	put(0, 1) // one symbol
	put(0, 1) // 1-bit symbol
	put(0, 1) // symbol 0
	put(0, 7) // flush
	return out
}

func riffChunk(fourcc string, payload []byte) []byte {
	b := append([]byte(fourcc), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(payload)))
	b = append(b, payload...)
	if len(payload)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func riffWebP(chunks ...[]byte) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBP")
	for _, c := range chunks {
		b = append(b, c...)
	}
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

// animatedWebP is a 3x2 canvas whose first frame is one pixel at (x, 0).
func animatedWebP(x int) []byte {
	vp8x := []byte{1<<1 | 1<<4, 0, 0, 0, 2, 0, 0, 1, 0, 0} // animation, alpha; 3x2
	anmf := []byte{byte(x / 2), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0}
	anmf = append(anmf, riffChunk("VP8L", vp8lPixel(200, 100, 50, 7))...)
	return riffWebP(riffChunk("VP8X", vp8x), riffChunk("ANIM", make([]byte, 6)), riffChunk("ANMF", anmf),
		riffChunk("ANMF", anmf))
}

func TestDecodeWebPLossless(t *testing.T) {
	img := mustDecode(t, riffWebP(riffChunk("VP8L", vp8lPixel(200, 100, 50, 7))))
	wantPixels(t, img, [3]uint8{200, 100, 50})
}

// TestDecodeWebPAnimated checks the first frame rendered as libwebp's
// animation decoder does: transparent black canvas (black once alpha is
// dropped) with the frame at its offset.
func TestDecodeWebPAnimated(t *testing.T) {
	img := mustDecode(t, animatedWebP(2))
	if img.Width != 3 || img.Height != 2 {
		t.Fatalf("%dx%d, want the 3x2 canvas", img.Width, img.Height)
	}
	black := [3]uint8{}
	wantPixels(t, img, black, black, [3]uint8{200, 100, 50}, black, black, black)
	if _, err := Decode(animatedWebP(4), DecodeOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("frame outside the canvas: %v, want ErrCorrupt", err)
	}
}
