package imageproc

import (
	"bytes"
	"image/jpeg"
)

// jpegConfig reads a JPEG's dimensions from its frame header.
func jpegConfig(data []byte) (w, h int, err error) {
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0, classify(err)
	}
	return cfg.Width, cfg.Height, nil
}

// decodeJPEG decodes a JPEG to RGB.
func decodeJPEG(data []byte) (*Image, error) {
	m, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, classify(err)
	}
	return toRGB(m), nil
}

// jpegExact reports whether JPEG decoding reproduces libjpeg-turbo's pixels;
// the fixture tests hold JPEG to bit-exactness only when it does.
const jpegExact = false
