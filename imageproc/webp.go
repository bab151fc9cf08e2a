package imageproc

import (
	"bytes"
	"image"

	"golang.org/x/image/webp"
)

// Lossy WebP is decoded to planar YCbCr 4:2:0 by golang.org/x/image/webp
// (VP8 decoding is specified bit-exactly); the conversion to RGB then
// follows libwebp, which Pillow uses: "fancy" upsampling of the chroma
// (each chroma sample weighted 9:3:3:1 with its neighbours) and libwebp's
// 14-bit fixed-point YUV -> RGB.

func decodeWebP(data []byte) (*Image, error) {
	m, err := webp.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, classify(err)
	}
	switch src := m.(type) {
	case *image.YCbCr:
		if src.SubsampleRatio == image.YCbCrSubsampleRatio420 {
			return webpFancyRGB(src), nil
		}
	case *image.NYCbCrA:
		if src.SubsampleRatio == image.YCbCrSubsampleRatio420 {
			return webpFancyRGB(&src.YCbCr), nil
		}
	}
	return toRGB(m), nil
}

// webpYUVToRGB is libwebp's VP8YuvToRgb.
func webpYUVToRGB(y, u, v int) (r, g, b uint8) {
	mulHi := func(a, c int) int { return a * c >> 8 }
	clip := func(x int) uint8 {
		if x&^(256<<6-1) == 0 {
			return uint8(x >> 6)
		}
		if x < 0 {
			return 0
		}
		return 255
	}
	yy := mulHi(y, 19077)
	return clip(yy + mulHi(v, 26149) - 14234),
		clip(yy - mulHi(u, 6419) - mulHi(v, 13320) + 8708),
		clip(yy + mulHi(u, 33050) - 17685)
}

// webpUpsampleRow computes the full-resolution chroma of one output row
// from the nearer chroma row n (weight 3 vertically) and the farther row f,
// as libwebp's UpsampleRgbLinePair does for its top or bottom line.
func webpUpsampleRow(dst []int32, n, f []uint8) {
	w := len(dst)
	dst[0] = (3*int32(n[0]) + int32(f[0]) + 2) >> 2
	last := (w - 1) >> 1
	for j := 1; j <= last; j++ {
		n0, n1, f0, f1 := int32(n[j-1]), int32(n[j]), int32(f[j-1]), int32(f[j])
		avg := n0 + n1 + f0 + f1 + 8
		dA := (avg + 2*(n1+f0)) >> 3 // diagonal through near[j] and far[j-1]
		dB := (avg + 2*(n0+f1)) >> 3
		dst[2*j-1] = (dA + n0) >> 1
		dst[2*j] = (dB + n1) >> 1
	}
	if w&1 == 0 {
		dst[w-1] = (3*int32(n[last]) + int32(f[last]) + 2) >> 2
	}
}

func webpFancyRGB(src *image.YCbCr) *Image {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	out := NewImage(w, h)
	cw, ch := (w+1)/2, (h+1)/2
	crow := func(plane []uint8, r int) []uint8 { return plane[r*src.CStride : r*src.CStride+cw] }
	parallelRows(h, 16*w, func(lo, hi int) {
		u := make([]int32, w)
		v := make([]int32, w)
		for y := lo; y < hi; y++ {
			// Output row 2k-1 is the top line of libwebp's pair k (nearer
			// chroma row k-1), row 2k its bottom line (nearer row k); the
			// first row, and the last of an even height, use one row twice.
			var near, far int
			switch {
			case y == 0:
				near, far = 0, 0
			case y&1 == 1:
				near, far = (y-1)/2, min((y+1)/2, ch-1)
			default:
				near, far = y/2, y/2-1
			}
			webpUpsampleRow(u, crow(src.Cb, near), crow(src.Cb, far))
			webpUpsampleRow(v, crow(src.Cr, near), crow(src.Cr, far))
			yrow := src.Y[y*src.YStride : y*src.YStride+w]
			d := out.Pix[y*w*3 : (y+1)*w*3]
			for x, yv := range yrow {
				d[3*x], d[3*x+1], d[3*x+2] = webpYUVToRGB(int(yv), int(u[x]), int(v[x]))
			}
		}
	})
	return out
}
