package jpeg

import (
	"encoding/binary"

	"github.com/vembed/vembed/internal/tiffifd"
)

// Marker codes (second byte after 0xFF).
const (
	mSOF0 = 0xC0
	mSOF1 = 0xC1
	mSOF2 = 0xC2
	mDHT  = 0xC4
	mDAC  = 0xCC
	mRST0 = 0xD0
	mRST7 = 0xD7
	mSOI  = 0xD8
	mEOI  = 0xD9
	mSOS  = 0xDA
	mDQT  = 0xDB
	mDNL  = 0xDC
	mDRI  = 0xDD
	mAPP0 = 0xE0
	mAPP1 = 0xE1
	mAPPE = 0xEE
)

// component is one frame component with its sampling factors, derived
// sizes and decoded data.
type component struct {
	id, h, v, tq int
	// dw, dh: real (downsampled) sample width and height of the component.
	dw, dh int
	// bw, bh: blocks stored per row and column, padded to whole MCUs.
	bw, bh int
	// nbw, nbh: blocks actually coded in a non-interleaved scan.
	nbw, nbh int
	// q is the quantization table latched when the component first
	// appears in a scan (as libjpeg does), natural order, with libjpeg's
	// 16-bit multiplier type.
	q       [64]int32
	qraw    [64]uint16
	latched bool
	// coefs holds bw*bh blocks of 64 coefficients in natural order for
	// multi-scan (progressive or non-interleaved) files.
	coefs []int16
	// ring holds ringRows block rows of coefficients (bw blocks each) and
	// ringNZ each block's coded positions, while a single-scan frame is
	// decoded in parallel; see bandPipe.
	ring     []int16
	ringNZ   []uint64
	ringRows int
	// plane is the decoded sample plane, stride bw*8, height bh*8.
	plane []uint8
}

// scanComp is one component of a scan header.
type scanComp struct {
	ci       int // index into decoder.comps
	td, ta   int // DC and AC table numbers
	dcPred   int // DC predictor
	compInfo *component
}

// scanHeader is a parsed SOS segment.
type scanHeader struct {
	comps          []scanComp
	ss, se, ah, al int
}

type decoder struct {
	data []byte
	pos  int

	width, height int
	progressive   bool
	comps         []component
	hmax, vmax    int
	mcusX, mcusY  int

	qt    [4]*[64]uint16 // natural order
	dc    [4]*huffTable
	ac    [4]*huffTable
	ri    int // restart interval in MCUs
	first *scanHeader

	sawJFIF, sawAdobe bool
	adobeTransform    int
	orientation       int
	sawEXIF           bool

	// multiScan is set when coefficients are buffered across scans.
	multiScan bool
	// workers is how many goroutines may transform the image.
	workers int
	// img is the output; rows [0, converted) of it are final and have
	// been handed to onRows.
	img       *Image
	converted int
	onRows    RowsFunc
	nScans    int
	eobrun    int // end-of-band run left in a progressive AC scan
	// coefBits[c][k] is the Al of the last scan that coded zigzag
	// coefficient k (k < 10) of component c, -1 if none did; it decides
	// block smoothing.
	coefBits [4][10]int
}

// nextMarker finds the next marker from d.pos, skipping garbage and fill
// bytes as libjpeg's next_marker does. It leaves d.pos after the marker.
func (d *decoder) nextMarker() (int, error) {
	for {
		for d.pos < len(d.data) && d.data[d.pos] != 0xFF {
			d.pos++
		}
		for d.pos < len(d.data) && d.data[d.pos] == 0xFF {
			d.pos++
		}
		if d.pos >= len(d.data) {
			return 0, corruptf("unexpected end of data looking for a marker")
		}
		m := int(d.data[d.pos])
		d.pos++
		if m != 0 {
			return m, nil
		}
	}
}

// segment returns the payload of a marker segment with a 2-byte length at
// d.pos, and moves past it.
func (d *decoder) segment(name string) ([]byte, error) {
	if d.pos+2 > len(d.data) {
		return nil, corruptf("%s: truncated length", name)
	}
	n := int(binary.BigEndian.Uint16(d.data[d.pos:]))
	if n < 2 || d.pos+n > len(d.data) {
		return nil, corruptf("%s: length %d exceeds data", name, n)
	}
	seg := d.data[d.pos+2 : d.pos+n]
	d.pos += n
	return seg, nil
}

// readHeaders parses from SOI up to and including the first SOS header,
// leaving d.pos at the first byte of entropy-coded data.
func (d *decoder) readHeaders() error {
	if len(d.data) < 2 || d.data[0] != 0xFF || d.data[1] != mSOI {
		return corruptf("missing SOI marker")
	}
	d.pos = 2
	for {
		m, err := d.nextMarker()
		if err != nil {
			return err
		}
		sos, err := d.handleMarker(m)
		if err != nil {
			return err
		}
		if sos != nil {
			d.first = sos
			return nil
		}
	}
}

