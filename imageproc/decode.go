package imageproc

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"

	"github.com/vembed/vembed/imageproc/jpeg"
	"github.com/vembed/vembed/internal/tiffifd"
	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

// format is an image container recognised by its leading bytes.
type format int

const (
	formatUnknown format = iota
	formatPNG
	formatJPEG
	formatGIF
	formatWebP
	formatBMP
	formatTIFF
)

var formatNames = [...]string{"unknown", "png", "jpeg", "gif", "webp", "bmp", "tiff"}

func (f format) String() string { return formatNames[f] }

// sniff identifies the format from the content, never from a file name or a
// declared media type, which clients get wrong.
func sniff(b []byte) format {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return formatPNG
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return formatJPEG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return formatGIF
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return formatWebP
	case bytes.HasPrefix(b, []byte("BM")):
		return formatBMP
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return formatTIFF
	}
	return formatUnknown
}

// Format reports the image format of data ("png", "jpeg", "gif", "webp",
// "bmp", "tiff") as Decode would detect it, or "unknown".
func Format(data []byte) string { return sniff(data).String() }

// DecodeConfig returns the format and dimensions from the header alone.
func DecodeConfig(data []byte) (formatName string, width, height int, err error) {
	f, w, h, err := probe(data)
	return f.String(), w, h, err
}

// probe sniffs the format and reads the dimensions from the header.
func probe(data []byte) (f format, w, h int, err error) {
	f = sniff(data)
	if f == formatUnknown {
		return f, 0, 0, fmt.Errorf("imageproc: %w: unrecognised content (PNG, JPEG, GIF, WebP, BMP and TIFF are supported)", ErrUnsupported)
	}
	w, h, err = decodeConfig(f, data)
	if err != nil {
		return f, 0, 0, fmt.Errorf("imageproc: %s header: %w", f, err)
	}
	return f, w, h, nil
}

func decodeConfig(f format, data []byte) (w, h int, err error) {
	defer recoverDecoder(&err)
	var cfg image.Config
	r := bytes.NewReader(data)
	switch f {
	case formatPNG:
		cfg, err = png.DecodeConfig(r)
	case formatJPEG:
		return jpegConfig(data)
	case formatGIF:
		return gifConfig(data)
	case formatWebP:
		cfg, err = webp.DecodeConfig(r)
	case formatBMP:
		cfg, err = bmp.DecodeConfig(r)
	case formatTIFF:
		cfg, err = tiff.DecodeConfig(r)
	default:
		return 0, 0, ErrUnsupported
	}
	if err != nil {
		return 0, 0, classify(err)
	}
	return cfg.Width, cfg.Height, nil
}

// Decode decodes a PNG, JPEG, GIF (first frame), WebP, BMP or TIFF image and
// converts it to 8-bit RGB exactly as Pillow's Image.open(...).convert("RGB")
// does: alpha is dropped without compositing, palettes are expanded with
// their transparency ignored, 16-bit grayscale is clipped to 255 and 16-bit
// colour keeps the high byte. The limits are checked on the file size and
// on the header's dimensions before pixels are decoded. Errors wrap
// ErrUnsupported, ErrTooLarge or ErrCorrupt.
func Decode(data []byte, opts DecodeOptions) (*Image, error) {
	return decode(data, opts, nil)
}

// decode is Decode that, for a JPEG, hands finished rows to the function
// prepare returns for the header's size while decoding goes on.
func decode(data []byte, opts DecodeOptions, prepare func(w, h int) jpeg.RowsFunc) (*Image, error) {
	lim := opts.Limits.orDefault()
	if err := lim.checkBytes(len(data)); err != nil {
		return nil, fmt.Errorf("imageproc: %w", err)
	}
	f, w, h, err := probe(data)
	if err != nil {
		return nil, err
	}
	if err := lim.checkSize(w, h); err != nil {
		return nil, fmt.Errorf("imageproc: %s: %w", f, err)
	}
	var rows jpeg.RowsFunc
	if prepare != nil && f == formatJPEG {
		rows = prepare(w, h)
	}
	img, err := decodePixels(f, data, lim.MaxPixels, rows, opts.alphaOnWhite)
	if err != nil {
		return nil, fmt.Errorf("imageproc: %s: %w", f, err)
	}
	if img.Width != w || img.Height != h {
		// A decoder that disagrees with its own header would defeat the
		// limit check above.
		return nil, fmt.Errorf("imageproc: %s: %w: header says %dx%d, pixels are %dx%d", f, ErrCorrupt, w, h, img.Width, img.Height)
	}
	if opts.ApplyEXIFOrientation {
		img = orient(img, exifOrientation(f, data))
	}
	return img, nil
}

