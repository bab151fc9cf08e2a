package imageproc

import (
	"bytes"
	"encoding/binary"

	"github.com/vembed/vembed/internal/tiffifd"
)

// exifOrientation returns the EXIF Orientation (1..8) stored in data, or 1
// when there is none or it cannot be read: orientation is a hint, and a
// malformed one is ignored rather than failing the image.
func exifOrientation(f format, data []byte) int {
	var blob []byte
	switch f {
	case formatJPEG:
		return max(jpegOrientation(data), 1)
	case formatPNG:
		blob = pngChunk(data, "eXIf")
	case formatWebP:
		blob = webpChunk(data, "EXIF")
		blob, _ = bytes.CutPrefix(blob, []byte("Exif\x00\x00"))
	case formatTIFF:
		blob = data
	}
	return max(tiffifd.Orientation(blob), 1)
}

// pngChunk returns the payload of the first chunk of the given type.
func pngChunk(b []byte, typ string) []byte {
	pos := 8
	for pos+12 <= len(b) {
		n := int(binary.BigEndian.Uint32(b[pos:]))
		if n < 0 || n > len(b)-pos-12 {
			return nil
		}
		t := string(b[pos+4 : pos+8])
		if t == typ {
			return b[pos+8 : pos+8+n]
		}
		if t == "IDAT" || t == "IEND" {
			// eXIf must precede IDAT to be honoured.
			return nil
		}
		pos += 12 + n
	}
	return nil
}

// webpChunk returns the payload of the first RIFF chunk of the given type.
func webpChunk(b []byte, typ string) []byte {
	pos := 12
	for pos+8 <= len(b) {
		n := int(binary.LittleEndian.Uint32(b[pos+4:]))
		if n < 0 || n > len(b)-pos-8 {
			return nil
		}
		if string(b[pos:pos+4]) == typ {
			return b[pos+8 : pos+8+n]
		}
		pos += 8 + n + n&1
	}
	return nil
}

// orient applies an EXIF orientation the way Pillow's
// ImageOps.exif_transpose does, returning img itself for orientation 1.
func orient(img *Image, o int) *Image {
	if o <= 1 || o > 8 {
		return img
	}
	W, H := img.Width, img.Height
	ow, oh := W, H
	if o >= 5 {
		ow, oh = H, W
	}
	out := NewImage(ow, oh)
	// src maps an output pixel to the input pixel it shows.
	src := func(x, y int) (int, int) {
		switch o {
		case 2: // mirror horizontally
			return W - 1 - x, y
		case 3: // rotate 180
			return W - 1 - x, H - 1 - y
		case 4: // mirror vertically
			return x, H - 1 - y
		case 5: // transpose
			return y, x
		case 6: // rotate 90 clockwise
			return y, H - 1 - x
		case 7: // transverse
			return W - 1 - y, H - 1 - x
		default: // 8: rotate 90 counter-clockwise
			return W - 1 - y, x
		}
	}
	for y := 0; y < oh; y++ {
		for x := 0; x < ow; x++ {
			sx, sy := src(x, y)
			copy(out.Pix[(y*ow+x)*3:(y*ow+x)*3+3], img.Pix[(sy*W+sx)*3:])
		}
	}
	return out
}