// handleMarker processes one marker between scans. It returns the scan
// header for SOS.
func (d *decoder) handleMarker(m int) (*scanHeader, error) {
	switch {
	case m == mSOF0 || m == mSOF1 || m == mSOF2:
		seg, err := d.segment("SOF")
		if err != nil {
			return nil, err
		}
		return nil, d.parseSOF(seg, m == mSOF2)
	case m == 0xC3 || (m >= 0xC5 && m <= 0xC7) || (m >= 0xC9 && m <= 0xCB) || (m >= 0xCD && m <= 0xCF):
		return nil, unsupportedf("SOF%d (lossless, hierarchical or arithmetic coding)", m-mSOF0)
	case m == mDHT:
		seg, err := d.segment("DHT")
		if err != nil {
			return nil, err
		}
		return nil, d.parseDHT(seg)
	case m == mDQT:
		seg, err := d.segment("DQT")
		if err != nil {
			return nil, err
		}
		return nil, d.parseDQT(seg)
	case m == mDRI:
		seg, err := d.segment("DRI")
		if err != nil {
			return nil, err
		}
		if len(seg) != 2 {
			return nil, corruptf("DRI: bad length %d", len(seg)+2)
		}
		d.ri = int(binary.BigEndian.Uint16(seg))
		return nil, nil
	case m == mSOS:
		if d.comps == nil {
			return nil, corruptf("SOS before SOF")
		}
		seg, err := d.segment("SOS")
		if err != nil {
			return nil, err
		}
		return d.parseSOS(seg)
	case m == mAPP0 || m == mAPP1 || m == mAPPE:
		seg, err := d.segment("APP")
		if err != nil {
			return nil, err
		}
		d.parseAPP(m, seg)
		return nil, nil
	case m == mSOI:
		return nil, corruptf("unexpected SOI")
	case m == mEOI:
		return nil, corruptf("EOI before the first scan")
	case m == mDNL:
		return nil, unsupportedf("DNL marker")
	case m >= mRST0 && m <= mRST7, m == 0x01:
		// Parameterless markers; libjpeg ignores stray ones.
		return nil, nil
	default:
		// APPn, COM, DAC and anything else with a length: skip.
		_, err := d.segment("marker")
		return nil, err
	}
}

