package imageproc

import (
	"errors"
	"fmt"
)

// Image is an 8-bit RGB image, pixels interleaved R, G, B, rows top to
// bottom with no padding: Pix[(y*Width+x)*3+c].
type Image struct {
	Width, Height int
	Pix           []uint8
}

// NewImage returns a black image of the given size.
func NewImage(width, height int) *Image {
	return &Image{Width: width, Height: height, Pix: make([]uint8, width*height*3)}
}

// Errors returned by Decode and Preprocess, wrapped with detail; test with
// errors.Is. All of them describe bad input (an HTTP 400), not a server fault.
var (
	// ErrUnsupported: the data is not an image format vembed reads, or uses
	// a feature of one that is not supported.
	ErrUnsupported = errors.New("unsupported image format")
	// ErrTooLarge: the file or the image dimensions exceed the limits.
	ErrTooLarge = errors.New("image too large")
	// ErrCorrupt: the data is truncated or malformed.
	ErrCorrupt = errors.New("corrupt image")
	// ErrSize: the image cannot be turned into patches (a side shorter than
	// the patch factor, or an extreme aspect ratio).
	ErrSize = errors.New("image size not supported by the model")
)

// Limits bound what Decode accepts. They are checked against the file size
// and the header's dimensions before pixels are decoded, so an image that
// claims to be huge costs almost nothing to refuse. A zero field takes the
// value of DefaultLimits (so the zero DecodeOptions is safe); a negative
// field disables that limit.
type Limits struct {
	MaxBytes            int
	MaxWidth, MaxHeight int
	MaxPixels           int64
}

// DefaultLimits allows files up to 64 MiB and images up to 16384 pixels a
// side and 64 megapixels (192 MiB of decoded RGB): enough for any photo,
// small enough that one request cannot exhaust memory.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 64 << 20, MaxWidth: 16384, MaxHeight: 16384, MaxPixels: 64 << 20}
}

// DecodeOptions control Decode.
type DecodeOptions struct {
	Limits Limits
	// ApplyEXIFOrientation rotates/flips JPEG (and other EXIF-carrying)
	// images as their EXIF Orientation tag says. The reference does not, so
	// the default (false) keeps the stored orientation.
	ApplyEXIFOrientation bool

	// alphaOnWhite composites RGBA images on white (Config.QwenVLUtils).
	alphaOnWhite bool
}

// orDefault fills zero fields from DefaultLimits.
func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	if l.MaxBytes == 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxWidth == 0 {
		l.MaxWidth = d.MaxWidth
	}
	if l.MaxHeight == 0 {
		l.MaxHeight = d.MaxHeight
	}
	if l.MaxPixels == 0 {
		l.MaxPixels = d.MaxPixels
	}
	return l
}

// Check applies the limits to a file of n bytes whose header declares
// width x height pixels, as decoding does before any pixel is read.
func (l Limits) Check(n, width, height int) error {
	l = l.orDefault()
	if err := l.checkBytes(n); err != nil {
		return err
	}
	return l.checkSize(width, height)
}

func (l Limits) checkBytes(n int) error {
	if l.MaxBytes > 0 && n > l.MaxBytes {
		return fmt.Errorf("%w: %d bytes exceeds the limit of %d", ErrTooLarge, n, l.MaxBytes)
	}
	return nil
}

func (l Limits) checkSize(w, h int) error {
	if w <= 0 || h <= 0 {
		return fmt.Errorf("%w: invalid dimensions %dx%d", ErrCorrupt, w, h)
	}
	if l.MaxWidth > 0 && w > l.MaxWidth {
		return fmt.Errorf("%w: width %d exceeds the limit of %d", ErrTooLarge, w, l.MaxWidth)
	}
	if l.MaxHeight > 0 && h > l.MaxHeight {
		return fmt.Errorf("%w: height %d exceeds the limit of %d", ErrTooLarge, h, l.MaxHeight)
	}
	if l.MaxPixels > 0 && int64(w)*int64(h) > l.MaxPixels {
		return fmt.Errorf("%w: %dx%d = %d pixels exceeds the limit of %d", ErrTooLarge, w, h, int64(w)*int64(h), l.MaxPixels)
	}
	return nil
}
