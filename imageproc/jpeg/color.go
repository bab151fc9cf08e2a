package jpeg

// Upsampling methods, chosen per component as libjpeg-turbo 2.1's
// jinit_upsampler does with fancy upsampling on (Pillow's default).
const (
	upFull      = iota // component at full resolution
	upH2V1Fancy        // 2:1 horizontal, triangle filter
	upH2V1Box          // 2:1 horizontal, replication (width <= 2 samples)
	upH1V2Fancy        // 2:1 vertical, triangle filter
	upH2V2Fancy        // 2:1 both ways, triangle filter
	upH2V2Box          // 2:1 both ways, replication (width <= 2 samples)
	upInt              // any other integral ratio, replication
)

// upsampler produces full-resolution rows of one component.
type upsampler struct {
	c          *component
	method     int
	hexp, vexp int
	stride     int
	buf        []uint8
}

// upsampleMethod picks the method for a component; ok is false for
// non-integral ratios, which libjpeg rejects.
func upsampleMethod(c *component, hmax, vmax int) (method int, ok bool) {
	switch {
	case c.h == hmax && c.v == vmax:
		return upFull, true
	case c.h*2 == hmax && c.v == vmax:
		if c.dw > 2 {
			return upH2V1Fancy, true
		}
		return upH2V1Box, true
	case c.h == hmax && c.v*2 == vmax:
		return upH1V2Fancy, true
	case c.h*2 == hmax && c.v*2 == vmax:
		if c.dw > 2 {
			return upH2V2Fancy, true
		}
		return upH2V2Box, true
	case hmax%c.h == 0 && vmax%c.v == 0:
		return upInt, true
	}
	return 0, false
}

func newUpsampler(c *component, hmax, vmax, width int) *upsampler {
	m, _ := upsampleMethod(c, hmax, vmax)
	u := &upsampler{c: c, method: m, hexp: hmax / c.h, vexp: vmax / c.v, stride: c.bw * 8}
	if m != upFull {
		u.buf = make([]uint8, width+2*hmax)
	}
	return u
}

// planeRow returns row y of the component plane, clamped to the real
// sample rows: libjpeg duplicates the first row above the image and the
// last real row below it when an upsampler needs context rows.
func (u *upsampler) planeRow(y int) []uint8 {
	y = min(max(y, 0), u.c.dh-1)
	return u.c.plane[y*u.stride : y*u.stride+u.c.dw]
}

// row returns output row y of the component at full resolution (at least
// as many samples as the image is wide).
func (u *upsampler) row(y int) []uint8 {
	switch u.method {
	case upFull:
		return u.planeRow(y)
	case upH2V1Fancy:
		h2FancyRow(u.buf, u.planeRow(y))
	case upH2V1Box:
		h2BoxRow(u.buf, u.planeRow(y))
	case upH2V2Box:
		h2BoxRow(u.buf, u.planeRow(y/2))
	case upH1V2Fancy:
		near, far, bias := u.vertNeighbours(y)
		out := u.buf[:len(near)]
		for x := range out {
			out[x] = uint8((3*int(near[x]) + int(far[x]) + bias) >> 2)
		}
	case upH2V2Fancy:
		near, far, _ := u.vertNeighbours(y)
		h2v2FancyRow(u.buf, near, far)
	case upInt:
		in := u.planeRow(y / u.vexp)
		out := u.buf
		for i, v := range in {
			for j := 0; j < u.hexp; j++ {
				out[i*u.hexp+j] = v
			}
		}
	}
	return u.buf
}

// vertNeighbours gives, for output row y of a 2:1 vertically subsampled
// component, the nearer input row, the next nearer one (above for even
// rows, below for odd ones) and libjpeg's alternating rounding bias.
func (u *upsampler) vertNeighbours(y int) (near, far []uint8, bias int) {
	cy := y / 2
	near = u.planeRow(cy)
	if y&1 == 0 {
		return near, u.planeRow(cy - 1), 1
	}
	return near, u.planeRow(cy + 1), 2
}

// h2FancyRow doubles a row with the triangle filter: each output is 3/4 of
// the nearer and 1/4 of the further input, rounding alternately down and up.
// The end samples are copied. len(in) must be >= 3.
func h2FancyRow(out, in []uint8) {
	n := len(in)
	out = out[:2*n]
	out[0] = in[0]
	out[1] = uint8((3*int(in[0]) + int(in[1]) + 2) >> 2)
	for i := 1 + h2FancyVec(out, in); i < n-1; i++ {
		v := 3 * int(in[i])
		out[2*i] = uint8((v + int(in[i-1]) + 1) >> 2)
		out[2*i+1] = uint8((v + int(in[i+1]) + 2) >> 2)
	}
	out[2*n-2] = uint8((3*int(in[n-1]) + int(in[n-2]) + 1) >> 2)
	out[2*n-1] = in[n-1]
}

func h2BoxRow(out, in []uint8) {
	for i, v := range in {
		out[2*i] = v
		out[2*i+1] = v
	}
}

// h2v2FancyRow is the 2-D triangle filter: column sums 3*near+far, then
// 3/4-1/4 horizontally, with biases 8 and 7 alternating. len(near) >= 3.
func h2v2FancyRow(out, near, far []uint8) {
	n := len(near)
	out = out[:2*n]
	far = far[:n]
	col := func(i int) int { return 3*int(near[i]) + int(far[i]) }
	this, next := col(0), col(1)
	out[0] = uint8((this*4 + 8) >> 4)
	out[1] = uint8((this*3 + next + 7) >> 4)
	i := 1 + h2v2FancyVec(out, near, far)
	h2v2FancyInterior(out, near, far, i)
	this, last := col(n-1), col(n-2)
	out[2*n-2] = uint8((this*3 + last + 8) >> 4)
	out[2*n-1] = uint8((this*4 + 7) >> 4)
}