func (d *decoder) parseSOF(seg []byte, progressive bool) error {
	if d.comps != nil {
		return corruptf("duplicate SOF")
	}
	if len(seg) < 6 {
		return corruptf("SOF: too short")
	}
	if seg[0] != 8 {
		return unsupportedf("%d-bit samples", seg[0])
	}
	d.height = int(binary.BigEndian.Uint16(seg[1:]))
	d.width = int(binary.BigEndian.Uint16(seg[3:]))
	nf := int(seg[5])
	if d.height == 0 {
		return unsupportedf("image height 0 (DNL)")
	}
	if d.width == 0 || nf == 0 {
		return corruptf("empty image")
	}
	if d.width > MaxDimension || d.height > MaxDimension {
		return unsupportedf("%dx%d exceeds %d", d.width, d.height, MaxDimension)
	}
	if len(seg) != 6+3*nf {
		return corruptf("SOF: bad length")
	}
	if nf != 1 && nf != 3 && nf != 4 {
		return unsupportedf("%d components", nf)
	}
	d.progressive = progressive
	comps := make([]component, nf)
	for i := range comps {
		c := &comps[i]
		b := seg[6+3*i:]
		c.id = int(b[0])
		c.h, c.v = int(b[1]>>4), int(b[1]&15)
		c.tq = int(b[2])
		if c.h < 1 || c.h > 4 || c.v < 1 || c.v > 4 {
			return corruptf("bad sampling factors %dx%d", c.h, c.v)
		}
		if c.tq > 3 {
			return corruptf("bad quantization table %d", c.tq)
		}
		d.hmax = max(d.hmax, c.h)
		d.vmax = max(d.vmax, c.v)
	}
	d.mcusX = ceilDiv(d.width, 8*d.hmax)
	d.mcusY = ceilDiv(d.height, 8*d.vmax)
	for i := range comps {
		c := &comps[i]
		c.dw = ceilDiv(d.width*c.h, d.hmax)
		c.dh = ceilDiv(d.height*c.v, d.vmax)
		c.nbw = ceilDiv(c.dw, 8)
		c.nbh = ceilDiv(c.dh, 8)
		c.bw = d.mcusX * c.h
		c.bh = d.mcusY * c.v
		if _, ok := upsampleMethod(c, d.hmax, d.vmax); !ok {
			return unsupportedf("sampling factors %dx%d with maximum %dx%d", c.h, c.v, d.hmax, d.vmax)
		}
	}
	d.comps = comps
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func (d *decoder) parseDQT(seg []byte) error {
	for len(seg) > 0 {
		pq, tq := int(seg[0]>>4), int(seg[0]&15)
		seg = seg[1:]
		if tq > 3 {
			return corruptf("DQT: table %d", tq)
		}
		n := 64 * (pq + 1)
		if pq > 1 || len(seg) < n {
			return corruptf("DQT: bad length or precision")
		}
		t := new([64]uint16)
		for k := 0; k < 64; k++ {
			var v uint16
			if pq == 0 {
				v = uint16(seg[k])
			} else {
				v = binary.BigEndian.Uint16(seg[2*k:])
			}
			t[unzig[k]] = v
		}
		d.qt[tq] = t
		seg = seg[n:]
	}
	return nil
}

func (d *decoder) parseDHT(seg []byte) error {
	for len(seg) > 0 {
		if len(seg) < 17 {
			return corruptf("DHT: truncated")
		}
		tc, th := int(seg[0]>>4), int(seg[0]&15)
		if tc > 1 || th > 3 {
			return corruptf("DHT: table class %d id %d", tc, th)
		}
		var counts [17]int
		total := 0
		for l := 1; l <= 16; l++ {
			counts[l] = int(seg[l])
			total += counts[l]
		}
		if total > 256 || len(seg) < 17+total {
			return corruptf("DHT: bad symbol count")
		}
		t, err := buildHuffTable(&counts, seg[17:17+total], tc == 0)
		if err != nil {
			return err
		}
		if tc == 0 {
			d.dc[th] = t
		} else {
			d.ac[th] = t
		}
		seg = seg[17+total:]
	}
	return nil
}

func (d *decoder) parseSOS(seg []byte) (*scanHeader, error) {
	if len(seg) < 1 {
		return nil, corruptf("SOS: too short")
	}
	ns := int(seg[0])
	if ns < 1 || ns > 4 || len(seg) != 4+2*ns {
		return nil, corruptf("SOS: bad length")
	}
	s := &scanHeader{comps: make([]scanComp, ns)}
	for i := 0; i < ns; i++ {
		id := int(seg[1+2*i])
		ci := -1
		for j := range d.comps {
			if d.comps[j].id == id {
				ci = j
				break
			}
		}
		if ci < 0 {
			return nil, corruptf("SOS: unknown component id %d", id)
		}
		for _, p := range s.comps[:i] {
			if p.ci == ci {
				return nil, corruptf("SOS: component %d repeated", id)
			}
		}
		tables := seg[2+2*i]
		s.comps[i] = scanComp{ci: ci, td: int(tables >> 4), ta: int(tables & 15), compInfo: &d.comps[ci]}
		if s.comps[i].td > 3 || s.comps[i].ta > 3 {
			return nil, corruptf("SOS: bad table number")
		}
	}
	b := seg[1+2*ns:]
	s.ss, s.se, s.ah, s.al = int(b[0]), int(b[1]), int(b[2]>>4), int(b[2]&15)
	if d.progressive {
		bad := false
		if s.ss == 0 {
			bad = s.se != 0
		} else {
			bad = s.ss > s.se || s.se > 63 || ns != 1
		}
		if s.ah != 0 && s.al != s.ah-1 {
			bad = true
		}
		if s.al > 13 {
			bad = true
		}
		if bad {
			return nil, corruptf("bad progression parameters Ss=%d Se=%d Ah=%d Al=%d", s.ss, s.se, s.ah, s.al)
		}
	}
	if ns > 1 {
		blocks := 0
		for _, sc := range s.comps {
			blocks += sc.compInfo.h * sc.compInfo.v
		}
		if blocks > 10 {
			return nil, unsupportedf("%d blocks per MCU (libjpeg allows 10)", blocks)
		}
	}
	return s, nil
}

// parseAPP records the JFIF and Adobe markers that decide the color space,
// and the EXIF orientation.
func (d *decoder) parseAPP(m int, seg []byte) {
	switch m {
	case mAPP0:
		if len(seg) >= 14 && string(seg[:5]) == "JFIF\x00" {
			d.sawJFIF = true
		}
	case mAPPE:
		if len(seg) >= 12 && string(seg[:5]) == "Adobe" {
			d.sawAdobe = true
			d.adobeTransform = int(seg[11])
		}
	case mAPP1:
		if !d.sawEXIF && len(seg) >= 6 && string(seg[:6]) == "Exif\x00\x00" {
			d.sawEXIF = true
			d.orientation = tiffifd.Orientation(seg[6:])
		}
	}
}
