package jpeg

// Inter-block smoothing of incomplete progressive files.
//
// libjpeg (with its default do_block_smoothing) estimates the first nine
// AC coefficients of a progressive image from the DC values of the 5x5
// neighbouring blocks whenever one of them is not known to full precision
// after the last scan (a scan was omitted, or successive approximation
// stopped early). Complete files are not affected. To keep Pillow's pixels
// for the incomplete ones, the same integer estimates are reproduced here.

// smoothCoef describes one estimated coefficient: its zigzag index (for
// the precision bookkeeping), natural index, and the weights applied to
// the 5x5 neighbourhood of DC values (rows above-above .. below-below,
// columns left-left .. right-right) when AC data exists (near) and when
// only DC data exists (far).
type smoothCoef struct {
	zz, pos   int
	near, far [5][5]int
}

var smoothCoefs = [...]smoothCoef{
	{zz: 1, pos: 1,
		near: [5][5]int{2: {-7, 50, 0, -50, 7}},
		far: [5][5]int{{-1, -1, 0, 1, 1}, {-3, 13, 0, -13, 3}, {-3, 38, 0, -38, 3},
			{-3, 13, 0, -13, 3}, {-1, -1, 0, 1, 1}}},
	{zz: 2, pos: 8,
		near: [5][5]int{{2: -7}, {2: 50}, {}, {2: -50}, {2: 7}},
		far: [5][5]int{{-1, -3, -3, -3, -1}, {-1, 13, 38, 13, -1}, {},
			{1, -13, -38, -13, 1}, {1, 3, 3, 3, 1}}},
	{zz: 3, pos: 16,
		near: [5][5]int{{2: -1}, {2: 13}, {2: -24}, {2: 13}, {2: -1}},
		far: [5][5]int{{2: 1}, {0, 2, 7, 2, 0}, {0, -5, -14, -5, 0},
			{0, 2, 7, 2, 0}, {2: 1}}},
	{zz: 4, pos: 9,
		near: [5][5]int{{0, -1, 0, 1, 0}, {-1, 10, 0, -10, 1}, {},
			{1, -10, 0, 10, -1}, {0, 1, 0, -1, 0}},
		far: [5][5]int{{-1, 0, 0, 0, 1}, {0, 9, 0, -9, 0}, {},
			{0, -9, 0, 9, 0}, {1, 0, 0, 0, -1}}},
	{zz: 5, pos: 2,
		near: [5][5]int{2: {-1, 13, -24, 13, -1}},
		far: [5][5]int{{}, {0, 2, -5, 2, 0}, {1, 7, -14, 7, 1},
			{0, 2, -5, 2, 0}, {}}},
	// The next four are estimated only when no AC data exists at all.
	{zz: 6, pos: 3,
		far: [5][5]int{{}, {0, 1, 0, -1, 0}, {0, 2, 0, -2, 0}, {0, 1, 0, -1, 0}, {}}},
	{zz: 7, pos: 10,
		far: [5][5]int{{}, {0, 1, -3, 1, 0}, {}, {0, -1, 3, -1, 0}, {}}},
	{zz: 8, pos: 17,
		far: [5][5]int{{}, {0, 1, 0, -1, 0}, {0, -3, 0, 3, 0}, {0, 1, 0, -1, 0}, {}}},
	{zz: 9, pos: 24,
		far: [5][5]int{{}, {0, 1, 2, 1, 0}, {}, {0, -1, -2, -1, 0}, {}}},
}

// smoothDC re-estimates DC itself when only DC data exists.
var smoothDC = [5][5]int{
	{-2, -6, -8, -6, -2},
	{-6, 6, 42, 6, -6},
	{-8, 42, 152, 42, -8},
	{-6, 6, 42, 6, -6},
	{-2, -6, -8, -6, -2},
}

