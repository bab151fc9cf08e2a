package imageproc

import (
	"image"
	"image/color"
)

// toRGB converts a decoded image to 8-bit RGB the way Pillow's
// convert("RGB") does for the corresponding Pillow mode: alpha is dropped
// from the straight (un-premultiplied) colour, 16-bit samples keep their high
// byte, palettes are expanded ignoring transparency.
func toRGB(m image.Image) *Image {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	out := NewImage(w, h)
	// rows converts source rows [lo, hi) into out.
	var rows func(lo, hi int)
	switch src := m.(type) {
	case *image.Gray:
		rows = func(lo, hi int) {
			for y := lo; y < hi; y++ {
				s := src.Pix[y*src.Stride : y*src.Stride+w]
				d := out.Pix[y*w*3 : (y+1)*w*3]
				for x, v := range s {
					d[3*x], d[3*x+1], d[3*x+2] = v, v, v
				}
			}
		}
	case *image.RGBA: // opaque data in the decoders used here
		rows = func(lo, hi int) { copy4to3(out, src.Pix, src.Stride, lo, hi, 1) }
	case *image.NRGBA:
		rows = func(lo, hi int) { copy4to3(out, src.Pix, src.Stride, lo, hi, 1) }
	case *image.RGBA64:
		rows = func(lo, hi int) { copy4to3(out, src.Pix, src.Stride, lo, hi, 2) }
	case *image.NRGBA64:
		rows = func(lo, hi int) { copy4to3(out, src.Pix, src.Stride, lo, hi, 2) }
	case *image.Gray16:
		// Pillow opens 16-bit grayscale (PNG, TIFF) as mode I / I;16, whose
		// conversion to RGB clips to 255 instead of scaling.
		rows = func(lo, hi int) { gray16Rows(out, src.Pix, src.Stride, 2, lo, hi) }
	case *image.Paletted:
		pal := paletteRGB(src.Palette)
		rows = func(lo, hi int) {
			for y := lo; y < hi; y++ {
				s := src.Pix[y*src.Stride : y*src.Stride+w]
				d := out.Pix[y*w*3 : (y+1)*w*3]
				for x, i := range s {
					c := pal[i]
					d[3*x], d[3*x+1], d[3*x+2] = c[0], c[1], c[2]
				}
			}
		}
	case *image.YCbCr:
		rows = func(lo, hi int) { ycbcrRows(out, src, lo, hi) }
	case *image.NYCbCrA:
		rows = func(lo, hi int) { ycbcrRows(out, &src.YCbCr, lo, hi) }
	default:
		rows = func(lo, hi int) {
			for y := lo; y < hi; y++ {
				d := out.Pix[y*w*3 : (y+1)*w*3]
				for x := 0; x < w; x++ {
					c := color.NRGBAModel.Convert(m.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
					d[3*x], d[3*x+1], d[3*x+2] = c.R, c.G, c.B
				}
			}
		}
	}
	parallelRows(h, 4*w, rows)
	return out
}

// gray16Rows converts rows [lo, hi) of big-endian 16-bit gray samples,
// step bytes apart, clipping each to 255 as Pillow's I -> RGB does.
func gray16Rows(out *Image, pix []uint8, stride, step, lo, hi int) {
	w := out.Width
	for y := lo; y < hi; y++ {
		s := pix[y*stride : y*stride+step*w]
		d := out.Pix[y*w*3 : (y+1)*w*3]
		for x := 0; x < w; x++ {
			v := uint8(min(uint16(s[step*x])<<8|uint16(s[step*x+1]), 255))
			d[3*x], d[3*x+1], d[3*x+2] = v, v, v
		}
	}
}

// copy4to3 copies rows [lo, hi) of a 4-channel image with sampleBytes bytes
// per sample (1, or 2 big-endian) into out, keeping R, G, B and, for 16-bit
// samples, the high byte (Pillow's RGB;16B / RGBA;16B unpacking).
func copy4to3(out *Image, pix []uint8, stride, lo, hi, sampleBytes int) {
	w := out.Width
	step := 4 * sampleBytes
	for y := lo; y < hi; y++ {
		s := pix[y*stride : y*stride+step*w]
		d := out.Pix[y*w*3 : (y+1)*w*3]
		for x := 0; x < w; x++ {
			p := s[step*x:]
			d[3*x], d[3*x+1], d[3*x+2] = p[0], p[sampleBytes], p[2*sampleBytes]
		}
	}
}

// paletteRGB expands a palette to 256 straight RGB entries. Transparency is
// ignored, as Pillow's P -> RGB conversion ignores it. Indices past the end
// of a short palette read as Pillow's initial palette, a gray ramp.
func paletteRGB(p color.Palette) *[256][3]uint8 {
	var pal [256][3]uint8
	for i := range pal {
		pal[i] = [3]uint8{uint8(i), uint8(i), uint8(i)}
	}
	for i, c := range p {
		if i >= 256 {
			break
		}
		n := color.NRGBAModel.Convert(c).(color.NRGBA)
		pal[i] = [3]uint8{n.R, n.G, n.B}
	}
	return &pal
}

// ycbcrRows converts with the standard library's JFIF conversion; it is the
// fallback for decoders that hand back planar YCbCr.
func ycbcrRows(out *Image, src *image.YCbCr, lo, hi int) {
	w := out.Width
	b := src.Rect
	for y := lo; y < hi; y++ {
		d := out.Pix[y*w*3 : (y+1)*w*3]
		yi := src.YOffset(b.Min.X, b.Min.Y+y)
		for x := 0; x < w; x++ {
			ci := src.COffset(b.Min.X+x, b.Min.Y+y)
			d[3*x], d[3*x+1], d[3*x+2] = color.YCbCrToRGB(src.Y[yi+x], src.Cb[ci], src.Cr[ci])
		}
	}
}

// onWhite converts an RGBA image to RGB composited on a white background
// as qwen-vl-utils does (Pillow's paste with the alpha band as mask):
// out = (255·(255−a) + c·a) / 255 with Pillow's rounding division.
// Sixteen-bit samples keep their high byte first, as Pillow's RGBA does.
func onWhite(m image.Image) *Image {
	var pix []uint8
	var stride, step int
	switch src := m.(type) {
	case *image.NRGBA:
		pix, stride, step = src.Pix, src.Stride, 1
	case *image.NRGBA64:
		pix, stride, step = src.Pix, src.Stride, 2
	default:
		return toRGB(m) // no straight alpha to composite
	}
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	out := NewImage(w, h)
	parallelRows(h, 4*w, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			s := pix[y*stride : y*stride+4*step*w]
			d := out.Pix[y*w*3 : (y+1)*w*3]
			for x := 0; x < w; x++ {
				p := s[4*step*x:]
				a := int(p[3*step])
				for c := 0; c < 3; c++ {
					v := 255*(255-a) + int(p[c*step])*a + 128
					d[3*x+c] = uint8((v + v>>8) >> 8)
				}
			}
		}
	})
	return out
}