func decodePixels(f format, data []byte, maxPixels int64, rows jpeg.RowsFunc, alphaOnWhite bool) (img *Image, err error) {
	defer recoverDecoder(&err)
	r := bytes.NewReader(data)
	var m image.Image
	switch f {
	case formatPNG:
		m, err = png.Decode(r)
		if err == nil && pngIsGray16(data) {
			return gray16Clipped(m), nil
		}
	case formatJPEG:
		return decodeJPEG(data, maxPixels, rows)
	case formatGIF:
		return decodeGIF(data)
	case formatWebP:
		return decodeWebP(data)
	case formatBMP:
		m, err = bmp.Decode(r)
	case formatTIFF:
		m, err = tiff.Decode(r)
		if err == nil && tiffFaxBlackIsZero(data) {
			// golang.org/x/image/tiff renders CCITT-coded white as 255
			// whatever the photometric interpretation; Pillow (libtiff)
			// honours BlackIsZero, where coded white is 0.
			img := toRGB(m)
			for i, v := range img.Pix {
				img.Pix[i] = 255 - v
			}
			return img, nil
		}
	default:
		return nil, ErrUnsupported
	}
	if err != nil {
		return nil, classify(err)
	}
	if alphaOnWhite && f == formatPNG && pngIsRGBA(data) {
		return onWhite(m), nil
	}
	return toRGB(m), nil
}

// pngIsRGBA reports whether a PNG's IHDR declares colour type 6 (RGBA),
// the one Pillow opens as mode "RGBA" (gray+alpha is "LA", a tRNS key
// leaves "RGB").
func pngIsRGBA(data []byte) bool {
	return len(data) >= 26 && string(data[12:16]) == "IHDR" && data[25] == 6
}

// catchPanics is cleared by the fuzz test so that a panic is reported
// rather than absorbed.
var catchPanics = true

// recoverDecoder turns a panic inside a decoder into ErrCorrupt: the server
// must answer bad input with a 400, not crash.
func recoverDecoder(err *error) {
	if !catchPanics {
		return
	}
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: decoder failed: %v", ErrCorrupt, r)
	}
}

// classify maps the decoders' error values onto the package's typed errors.
func classify(err error) error {
	var (
		pngUnsup  png.UnsupportedError
		tiffUnsup tiff.UnsupportedError
	)
	switch {
	case errors.Is(err, ErrUnsupported), errors.Is(err, ErrCorrupt), errors.Is(err, ErrTooLarge):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: truncated data", ErrCorrupt)
	case errors.As(err, &pngUnsup), errors.As(err, &tiffUnsup), errors.Is(err, bmp.ErrUnsupported):
		return fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	return fmt.Errorf("%w: %v", ErrCorrupt, err)
}

// pngIsGray16 reports whether a PNG's IHDR declares 16-bit grayscale (colour
// type 0), which Pillow opens as mode "I" and clips rather than scales.
func pngIsGray16(data []byte) bool {
	// signature (8) + chunk length (4) + "IHDR" (4) + width, height (8)
	// then bit depth and colour type.
	if len(data) < 26 || string(data[12:16]) != "IHDR" {
		return false
	}
	return data[24] == 16 && data[25] == 0
}

// gray16Clipped converts a 16-bit grayscale PNG, which Go returns as Gray16,
// or as NRGBA64 (R = G = B = gray) when it has a tRNS key.
func gray16Clipped(m image.Image) *Image {
	src, ok := m.(*image.NRGBA64)
	if !ok {
		return toRGB(m)
	}
	out := NewImage(src.Rect.Dx(), src.Rect.Dy())
	parallelRows(out.Height, 4*out.Width, func(lo, hi int) { gray16Rows(out, src.Pix, src.Stride, 8, lo, hi) })
	return out
}

// tiffFaxBlackIsZero reports a CCITT Group 3 or 4 TIFF whose photometric
// interpretation is BlackIsZero.
func tiffFaxBlackIsZero(data []byte) bool {
	c, _ := tiffifd.Short(data, 259) // Compression
	p, _ := tiffifd.Short(data, 262) // PhotometricInterpretation
	return (c == 3 || c == 4) && p == 1
}