// smoothingNeeded follows libjpeg's smoothing_ok: every component has
// been seen with non-zero quantizers at the ten estimated positions, and
// some of coefficients 1..9 are not final (their last Al is non-zero, or
// -1 if never sent).
func (d *decoder) smoothingNeeded() bool {
	if !d.progressive {
		return false
	}
	useful := false
	for ci := range d.comps {
		c := &d.comps[ci]
		if !c.latched || c.qraw[0] == 0 {
			return false
		}
		for _, sc := range smoothCoefs {
			if c.qraw[sc.pos] == 0 {
				return false
			}
		}
		if d.coefBits[ci][0] < 0 {
			return false
		}
		for k := 1; k < 10; k++ {
			if d.coefBits[ci][k] != 0 {
				useful = true
			}
		}
	}
	return useful
}

// smoothComponent transforms every block of component ci with estimated
// low-frequency coefficients, reproducing decompress_smooth_data,
// including its handling of the picture's edges: rows and columns outside
// the picture repeat the nearest one, except for the few places where
// libjpeg's register scheme leaves a stale value, which are copied as is.
func (d *decoder) smoothComponent(ci int) {
	c := &d.comps[ci]
	bits := &d.coefBits[ci]
	changeDC := true
	for k := 1; k < 10; k++ {
		if bits[k] != -1 {
			changeDC = false
		}
	}
	q00 := int64(c.qraw[0])
	stride := c.bw * 8
	v := c.v
	last := d.mcusY - 1
	dcAt := func(by, bx int) int { return int(c.coefs[(by*c.bw+bx)*64]) }
	blockRows := func(i int) int {
		if i < last {
			return v
		}
		if n := c.nbh % v; n != 0 {
			return n
		}
		return v
	}
	var ws [64]int16
	var reg [5][5]int
	for by := 0; by < c.nbh; by++ {
		i, br := by/v, by%v
		prev := by
		if br > 0 || i > 0 {
			prev = by - 1
		}
		prevPrev := prev
		if br > 1 || i > 1 {
			prevPrev = by - 2
		}
		next := by
		if br < blockRows(i)-1 || i < last {
			next = by + 1
		}
		nextNext := next
		if br < blockRows(i)-2 || i+1 < last {
			nextNext = by + 2
		}
		rows := [5]int{prevPrev, prev, by, next, nextNext}
		for r, y := range rows {
			dc := dcAt(y, 0)
			reg[r] = [5]int{dc, dc, dc, dc, dc}
		}
		lastCol := c.nbw - 1
		for bx := 0; bx < c.nbw; bx++ {
			for r, y := range rows {
				if bx == 0 && bx < lastCol {
					reg[r][3] = dcAt(y, 1)
				}
				if bx+1 < lastCol {
					reg[r][4] = dcAt(y, bx+2)
				}
			}
			ws = *(*[64]int16)(c.coefs[(by*c.bw+bx)*64:])
			for _, sc := range smoothCoefs {
				al := bits[sc.zz]
				if al == 0 || ws[sc.pos] != 0 || (!changeDC && sc.zz > 5) {
					continue
				}
				w := &sc.near
				if changeDC {
					w = &sc.far
				}
				num := q00 * int64(weigh(w, &reg))
				ws[sc.pos] = int16(estimate(num, int64(c.qraw[sc.pos]), al))
			}
			if changeDC {
				num := q00 * int64(weigh(&smoothDC, &reg))
				ws[0] = int16(estimate(num, q00, 0))
			}
			idctAny(&ws, &c.q, c.plane[by*8*stride+bx*8:], stride)
			for r := range reg {
				reg[r][0], reg[r][1], reg[r][2], reg[r][3] = reg[r][1], reg[r][2], reg[r][3], reg[r][4]
			}
		}
	}
}

func weigh(w *[5][5]int, reg *[5][5]int) int {
	s := 0
	for r := range w {
		for k := range w[r] {
			s += w[r][k] * reg[r][k]
		}
	}
	return s
}

// estimate rounds num/(q*256) symmetrically and, when the coefficient's
// low Al bits are still unknown (Al > 0), keeps the estimate below the
// first value a later refinement could have sent.
func estimate(num, q int64, al int) int {
	neg := num < 0
	if neg {
		num = -num
	}
	pred := int((q<<7 + num) / (q << 8))
	if al > 0 && pred >= 1<<al {
		pred = 1<<al - 1
	}
	if neg {
		pred = -pred
	}
	return pred
}
