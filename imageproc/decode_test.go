package imageproc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"testing"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
)

func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustDecode(t *testing.T, data []byte) *Image {
	t.Helper()
	img, err := Decode(data, DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func wantPixels(t *testing.T, img *Image, want ...[3]uint8) {
	t.Helper()
	if len(img.Pix) != 3*len(want) {
		t.Fatalf("%d pixels, want %d", len(img.Pix)/3, len(want))
	}
	for i, w := range want {
		if got := [3]uint8(img.Pix[3*i : 3*i+3]); got != w {
			t.Errorf("pixel %d: %v, want %v", i, got, w)
		}
	}
}

func TestDecodePNGLikePillow(t *testing.T) {
	t.Run("alpha dropped, colour kept", func(t *testing.T) {
		m := image.NewNRGBA(image.Rect(0, 0, 2, 1))
		m.SetNRGBA(0, 0, color.NRGBA{200, 100, 50, 0})
		m.SetNRGBA(1, 0, color.NRGBA{10, 20, 30, 128})
		wantPixels(t, mustDecode(t, encodePNG(t, m)), [3]uint8{200, 100, 50}, [3]uint8{10, 20, 30})
	})
	t.Run("16-bit gray clipped", func(t *testing.T) {
		vals := []uint16{0, 100, 255, 256, 1000, 65535}
		m := image.NewGray16(image.Rect(0, 0, len(vals), 1))
		for i, v := range vals {
			m.SetGray16(i, 0, color.Gray16{v})
		}
		wantPixels(t, mustDecode(t, encodePNG(t, m)),
			[3]uint8{0, 0, 0}, [3]uint8{100, 100, 100}, [3]uint8{255, 255, 255},
			[3]uint8{255, 255, 255}, [3]uint8{255, 255, 255}, [3]uint8{255, 255, 255})
	})
	t.Run("48-bit RGB high byte", func(t *testing.T) {
		m := image.NewRGBA64(image.Rect(0, 0, 1, 1))
		m.SetRGBA64(0, 0, color.RGBA64{0x12ff, 0x3400, 0xfe01, 0xffff})
		wantPixels(t, mustDecode(t, encodePNG(t, m)), [3]uint8{0x12, 0x34, 0xfe})
	})
	t.Run("palette transparency ignored", func(t *testing.T) {
		m := image.NewPaletted(image.Rect(0, 0, 2, 1), color.Palette{color.NRGBA{10, 20, 30, 0}, color.NRGBA{1, 2, 3, 255}})
		m.SetColorIndex(1, 0, 1)
		wantPixels(t, mustDecode(t, encodePNG(t, m)), [3]uint8{10, 20, 30}, [3]uint8{1, 2, 3})
	})
	t.Run("gray", func(t *testing.T) {
		m := image.NewGray(image.Rect(0, 0, 2, 1))
		m.Pix[0], m.Pix[1] = 7, 250
		wantPixels(t, mustDecode(t, encodePNG(t, m)), [3]uint8{7, 7, 7}, [3]uint8{250, 250, 250})
	})
}

// gifWithTransparentColour encodes a two-frame GIF whose transparent
// palette entry has a real colour (Go's encoder writes it as black, so it
// is patched into the global colour table afterwards).
func gifWithTransparentColour(t testing.TB) []byte {
	pal := color.Palette{color.RGBA{}, color.RGBA{1, 2, 3, 255}, color.RGBA{250, 251, 252, 255}, color.RGBA{9, 9, 9, 255}}
	f0 := image.NewPaletted(image.Rect(0, 0, 3, 1), pal)
	f0.Pix = []uint8{0, 1, 2}
	f1 := image.NewPaletted(image.Rect(0, 0, 3, 1), pal)
	f1.Pix = []uint8{3, 3, 3}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, &gif.GIF{Image: []*image.Paletted{f0, f1}, Delay: []int{0, 0},
		Config: image.Config{ColorModel: pal, Width: 3, Height: 1}}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if b[10]&0x80 == 0 {
		t.Fatal("encoder wrote no global colour table")
	}
	copy(b[13:16], []byte{200, 100, 50}) // colour of index 0
	return b
}

func TestDecodeGIFFirstFrame(t *testing.T) {
	b := gifWithTransparentColour(t)
	// Mark index 0 transparent in the first frame's graphic control block.
	i := bytes.Index(b, []byte{0x21, 0xF9, 0x04})
	if i < 0 {
		t.Fatal("no graphic control extension")
	}
	b[i+3] |= 1
	b[i+6] = 0
	wantPixels(t, mustDecode(t, b), [3]uint8{200, 100, 50}, [3]uint8{1, 2, 3}, [3]uint8{250, 251, 252})
}

func TestDecodeBMPAndTIFF(t *testing.T) {
	src := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	for i := range src.Pix {
		src.Pix[i] = uint8(40*i + 3)
	}
	for i := 3; i < len(src.Pix); i += 4 {
		src.Pix[i] = 255
	}
	want := make([][3]uint8, 6)
	for i := range want {
		want[i] = [3]uint8(src.Pix[4*i : 4*i+3])
	}
	var b1, b2 bytes.Buffer
	if err := bmp.Encode(&b1, src); err != nil {
		t.Fatal(err)
	}
	if err := tiff.Encode(&b2, src, &tiff.Options{Compression: tiff.Deflate}); err != nil {
		t.Fatal(err)
	}
	wantPixels(t, mustDecode(t, b1.Bytes()), want...)
	wantPixels(t, mustDecode(t, b2.Bytes()), want...)
}

// pngHeaderOnly is a PNG with a valid IHDR claiming width x height and no
// image data at all.
func pngHeaderOnly(width, height uint32) []byte {
	b := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	b = binary.BigEndian.AppendUint32(b, width)
	b = binary.BigEndian.AppendUint32(b, height)
	b = append(b, 8, 2, 0, 0, 0)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[12:]))
}

