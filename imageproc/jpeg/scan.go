package jpeg

// decodeScans decodes every scan into the component planes. A frame whose
// first scan holds all components and is not progressive is decoded
// straight to samples; otherwise coefficients are buffered across scans
// and transformed after EOI, as libjpeg does.
func (d *decoder) decodeScans() error {
	s := d.first
	d.multiScan = d.progressive || len(s.comps) < len(d.comps)
	for i := range d.comps {
		c := &d.comps[i]
		c.plane = make([]uint8, c.bw*8*c.bh*8)
		if d.multiScan {
			c.coefs = make([]int16, c.bw*c.bh*64)
		}
	}
	for ci := range d.coefBits {
		for k := range d.coefBits[ci] {
			d.coefBits[ci][k] = -1
		}
	}
	for {
		d.nScans++
		if d.nScans > maxScans {
			return corruptf("more than %d scans", maxScans)
		}
		if err := d.latchTables(s); err != nil {
			return err
		}
		if err := d.runScan(s); err != nil {
			return err
		}
		if d.progressive {
			for _, sc := range s.comps {
				for k := s.ss; k <= min(s.se, 9); k++ {
					d.coefBits[sc.ci][k] = s.al
				}
			}
		}
		if !d.multiScan {
			// libjpeg reads ahead until it meets the marker that ends the
			// scan; under Pillow, running out of data before that is a
			// "truncated" error even when every MCU was complete. What
			// follows that marker (normally EOI) is not looked at.
			if _, err := d.nextMarker(); err != nil {
				return corruptf("truncated file: no marker after the scan data")
			}
			return nil
		}
		next, err := d.nextScan()
		if err != nil {
			return err
		}
		if next == nil {
			break
		}
		s = next
	}
	smooth := d.smoothingNeeded()
	for i := range d.comps {
		c := &d.comps[i]
		if smooth {
			d.smoothComponent(i)
			continue
		}
		stride := c.bw * 8
		parallelRange(c.nbh, d.workers, func(lo, hi int) {
			for by := lo; by < hi; by++ {
				for bx := 0; bx < c.nbw; bx++ {
					blk := (*[64]int16)(c.coefs[(by*c.bw+bx)*64:])
					idctAny(blk, &c.q, c.plane[by*8*stride+bx*8:], stride)
				}
			}
		})
	}
	return nil
}

// runScan decodes one scan; a single-scan frame large enough is
// transformed by workers while its entropy decoding goes on.
func (d *decoder) runScan(s *scanHeader) error {
	if d.multiScan {
		return d.decodeScan(s, nil)
	}
	p := d.startPipe(s)
	if p == nil {
		return d.decodeScan(s, nil)
	}
	defer p.stop()
	return d.decodeScan(s, p)
}

// nextScan reads the markers after a scan up to the next SOS (returned) or
// EOI (nil). Running out of data first is truncation: libjpeg waits for
// more input there and Pillow reports the file as truncated.
func (d *decoder) nextScan() (*scanHeader, error) {
	for {
		m, err := d.nextMarker()
		if err != nil {
			return nil, corruptf("truncated file: no EOI after scan %d", d.nScans)
		}
		if m == mEOI {
			return nil, nil
		}
		if m >= mRST0 && m <= mRST7 {
			// A restart marker outside a scan: libjpeg ignores it.
			continue
		}
		s, err := d.handleMarker(m)
		if err != nil {
			return nil, err
		}
		if s != nil {
			return s, nil
		}
	}
}

// latchTables fixes each component's quantization table at its first scan
// and checks that the Huffman tables the scan needs exist.
func (d *decoder) latchTables(s *scanHeader) error {
	for _, sc := range s.comps {
		c := sc.compInfo
		if !c.latched {
			t := d.qt[c.tq]
			if t == nil {
				return corruptf("quantization table %d not defined", c.tq)
			}
			c.qraw = *t
			for i, v := range t {
				// libjpeg-turbo's SIMD builds keep multipliers as int16.
				c.q[i] = int32(int16(v))
			}
			c.latched = true
		}
		needDC := !d.progressive || (s.ss == 0 && s.ah == 0)
		needAC := !d.progressive || s.ss > 0
		if !d.progressive {
			if d.dc[sc.td] == nil && sc.td < 2 {
				d.dc[sc.td] = stdTable(0, sc.td)
			}
			if d.ac[sc.ta] == nil && sc.ta < 2 {
				d.ac[sc.ta] = stdTable(1, sc.ta)
			}
		}
		if needDC && d.dc[sc.td] == nil {
			return corruptf("DC Huffman table %d not defined", sc.td)
		}
		if needAC && d.ac[sc.ta] == nil {
			return corruptf("AC Huffman table %d not defined", sc.ta)
		}
	}
	return nil
}