// h2v2FancyInterior computes the outputs of inputs i0..n-2 of
// h2v2FancyRow, those with a neighbour on each side.
func h2v2FancyInterior(out, near, far []uint8, i0 int) {
	n := len(near)
	col := func(i int) int { return 3*int(near[i]) + int(far[i]) }
	last, this := col(i0-1), col(i0)
	for i := i0; i < n-1; i++ {
		next := col(i + 1)
		out[2*i] = uint8((this*3 + last + 8) >> 4)
		out[2*i+1] = uint8((this*3 + next + 7) >> 4)
		last, this = this, next
	}
}

// Fixed-point YCbCr->RGB tables of libjpeg's jdcolor.c: 16 fractional
// bits, rounding folded into the tables.
var crR, cbB, crG, cbG [256]int32

func init() {
	fix := func(x float64) int64 { return int64(x*65536 + 0.5) }
	for i := range 256 {
		x := int64(i - 128)
		crR[i] = int32((fix(1.40200)*x + 1<<15) >> 16)
		cbB[i] = int32((fix(1.77200)*x + 1<<15) >> 16)
		crG[i] = int32(-fix(0.71414) * x)
		cbG[i] = int32(-fix(0.34414)*x + 1<<15)
	}
}

func clamp255(v int32) uint8 {
	if uint32(v) <= 255 {
		return uint8(v)
	}
	if v < 0 {
		return 0
	}
	return 255
}

// clampTab[(v+clampBias)&1023] is v clamped to 0..255 for v in
// [-clampBias, 1023-clampBias], which covers every sum formed in yccRow.
const clampBias = 384

var clampTab = func() (t [1024]uint8) {
	for i := range t {
		t[i] = clamp255(int32(i - clampBias))
	}
	return t
}()

// yccRow converts one row of YCbCr samples to interleaved RGB.
func yccRow(out, y, cb, cr []uint8) {
	n := len(out) / 3
	i := yccVec(out, y[:n], cb, cr)
	yccRowGo(out[3*i:3*n], y[i:n], cb[i:n], cr[i:n])
}

// yccRowGo is the portable conversion.
func yccRowGo(out, y, cb, cr []uint8) {
	n := len(out) / 3
	out = out[:3*n]
	y, cb, cr = y[:n], cb[:n], cr[:n]
	for i := range n {
		yy := int32(y[i]) + clampBias
		b, r := cb[i], cr[i]
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0] = clampTab[(yy+crR[r])&1023]
		o[1] = clampTab[(yy+(cbG[b]+crG[r])>>16)&1023]
		o[2] = clampTab[(yy+cbB[b])&1023]
	}
}

// muldiv255 is Pillow's rounded a*b/255.
func muldiv255(a, b int) int {
	t := a*b + 128
	return ((t >> 8) + t) >> 8
}

// cmykRow converts libjpeg's CMYK output (YCCK first turned into CMYK as
// libjpeg does) to RGB the way Pillow does: the samples are taken as
// Adobe-inverted ("CMYK;I"), then R = K' - C'*K'/255 with K' = 255 - k'.
func cmykRow(out []uint8, c0, c1, c2, k []uint8, ycck bool) {
	n := len(out) / 3
	for i := range n {
		c, m, yv := int32(c0[i]), int32(c1[i]), int32(c2[i])
		if ycck {
			yy := c
			b, r := c1[i], c2[i]
			c = int32(clamp255(255 - (yy + crR[r])))
			m = int32(clamp255(255 - (yy + (cbG[b]+crG[r])>>16)))
			yv = int32(clamp255(255 - (yy + cbB[b])))
		}
		nk := int(k[i]) // 255 - (255 - k)
		out[3*i] = uint8(nk - muldiv255(255-int(c), nk))
		out[3*i+1] = uint8(nk - muldiv255(255-int(m), nk))
		out[3*i+2] = uint8(nk - muldiv255(255-int(yv), nk))
	}
}

// toRGB upsamples the component planes and converts the rows not yet
// converted to RGB, over row ranges on the decoder's workers (each row
// depends only on the planes, which are complete by now).
func (d *decoder) toRGB() {
	lo, h := d.converted, d.height
	if lo == h {
		return
	}
	parallelRange(h-lo, d.workers, func(a, b int) { d.convertRows(d.img, lo+a, lo+b) })
	d.converted = h
	if d.onRows != nil {
		d.onRows(d.img.Pix, lo, h)
	}
}

// convertRows fills output rows [lo, hi) of img.
func (d *decoder) convertRows(img *Image, lo, hi int) {
	w := d.width
	ups := make([]*upsampler, len(d.comps))
	for i := range d.comps {
		ups[i] = newUpsampler(&d.comps[i], d.hmax, d.vmax, w)
	}
	cs := d.colorSpace()
	rows := make([][]uint8, len(d.comps))
	for y := lo; y < hi; y++ {
		for i, u := range ups {
			rows[i] = u.row(y)
		}
		out := img.Pix[y*w*3 : (y+1)*w*3]
		switch cs {
		case csGray:
			for x, v := range rows[0][:w] {
				out[3*x], out[3*x+1], out[3*x+2] = v, v, v
			}
		case csYCbCr:
			yccRow(out, rows[0], rows[1], rows[2])
		case csRGB:
			r, g, b := rows[0][:w], rows[1][:w], rows[2][:w]
			for x := range w {
				out[3*x], out[3*x+1], out[3*x+2] = r[x], g[x], b[x]
			}
		case csCMYK, csYCCK:
			cmykRow(out, rows[0], rows[1], rows[2], rows[3], cs == csYCCK)
		}
	}
}
