package jpeg

// lutBits is the number of bits resolved by one table lookup; longer codes
// fall back to the canonical per-length search.
const lutBits = 9

// huffTable is a canonical Huffman decoding table.
type huffTable struct {
	// lut maps the next lutBits bits to length<<8 | symbol, or 0 when the
	// code is longer than lutBits.
	lut [1 << lutBits]uint16
	// maxCode[l] is the largest code of length l (-1 if none); valOff[l]
	// turns a code of length l into an index into vals.
	maxCode [18]int32
	valOff  [18]int32
	vals    [256]uint8
	// fastAC resolves, for AC tables, a short code together with its
	// value bits when both fit in lutBits: value<<16 | run<<8 | bits
	// consumed, or 0 when the slow path is needed.
	fastAC [1 << lutBits]int32
}

// buildHuffTable checks the code counts as libjpeg does (at most 256
// symbols, every code fits its length, DC symbols at most 15) and builds
// the lookup structures.
func buildHuffTable(counts *[17]int, symbols []byte, isDC bool) (*huffTable, error) {
	t := &huffTable{}
	copy(t.vals[:], symbols)
	if isDC {
		for _, s := range symbols {
			if s > 15 {
				return nil, corruptf("DHT: DC symbol %d > 15", s)
			}
		}
	}
	code, p := int32(0), int32(0)
	for l := 1; l <= 16; l++ {
		n := int32(counts[l])
		if n == 0 {
			t.maxCode[l] = -1
		} else {
			t.valOff[l] = p - code
			if code+n > 1<<l {
				return nil, corruptf("DHT: code lengths overflow at length %d", l)
			}
			if l <= lutBits {
				for i := int32(0); i < n; i++ {
					c := code + i
					shift := lutBits - l
					entry := uint16(l<<8) | uint16(symbols[p+i])
					for j := c << shift; j < (c+1)<<shift; j++ {
						t.lut[j] = entry
					}
				}
			}
			p += n
			code += n
			t.maxCode[l] = code - 1
		}
		code <<= 1
	}
	t.maxCode[17] = 1 << 30
	if !isDC {
		for i, e := range t.lut {
			l := int(e >> 8)
			run, size := int(e&0xFF)>>4, int(e&15)
			if e == 0 || size == 0 || l+size > lutBits {
				continue
			}
			v := (i >> (lutBits - l - size)) & (1<<size - 1)
			t.fastAC[i] = int32(extend(v, size))<<16 | int32(run)<<8 | int32(l+size)
		}
	}
	return t, nil
}

// bitReader reads entropy-coded bits, removing stuffed zero bytes. When it
// meets a marker or the end of the data it supplies zero bits, as libjpeg
// does, but counts them: a decoder that consumes any of them has read past
// the scan's data, which is reported as truncation.
type bitReader struct {
	data []byte
	pos  int
	acc  uint64 // left-aligned bit buffer
	n    int    // valid bits in acc (including padding)
	pad  int    // how many of the low bits in acc are padding zeros
	// atMarker is set once a marker (or the end of data) stops filling.
	atMarker bool
}

// fill tops the buffer up to at least 57 bits.
func (r *bitReader) fill() {
	for r.n <= 56 {
		if r.atMarker {
			r.pad += 64 - r.n
			r.n = 64
			return
		}
		if r.pos >= len(r.data) {
			r.atMarker = true
			continue
		}
		b := r.data[r.pos]
		if b == 0xFF {
			p := r.pos + 1
			for p < len(r.data) && r.data[p] == 0xFF {
				p++
			}
			if p >= len(r.data) || r.data[p] != 0 {
				// A marker: leave pos on it for the caller.
				r.atMarker = true
				continue
			}
			r.pos = p + 1
		} else {
			r.pos++
		}
		r.acc |= uint64(b) << (56 - r.n)
		r.n += 8
	}
}

// overrun reports whether padding bits have been consumed.
func (r *bitReader) overrun() bool { return r.n < r.pad }

// reset drops buffered bits (at a restart marker or scan end).
func (r *bitReader) reset() {
	r.acc, r.n, r.pad, r.atMarker = 0, 0, 0, false
}

// decode reads one Huffman symbol. The caller guarantees r.n >= 16.
func (r *bitReader) decode(t *huffTable) (int, error) {
	e := t.lut[r.acc>>(64-lutBits)]
	if e != 0 {
		l := int(e >> 8)
		r.acc <<= uint(l)
		r.n -= l
		return int(e & 0xFF), nil
	}
	code := int32(r.acc >> (64 - lutBits))
	l := lutBits
	for {
		l++
		code = code<<1 | int32(r.acc>>(64-l)&1)
		if code <= t.maxCode[l] {
			break
		}
		if l == 16 {
			return 0, corruptf("bad Huffman code")
		}
	}
	r.acc <<= uint(l)
	r.n -= l
	return int(t.vals[(code+t.valOff[l])&0xFF]), nil
}

// runSize reads an AC symbol: a run of zero coefficients and the size in
// bits of the next coefficient's value, which follows it.
func (r *bitReader) runSize(t *huffTable) (run, size int, err error) {
	if r.n < 32 {
		r.fill()
	}
	rs, err := r.decode(t)
	return rs >> 4, rs & 15, err
}

// bits reads s (0..16) raw bits. The caller guarantees r.n >= s.
func (r *bitReader) bits(s int) int {
	if s == 0 {
		return 0
	}
	v := int(r.acc >> (64 - uint(s)))
	r.acc <<= uint(s)
	r.n -= s
	return v
}

// extend turns s raw bits into a signed value (JPEG F.12).
func extend(v, s int) int {
	if s == 0 {
		return 0
	}
	if v < 1<<(s-1) {
		return v - (1 << s) + 1
	}
	return v
}