// decodeScan walks the scan's MCUs in order, handling restart intervals.
// With a pipe, the blocks go to its ring and each finished band to its
// workers.
func (d *decoder) decodeScan(s *scanHeader, p *bandPipe) error {
	r := &bitReader{data: d.data, pos: d.pos}
	d.eobrun = 0
	for i := range s.comps {
		s.comps[i].dcPred = 0
	}
	nx, ny := d.mcusX, d.mcusY
	if len(s.comps) == 1 {
		c := s.comps[0].compInfo
		nx, ny = c.nbw, c.nbh
	}
	var blk [64]int16
	nextRST, left := 0, d.ri
	for my := 0; my < ny; my++ {
		if p != nil {
			p.beginRow(my)
		}
		for mx := 0; mx < nx; mx++ {
			if d.ri > 0 {
				if left == 0 {
					if err := d.restart(r, s, nextRST); err != nil {
						return err
					}
					nextRST = (nextRST + 1) & 7
					left = d.ri
				}
				left--
			}
			for i := range s.comps {
				sc := &s.comps[i]
				c := sc.compInfo
				h, v := c.h, c.v
				if len(s.comps) == 1 {
					h, v = 1, 1
				}
				for y := 0; y < v; y++ {
					for x := 0; x < h; x++ {
						bx, by := mx*h+x, my*v+y
						if err := d.decodeBlock(r, s, sc, bx, by, &blk); err != nil {
							return err
						}
					}
				}
			}
			if r.overrun() {
				return corruptf("scan data truncated or corrupt (ran out of bits at MCU %d,%d)", mx, my)
			}
		}
		if p != nil {
			p.endRow(my, ny)
		}
	}
	d.pos = r.pos
	return nil
}

// decodeBlock decodes one block of a scan into the coefficient buffer, or
// straight into the component plane for single-scan frames.
func (d *decoder) decodeBlock(r *bitReader, s *scanHeader, sc *scanComp, bx, by int, scratch *[64]int16) error {
	c := sc.compInfo
	if c.ring != nil {
		// The worker that transformed the slot's previous band left the
		// block zeroed, off this goroutine's critical path.
		i := (by%c.ringRows)*c.bw + bx
		blk := (*[64]int16)(c.ring[i*64:])
		nz, err := decodeSequential(r, blk, d.dc[sc.td], d.ac[sc.ta], &sc.dcPred)
		c.ringNZ[i] = nz
		return err
	}
	if !d.multiScan {
		*scratch = [64]int16{}
		nz, err := decodeSequential(r, scratch, d.dc[sc.td], d.ac[sc.ta], &sc.dcPred)
		if err != nil {
			return err
		}
		stride := c.bw * 8
		idctMasked(scratch, nz, &c.q, c.plane[by*8*stride+bx*8:], stride)
		return nil
	}
	blk := (*[64]int16)(c.coefs[(by*c.bw+bx)*64:])
	switch {
	case !d.progressive:
		*blk = [64]int16{}
		_, err := decodeSequential(r, blk, d.dc[sc.td], d.ac[sc.ta], &sc.dcPred)
		return err
	case s.ss == 0 && s.ah == 0:
		return decodeDCFirst(r, blk, d.dc[sc.td], &sc.dcPred, s.al)
	case s.ss == 0:
		if r.n < 1 {
			r.fill()
		}
		if r.bits(1) != 0 {
			blk[0] |= int16(1 << s.al)
		}
		return nil
	case s.ah == 0:
		return d.decodeACFirst(r, blk, d.ac[sc.ta], s)
	default:
		return d.decodeACRefine(r, blk, d.ac[sc.ta], s)
	}
}

// restart discards buffered bits and consumes the expected RSTn marker,
// then resets the predictors, as at the start of a scan.
func (d *decoder) restart(r *bitReader, s *scanHeader, n int) error {
	d.pos = r.pos
	r.reset()
	m, err := d.nextMarker()
	if err != nil {
		return corruptf("truncated data before restart marker")
	}
	if m != mRST0+n {
		return corruptf("found marker 0x%02X where RST%d was expected", m, n)
	}
	r.pos = d.pos
	for i := range s.comps {
		s.comps[i].dcPred = 0
	}
	d.eobrun = 0
	return nil
}