func TestLimitsCheckedOnHeader(t *testing.T) {
	// A header claiming 100000 x 100000 must be refused as too large, not
	// reported corrupt after an attempt to decode (or allocate) it.
	for _, data := range [][]byte{
		pngHeaderOnly(100000, 100000),
		pngHeaderOnly(20000, 10),
		// GIF logical screen of 65535 x 65535 and a 1x1 frame.
		[]byte("GIF89a\xff\xff\xff\xff\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02"),
		// GIF whose frame grows the canvas to 65535 x 65535.
		[]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00,\x00\x00\x00\x00\xff\xff\xff\xff\x00\x02"),
	} {
		_, err := Decode(data, DecodeOptions{})
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("got %v, want ErrTooLarge", err)
		}
	}
	img := encodePNG(t, image.NewGray(image.Rect(0, 0, 40, 30)))
	for _, lim := range []Limits{
		{MaxBytes: 10}, {MaxWidth: 39}, {MaxHeight: 29}, {MaxPixels: 40*30 - 1},
	} {
		if _, err := Decode(img, DecodeOptions{Limits: lim}); !errors.Is(err, ErrTooLarge) {
			t.Errorf("limits %+v: got %v, want ErrTooLarge", lim, err)
		}
	}
	for _, lim := range []Limits{{}, {MaxWidth: 40, MaxHeight: 30, MaxPixels: 1200}, {MaxBytes: -1, MaxWidth: -1, MaxHeight: -1, MaxPixels: -1}} {
		if _, err := Decode(img, DecodeOptions{Limits: lim}); err != nil {
			t.Errorf("limits %+v: %v", lim, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	png := encodePNG(t, photoLike(64, 48))
	jpg := encodeJPEG(t, photoLike(64, 48), 90)
	gifb := gifWithTransparentColour(t)
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrUnsupported},
		{"text", []byte("hello, world"), ErrUnsupported},
		{"svg", []byte("<svg xmlns='http://www.w3.org/2000/svg'/>"), ErrUnsupported},
		{"truncated png", png[:len(png)/2], ErrCorrupt},
		{"png signature only", png[:8], ErrCorrupt},
		{"truncated jpeg", jpg[:len(jpg)/2], ErrCorrupt},
		{"jpeg header only", jpg[:3], ErrCorrupt},
		{"truncated gif", gifb[:bytes.IndexByte(gifb[25:], ',')+25+12], ErrCorrupt},
		{"gif without image", gifb[:25], ErrCorrupt},
		{"riff not webp", []byte("RIFF\x04\x00\x00\x00WAVE"), ErrUnsupported},
		{"truncated webp", []byte("RIFF\x20\x00\x00\x00WEBPVP8 \x10\x00\x00\x00"), ErrCorrupt},
		{"bmp header only", []byte("BM\x00\x00"), ErrCorrupt},
	}
	for _, c := range cases {
		_, err := Decode(c.data, DecodeOptions{})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// withEXIFOrientation inserts an APP1 Exif segment carrying the given
// orientation right after a JPEG's SOI marker.
func withEXIFOrientation(jpg []byte, o uint16) []byte {
	tiffData := []byte("MM\x00\x2a\x00\x00\x00\x08\x00\x01")
	tiffData = append(tiffData, 0x01, 0x12, 0x00, 0x03, 0, 0, 0, 1)
	tiffData = binary.BigEndian.AppendUint16(tiffData, o)
	tiffData = append(tiffData, 0, 0, 0, 0, 0, 0)
	seg := append([]byte("Exif\x00\x00"), tiffData...)
	out := append([]byte{}, jpg[:2]...)
	out = append(out, 0xFF, 0xE1)
	out = binary.BigEndian.AppendUint16(out, uint16(len(seg)+2))
	out = append(out, seg...)
	return append(out, jpg[2:]...)
}

func TestEXIFOrientation(t *testing.T) {
	// Left half red, right half blue.
	m := image.NewRGBA(image.Rect(0, 0, 64, 32))
	for y := 0; y < 32; y++ {
		for x := 0; x < 64; x++ {
			c := color.RGBA{230, 10, 10, 255}
			if x >= 32 {
				c = color.RGBA{10, 10, 230, 255}
			}
			m.SetRGBA(x, y, c)
		}
	}
	data := withEXIFOrientation(encodeJPEG(t, m, 95), 6)
	plain := mustDecode(t, data)
	if plain.Width != 64 || plain.Height != 32 {
		t.Fatalf("orientation applied by default: %dx%d", plain.Width, plain.Height)
	}
	rot, err := Decode(data, DecodeOptions{ApplyEXIFOrientation: true})
	if err != nil {
		t.Fatal(err)
	}
	if rot.Width != 32 || rot.Height != 64 {
		t.Fatalf("orientation 6: %dx%d, want 32x64", rot.Width, rot.Height)
	}
	// Rotated 90 degrees clockwise, the left (red) half is on top.
	top, bottom := rot.Pix[(8*32+16)*3:], rot.Pix[(56*32+16)*3:]
	if top[0] < 200 || top[2] > 50 || bottom[2] < 200 || bottom[0] > 50 {
		t.Errorf("top pixel %v, bottom %v: want red over blue", top[:3], bottom[:3])
	}
}

// TestOrient checks all eight orientations against compositions of a
// mirror and a clockwise quarter turn (the EXIF definitions).
func TestOrient(t *testing.T) {
	mirror := func(a *Image) *Image {
		o := NewImage(a.Width, a.Height)
		for y := 0; y < a.Height; y++ {
			for x := 0; x < a.Width; x++ {
				copy(o.Pix[(y*a.Width+x)*3:(y*a.Width+x)*3+3], a.Pix[(y*a.Width+a.Width-1-x)*3:])
			}
		}
		return o
	}
	cw := func(a *Image) *Image {
		o := NewImage(a.Height, a.Width)
		for y := 0; y < o.Height; y++ {
			for x := 0; x < o.Width; x++ {
				copy(o.Pix[(y*o.Width+x)*3:(y*o.Width+x)*3+3], a.Pix[((a.Height-1-x)*a.Width+y)*3:])
			}
		}
		return o
	}
	src := randomImage(5, 3, 11)
	want := map[int]*Image{
		1: src,
		2: mirror(src),
		3: cw(cw(src)),
		4: mirror(cw(cw(src))),
		5: mirror(cw(src)),
		6: cw(src),
		7: mirror(cw(cw(cw(src)))),
		8: cw(cw(cw(src))),
	}
	for o := 1; o <= 8; o++ {
		got := orient(src, o)
		if got.Width != want[o].Width || !bytes.Equal(got.Pix, want[o].Pix) {
			t.Errorf("orientation %d wrong", o)
		}
	}
}

// TestEXIFOrientationPNG reads the orientation from a PNG eXIf chunk.
func TestEXIFOrientationPNG(t *testing.T) {
	m := image.NewGray(image.Rect(0, 0, 3, 1))
	m.Pix = []uint8{10, 20, 30}
	b := encodePNG(t, m)
	exif := withEXIFOrientation([]byte{0xFF, 0xD8}, 3)[2+4+6:] // the TIFF structure
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(exif)))
	chunk = append(chunk, "eXIf"...)
	chunk = append(chunk, exif...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	ihdrEnd := 8 + 25
	b = append(append(append([]byte{}, b[:ihdrEnd]...), chunk...), b[ihdrEnd:]...)
	img, err := Decode(b, DecodeOptions{ApplyEXIFOrientation: true})
	if err != nil {
		t.Fatal(err)
	}
	wantPixels(t, img, [3]uint8{30, 30, 30}, [3]uint8{20, 20, 20}, [3]uint8{10, 10, 10})
	wantPixels(t, mustDecode(t, b), [3]uint8{10, 10, 10}, [3]uint8{20, 20, 20}, [3]uint8{30, 30, 30})
}

// faxTIFF is an 8x2 CCITT Group 4 TIFF whose two rows are each coded as
// "same as the (all-white) reference line": every pixel is coded white.
func faxTIFF(photometric uint16) []byte {
	entries := [][3]uint32{{256, 3, 8}, {257, 3, 2}, {258, 3, 1}, {259, 3, 4}, {262, 3, uint32(photometric)},
		{273, 4, 0}, {278, 3, 2}, {279, 4, 1}}
	dataOff := uint32(8 + 2 + 12*len(entries) + 4)
	b := []byte("II*\x00\x08\x00\x00\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		if e[0] == 273 {
			e[2] = dataOff
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = binary.LittleEndian.AppendUint32(b, e[2]) // a SHORT sits in the low half
	}
	b = append(b, 0, 0, 0, 0)
	return append(b, 0b11000000) // two V0 codes
}

// TestDecodeFaxTIFF checks the photometric interpretation of CCITT data
// against Pillow 9.4: coded white is 255 for WhiteIsZero and 0 for
// BlackIsZero.
func TestDecodeFaxTIFF(t *testing.T) {
	for _, c := range []struct {
		photometric uint16
		want        uint8
	}{{0, 255}, {1, 0}} {
		img := mustDecode(t, faxTIFF(c.photometric))
		if img.Width != 8 || img.Height != 2 {
			t.Fatalf("%dx%d", img.Width, img.Height)
		}
		for i, v := range img.Pix {
			if v != c.want {
				t.Fatalf("photometric %d: byte %d is %d, want %d", c.photometric, i, v, c.want)
			}
		}
	}
}
