// Package jpeg decodes JPEG images to 8-bit RGB with exactly the pixels that
// libjpeg-turbo 2.1 produces under Pillow's default settings
// (Image.open(f).convert("RGB")): the "islow" integer IDCT, "fancy" triangle
// chroma upsampling (h2v1, h2v2, h1v2) with a box filter for every other
// integral ratio, libjpeg's fixed-point YCbCr->RGB tables, and Pillow's
// inverted-CMYK handling for four-component files.
//
// Go's image/jpeg is not used: it differs from libjpeg-turbo by up to ~110
// levels on subsampled images because it replicates chroma samples and uses
// a different IDCT, and the embedding models' preprocessing is defined by
// Pillow's pixels.
//
// Supported: baseline and extended sequential Huffman (SOF0, SOF1),
// progressive Huffman (SOF2) with spectral selection and successive
// approximation, restart intervals, 1/3/4 components, any integral sampling
// ratios. Unsupported (ErrUnsupported): 12-bit samples, arithmetic coding,
// lossless and hierarchical modes, DNL-defined heights.
package jpeg

import (
	"errors"
	"fmt"
)

var (
	// ErrUnsupported is returned for valid JPEG features this decoder does
	// not implement (12-bit precision, arithmetic coding, lossless, ...).
	ErrUnsupported = errors.New("jpeg: unsupported feature")
	// ErrCorrupt is returned for malformed or truncated data.
	ErrCorrupt = errors.New("jpeg: corrupt or truncated data")
	// ErrTooLarge is returned when the image has more pixels than the
	// caller allows; it is detected before any image-sized allocation.
	ErrTooLarge = errors.New("jpeg: image too large")
)

// Image is a decoded picture: Width*Height pixels, interleaved R, G, B,
// rows top to bottom without padding.
type Image struct {
	Width, Height int
	Pix           []uint8
}

// Info describes a JPEG file without decoding its scans.
type Info struct {
	Width, Height, Components int
	Progressive               bool
	// ColorTransform is how the components are interpreted, decided as
	// libjpeg does from the JFIF/Adobe markers and component ids:
	// "ycbcr", "gray", "rgb", "cmyk" or "ycck".
	ColorTransform string
	// EXIFOrientation is the EXIF Orientation tag (1..8), 0 if absent. It
	// is reported only; Decode does not rotate (Pillow's convert does not).
	EXIFOrientation int
}

// MaxDimension is libjpeg's limit on either side of an image.
const MaxDimension = 65500

// maxScans bounds the number of scans a file may carry, so that a small
// file cannot make the decoder walk every block thousands of times.
// Real progressive files use about ten.
const maxScans = 1000

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func unsupportedf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)
}

// DecodeConfig parses the markers up to the first scan header and reports
// the image's size, layout and EXIF orientation without decoding pixels.
func DecodeConfig(data []byte) (Info, error) {
	d := &decoder{data: data}
	if err := d.readHeaders(); err != nil {
		return Info{}, err
	}
	return d.info(), nil
}

// Decode decodes a JPEG file to RGB. maxPixels bounds Width*Height and is
// checked before any allocation that depends on the image size. Working
// memory is then at most one byte per sample of each component's plane
// (padded to whole MCUs, at most 32 samples more per side) plus two bytes
// per sample for progressive or multi-scan files, besides the 3 bytes per
// pixel of the result. Large single-scan files are transformed on
// GOMAXPROCS goroutines from a ring of coefficient bands (a few MCU rows
// per goroutine, never more than two bytes per sample). Decode is safe for
// concurrent use.
func Decode(data []byte, maxPixels int64) (*Image, error) {
	return DecodeRows(data, maxPixels, nil)
}

// RowsFunc receives the pixel buffer of the image being decoded (Width*
// Height*3 bytes) each time rows [y0, y1) of it are final. The calls come
// in order, cover every row once, and never overlap; they may run on a
// goroutine other than the caller's while decoding goes on, so that work
// on the first rows overlaps decoding of the rest.
type RowsFunc func(pix []uint8, y0, y1 int)

// DecodeRows is Decode that also hands the finished rows to rows (if not
// nil) while decoding. After an error, rows may have seen part of the
// image.
func DecodeRows(data []byte, maxPixels int64, rows RowsFunc) (*Image, error) {
	d := &decoder{data: data, onRows: rows}
	if err := d.readHeaders(); err != nil {
		return nil, err
	}
	if int64(d.width)*int64(d.height) > maxPixels {
		return nil, fmt.Errorf("%w: %dx%d exceeds %d pixels", ErrTooLarge, d.width, d.height, maxPixels)
	}
	d.workers = workerCount(d.width * d.height)
	d.img = &Image{Width: d.width, Height: d.height, Pix: make([]uint8, d.width*d.height*3)}
	if err := d.decodeScans(); err != nil {
		return nil, err
	}
	d.toRGB()
	return d.img, nil
}

func (d *decoder) info() Info {
	return Info{
		Width:           d.width,
		Height:          d.height,
		Components:      len(d.comps),
		Progressive:     d.progressive,
		ColorTransform:  d.colorSpace().String(),
		EXIFOrientation: d.orientation,
	}
}

// colorSpace is the source color space of the component data.
type colorSpace int

const (
	csGray colorSpace = iota
	csYCbCr
	csRGB
	csCMYK
	csYCCK
)

func (c colorSpace) String() string {
	return [...]string{"gray", "ycbcr", "rgb", "cmyk", "ycck"}[c]
}

// colorSpace follows libjpeg's default_decompress_parms: JFIF wins, then
// the Adobe transform flag, then the component ids.
func (d *decoder) colorSpace() colorSpace {
	switch len(d.comps) {
	case 1:
		return csGray
	case 3:
		switch {
		case d.sawJFIF:
			return csYCbCr
		case d.sawAdobe:
			if d.adobeTransform == 0 {
				return csRGB
			}
			return csYCbCr
		}
		c := d.comps
		if c[0].id == 'R' && c[1].id == 'G' && c[2].id == 'B' {
			return csRGB
		}
		return csYCbCr
	default: // 4; other counts are rejected at SOF
		if d.sawAdobe && d.adobeTransform != 0 {
			return csYCCK
		}
		return csCMYK
	}
}
