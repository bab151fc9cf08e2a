package imageproc

import (
	"errors"
	"fmt"

	"github.com/vembed/vembed/imageproc/jpeg"
)

// JPEG goes through package jpeg, which reproduces libjpeg-turbo's pixels
// (what Pillow decodes with); Go's image/jpeg differs by up to ~110 levels
// on subsampled files.

// jpegConfig reads a JPEG's dimensions from its headers.
func jpegConfig(data []byte) (w, h int, err error) {
	info, err := jpeg.DecodeConfig(data)
	if err != nil {
		return 0, 0, jpegError(err)
	}
	return info.Width, info.Height, nil
}

// jpegOrientation is the EXIF Orientation of a JPEG, 0 if absent.
func jpegOrientation(data []byte) int {
	info, err := jpeg.DecodeConfig(data)
	if err != nil {
		return 0
	}
	return info.EXIFOrientation
}

// decodeJPEG decodes a JPEG to RGB. The pixel limit has already been
// checked on the header; passing it on keeps the decoder's own guard.
// rows, if not nil, sees the rows as they are finished.
func decodeJPEG(data []byte, maxPixels int64, rows jpeg.RowsFunc) (*Image, error) {
	if maxPixels <= 0 {
		maxPixels = 1<<63 - 1
	}
	m, err := jpeg.DecodeRows(data, maxPixels, rows)
	if err != nil {
		return nil, jpegError(err)
	}
	return &Image{Width: m.Width, Height: m.Height, Pix: m.Pix}, nil
}

// jpegError maps package jpeg's errors onto this package's.
func jpegError(err error) error {
	switch {
	case errors.Is(err, jpeg.ErrUnsupported):
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	case errors.Is(err, jpeg.ErrTooLarge):
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}

// jpegExact reports whether JPEG decoding reproduces libjpeg-turbo's pixels;
// the fixture tests hold JPEG to bit-exactness only when it does.
const jpegExact = true
