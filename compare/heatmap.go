package compare

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/vembed/vembed/imageproc"
)

// Heatmap draws per-cell values (gh×gw, row-major) over the image as
// translucent colours, with a title and a labelled colour scale from 0 to
// hi (the largest value when hi is not positive), and returns the PNG.
// Values above hi take the top colour; NaN cells are magenta.
func Heatmap(img []byte, grid []float64, gh, gw int, title string, hi float64) ([]byte, error) {
	if gh <= 0 || gw <= 0 || len(grid) != gh*gw {
		return nil, fmt.Errorf("compare: heatmap: %d values for a %dx%d grid", len(grid), gh, gw)
	}
	dec, err := imageproc.Decode(img, imageproc.DecodeOptions{})
	if err != nil {
		return nil, fmt.Errorf("compare: heatmap: %w", err)
	}
	src := image.NewRGBA(image.Rect(0, 0, dec.Width, dec.Height))
	for i := range dec.Width * dec.Height {
		copy(src.Pix[4*i:], dec.Pix[3*i:3*i+3])
		src.Pix[4*i+3] = 255
	}
	// Cells of 8 to 128 pixels, the picture at most 768 wide when the
	// grid allows.
	cell := max(8, min(768/gw, 128))
	w, h := gw*cell, gh*cell
	const barW, margin, top = 90, 10, 24
	// Wide enough for the title (7 pixels a character) on small grids.
	out := image.NewRGBA(image.Rect(0, 0, max(w+barW+2*margin, 7*len(title)+2*margin), h+top+margin+14))
	draw.Draw(out, out.Bounds(), image.White, image.Point{}, draw.Src)
	pic := image.Rect(margin, top, margin+w, top+h)
	xdraw.ApproxBiLinear.Scale(out, pic, src, src.Bounds(), xdraw.Src, nil)

	nan := false
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 0
		for _, v := range grid {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				hi = max(hi, v)
			}
		}
	}
	for gy := range gh {
		for gx := range gw {
			v := grid[gy*gw+gx]
			c := colormap(v, hi)
			if math.IsNaN(v) {
				c, nan = color.RGBA{255, 0, 255, 255}, true
			}
			r := image.Rect(margin+gx*cell, top+gy*cell, margin+(gx+1)*cell, top+(gy+1)*cell)
			draw.DrawMask(out, r, image.NewUniform(c), image.Point{}, image.NewUniform(color.Alpha{150}), image.Point{}, draw.Over)
		}
	}
	label(out, margin, 16, title)
	// The scale: a vertical gradient, largest value on top.
	bx := margin + w + 12
	for y := range h {
		c := colormap(hi*float64(h-1-y)/float64(max(h-1, 1)), hi)
		draw.Draw(out, image.Rect(bx, top+y, bx+16, top+y+1), image.NewUniform(c), image.Point{}, draw.Src)
	}
	for _, f := range []float64{1, 0.5, 0} {
		y := top + int(float64(h-1)*(1-f))
		label(out, bx+20, y+5, formatValue(hi*f))
	}
	label(out, bx, top+h+margin+10, "1 - cos")
	if nan {
		draw.Draw(out, image.Rect(margin, top+h+4, margin+10, top+h+14), image.NewUniform(color.RGBA{255, 0, 255, 255}), image.Point{}, draw.Src)
		label(out, margin+14, top+h+13, "NaN")
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func formatValue(v float64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%.2g", v)
}

func label(img draw.Image, x, y int, s string) {
	d := font.Drawer{Dst: img, Src: image.Black, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// colormap maps v in [0, hi] from dark blue through green to yellow and
// red; hi = 0 (identical sides) is all dark blue.
func colormap(v, hi float64) color.RGBA {
	t := 0.0
	if hi > 0 && !math.IsNaN(v) {
		t = min(max(v/hi, 0), 1)
	}
	stops := [][3]float64{{30, 30, 120}, {30, 150, 160}, {120, 200, 60}, {250, 220, 40}, {220, 40, 30}}
	// A product is converted before it is added to (float64(a*b) + c): that
	// keeps compilers that fuse multiply-adds (arm64's) from fusing it, so
	// every build computes the same bits (kernels.TestNoFusedMultiplyAdd).
	p := float64(t * float64(len(stops)-1))
	i := min(int(p), len(stops)-2)
	f := p - float64(i)
	mix := func(k int) uint8 { return uint8(stops[i][k] + float64(f*(stops[i+1][k]-stops[i][k]))) }
	return color.RGBA{mix(0), mix(1), mix(2), 255}
}