// decodeSequential decodes a baseline/extended block (DC difference and
// AC run-lengths) into blk, which must be zero. It returns the set of
// natural positions coded (bit i for position i; AC values are never 0),
// which lets the caller choose a cheaper exact IDCT.
func decodeSequential(r *bitReader, blk *[64]int16, dct, act *huffTable, pred *int) (uint64, error) {
	if r.n < 32 {
		r.fill()
	}
	s, err := r.decode(dct)
	if err != nil {
		return 0, err
	}
	diff := extend(r.bits(s), s)
	// libjpeg keeps the predictor in a C int and stores it as a 16-bit
	// coefficient; both wrap on absurd input.
	*pred = int(int32(*pred + diff))
	blk[0] = int16(*pred)
	nz := uint64(1)
	for k := 1; k < 64; k++ {
		if r.n < 32 {
			r.fill()
		}
		if e := act.fastAC[r.acc>>(64-lutBits)]; e != 0 {
			k += int(e>>8) & 15
			n := uint(e & 0xFF)
			r.acc <<= n
			r.n -= int(n)
			z := unzig[k]
			blk[z] = int16(e >> 16)
			nz |= 1 << z
			continue
		}
		run, size, err := r.runSize(act)
		if err != nil {
			return 0, err
		}
		if size != 0 {
			k += run
			z := unzig[k]
			blk[z] = int16(extend(r.bits(size), size))
			nz |= 1 << z
		} else {
			if run != 15 {
				break
			}
			k += 15
		}
	}
	return nz, nil
}

// decodeDCFirst is the first DC scan of a progressive frame: a Huffman
// coded difference, scaled by 2^Al.
func decodeDCFirst(r *bitReader, blk *[64]int16, dct *huffTable, pred *int, al int) error {
	if r.n < 32 {
		r.fill()
	}
	s, err := r.decode(dct)
	if err != nil {
		return err
	}
	*pred = int(int32(*pred + extend(r.bits(s), s)))
	blk[0] = int16(int32(*pred) << al)
	return nil
}

// decodeACFirst is the first scan of a spectral band: run-length coded
// coefficients scaled by 2^Al, with end-of-band runs across blocks.
func (d *decoder) decodeACFirst(r *bitReader, blk *[64]int16, act *huffTable, s *scanHeader) error {
	if d.eobrun > 0 {
		d.eobrun--
		return nil
	}
	for k := s.ss; k <= s.se; k++ {
		run, size, err := r.runSize(act)
		if err != nil {
			return err
		}
		if size != 0 {
			k += run
			blk[unzig[k]] = int16(int32(extend(r.bits(size), size)) << s.al)
			continue
		}
		if run == 15 {
			k += 15
			continue
		}
		d.eobrun = 1 << run
		if run > 0 {
			d.eobrun += r.bits(run)
		}
		d.eobrun--
		break
	}
	return nil
}

// decodeACRefine is a successive-approximation refinement scan of a band:
// one correction bit for every already non-zero coefficient passed over,
// and new coefficients of magnitude 2^Al.
func (d *decoder) decodeACRefine(r *bitReader, blk *[64]int16, act *huffTable, s *scanHeader) error {
	p1 := int16(1 << s.al)
	m1 := int16(-1 << s.al)
	k := s.ss
	if d.eobrun == 0 {
		for ; k <= s.se; k++ {
			run, size, err := r.runSize(act)
			if err != nil {
				return err
			}
			var val int16
			if size != 0 {
				// Sizes other than 1 are invalid; libjpeg warns and
				// carries on reading one sign bit, and so do we.
				if r.bits(1) != 0 {
					val = p1
				} else {
					val = m1
				}
			} else if run != 15 {
				d.eobrun = 1 << run
				if run > 0 {
					d.eobrun += r.bits(run)
				}
				break
			}
			for k <= s.se {
				z := unzig[k]
				if blk[z] != 0 {
					refineBit(r, &blk[z], p1, m1)
				} else {
					run--
					if run < 0 {
						break
					}
				}
				k++
			}
			if val != 0 {
				blk[unzig[k]] = val
			}
		}
	}
	if d.eobrun > 0 {
		for ; k <= s.se; k++ {
			z := unzig[k]
			if blk[z] != 0 {
				refineBit(r, &blk[z], p1, m1)
			}
		}
		d.eobrun--
	}
	return nil
}

// refineBit applies one correction bit to a non-zero coefficient.
func refineBit(r *bitReader, c *int16, p1, m1 int16) {
	if r.n < 1 {
		r.fill()
	}
	if r.bits(1) != 0 && *c&p1 == 0 {
		if *c >= 0 {
			*c += p1
		} else {
			*c += m1
		}
	}
}
