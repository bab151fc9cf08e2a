package synth

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
)

// Photo encodes a size×size image with the traits of a photograph:
// smooth colour gradients, a few soft shapes, edges and mild noise, so the
// decoder and resizer work as on real pictures (a flat image would
// compress to nothing and decode unrealistically fast). Different seeds
// give different pictures.
func Photo(size, seed int, format string) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	rng := rand.New(rand.NewPCG(uint64(size), 11+uint64(seed)))
	fs := float64(size)
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			u, v := float64(x)/fs, float64(y)/fs
			// A product is converted before it is added to (float64(a*b) + c): that
			// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
			// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
			r := 120 + float64(90*math.Sin(float64(3*u)+1)) + float64(30*math.Cos(11*v))
			g := 110 + float64(80*math.Cos(float64(4*v)-float64(2*u)))
			bl := 140 + float64(70*math.Sin(float64(6*u*v)+0.5))
			if d := math.Hypot(u-0.6, v-0.4); d < 0.2 { // a disc with a hard edge
				r, g, bl = 230-float64(200*d), 180-float64(300*d), 40
			}
			if (x/(size/8+1)+y/(size/8+1))%5 == 0 { // stripes: high frequencies
				r, g, bl = r*0.6, g*0.6, bl*0.6
			}
			n := float64(12 * rng.NormFloat64())
			img.SetRGBA(x, y, color.RGBA{clampByte(r + n), clampByte(g + n), clampByte(bl + n), 255})
		}
	}
	var buf bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
	}
	if err != nil {
		return nil, fmt.Errorf("synthetic image %dx%d: %w", size, size, err)
	}
	return buf.Bytes(), nil
}

func clampByte(v float64) uint8 {
	return uint8(math.Max(0, math.Min(255, math.Round(v))))
}
