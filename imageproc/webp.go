package imageproc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"

	"golang.org/x/image/webp"
)

// Lossy WebP is decoded to planar YCbCr 4:2:0 by golang.org/x/image/webp
// (VP8 decoding is specified bit-exactly); the conversion to RGB then
// follows libwebp, which Pillow uses: "fancy" upsampling of the chroma
// (each chroma sample weighted 9:3:3:1 with its neighbours) and libwebp's
// 14-bit fixed-point YUV -> RGB.

func decodeWebP(data []byte) (*Image, error) {
	if frame, ok, err := webpFirstFrame(data); ok || err != nil {
		return frame, err
	}
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

// webpChunks calls fn for each chunk of a RIFF chunk sequence, with the
// chunk's bytes including its 8-byte header and padding; it stops early when
// fn returns false and reports ErrCorrupt for a chunk running past the end.
func webpChunks(b []byte, fn func(fourcc string, payload, whole []byte) bool) error {
	for len(b) >= 8 {
		n := int64(binary.LittleEndian.Uint32(b[4:]))
		end := 8 + n + n&1
		if 8+n > int64(len(b)) {
			return fmt.Errorf("%w: truncated WebP chunk %q", ErrCorrupt, b[:4])
		}
		end = min(end, int64(len(b)))
		if !fn(string(b[:4]), b[8:8+n], b[:end]) {
			return nil
		}
		b = b[end:]
	}
	return nil
}

func u24(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }

// webpFirstFrame decodes the first frame of an animated WebP the way
// libwebp's WebPAnimDecoder (used by Pillow) renders it: on a canvas of the
// VP8X size cleared to transparent black, the frame's pixels at its offset,
// no blending (the first frame is a key frame). ok is false for a file that
// is not animated.
func webpFirstFrame(data []byte) (img *Image, ok bool, err error) {
	if len(data) < 12 {
		return nil, false, nil
	}
	var vp8x, anmf []byte
	err = webpChunks(data[12:], func(fourcc string, payload, _ []byte) bool {
		switch fourcc {
		case "VP8X":
			vp8x = payload
		case "ANMF":
			anmf = payload
			return false
		}
		return true
	})
	const animationBit = 1 << 1
	if vp8x == nil || len(vp8x) < 10 || vp8x[0]&animationBit == 0 {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	if len(anmf) < 16 {
		return nil, true, fmt.Errorf("%w: animated WebP without a frame", ErrCorrupt)
	}
	cw, ch := u24(vp8x[4:])+1, u24(vp8x[7:])+1
	x, y, fw, fh := 2*u24(anmf[0:]), 2*u24(anmf[3:]), u24(anmf[6:])+1, u24(anmf[9:])+1
	if x+fw > cw || y+fh > ch {
		return nil, true, fmt.Errorf("%w: WebP frame %dx%d at (%d,%d) outside the %dx%d canvas", ErrCorrupt, fw, fh, x, y, cw, ch)
	}
	// Re-wrap the frame's image chunks as a still WebP whose VP8X canvas is
	// the frame: the still decoder then insists that the bitstream has
	// exactly that size, so it cannot allocate more than the frame.
	var alph, body []byte
	if err := webpChunks(anmf[16:], func(fourcc string, _, whole []byte) bool {
		switch fourcc {
		case "ALPH":
			alph = whole
		case "VP8 ", "VP8L":
			body = whole
			return false
		}
		return true
	}); err != nil {
		return nil, true, err
	}
	if body == nil {
		return nil, true, fmt.Errorf("%w: WebP frame without image data", ErrCorrupt)
	}
	flags := byte(0)
	if alph != nil && string(body[:4]) == "VP8 " {
		flags = 1 << 4
	} else {
		alph = nil
	}
	still := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00")
	still = append(still, flags, 0, 0, 0, byte(fw-1), byte((fw-1)>>8), byte((fw-1)>>16), byte(fh-1), byte((fh-1)>>8), byte((fh-1)>>16))
	still = append(append(still, alph...), body...)
	binary.LittleEndian.PutUint32(still[4:], uint32(len(still)-8))
	frame, err := decodeWebP(still)
	if err != nil {
		return nil, true, err
	}
	if frame.Width != fw || frame.Height != fh {
		return nil, true, fmt.Errorf("%w: WebP frame is %dx%d, header says %dx%d", ErrCorrupt, frame.Width, frame.Height, fw, fh)
	}
	img = NewImage(cw, ch)
	for r := 0; r < fh; r++ {
		copy(img.Pix[((y+r)*cw+x)*3:], frame.Pix[r*fw*3:(r+1)*fw*3])
	}
	return img, true, nil
}
