package imageproc

import (
	"compress/lzw"
	"encoding/binary"
	"fmt"
	"io"
)

// GIF is decoded here rather than with image/gif because Pillow's first
// frame differs from what image/gif returns: the transparent palette entry
// keeps its colour, the canvas is the logical screen (grown to fit the frame
// when the frame is larger) filled with the transparent index (or 0), and
// indices past a short palette read Pillow's gray ramp.

// gifFrame is the first image of a GIF and what surrounds it.
type gifFrame struct {
	width, height int    // canvas: logical screen grown to hold the frame
	left, top     int    // frame position on the canvas
	fw, fh        int    // frame size
	palette       []byte // RGB triplets: local table, else global
	transparent   int    // transparent index, or -1
	interlaced    bool
	litWidth      int    // LZW minimum code size
	data          []byte // from the first data sub-block to the end of the file
}

// parseGIF walks the blocks up to the first image descriptor.
func parseGIF(b []byte) (*gifFrame, error) {
	if len(b) < 13 {
		return nil, fmt.Errorf("%w: truncated GIF header", ErrCorrupt)
	}
	g := &gifFrame{width: int(binary.LittleEndian.Uint16(b[6:])), height: int(binary.LittleEndian.Uint16(b[8:])), transparent: -1}
	flags := b[10]
	pos := 13
	var global []byte
	if flags&0x80 != 0 {
		n := 3 << (flags&7 + 1)
		if pos+n > len(b) {
			return nil, fmt.Errorf("%w: truncated GIF colour table", ErrCorrupt)
		}
		global = b[pos : pos+n]
		pos += n
	}
	for {
		if pos >= len(b) {
			return nil, fmt.Errorf("%w: GIF has no image", ErrCorrupt)
		}
		switch b[pos] {
		case 0x21: // extension: label, then data sub-blocks
			if pos+1 >= len(b) {
				return nil, fmt.Errorf("%w: truncated GIF extension", ErrCorrupt)
			}
			label := b[pos+1]
			pos += 2
			first := true
			for {
				if pos >= len(b) {
					return nil, fmt.Errorf("%w: truncated GIF extension", ErrCorrupt)
				}
				n := int(b[pos])
				pos++
				if n == 0 {
					break
				}
				if pos+n > len(b) {
					return nil, fmt.Errorf("%w: truncated GIF extension", ErrCorrupt)
				}
				if first && label == 0xF9 && n >= 4 {
					// Graphic control; like Pillow, a later one without
					// transparency does not clear an earlier index.
					if b[pos]&1 != 0 {
						g.transparent = int(b[pos+3])
					}
				}
				first = false
				pos += n
			}
		case 0x2C: // image descriptor
			if pos+10 > len(b) {
				return nil, fmt.Errorf("%w: truncated GIF image descriptor", ErrCorrupt)
			}
			d := b[pos+1 : pos+10]
			g.left, g.top = int(binary.LittleEndian.Uint16(d[0:])), int(binary.LittleEndian.Uint16(d[2:]))
			g.fw, g.fh = int(binary.LittleEndian.Uint16(d[4:])), int(binary.LittleEndian.Uint16(d[6:]))
			g.width, g.height = max(g.width, g.left+g.fw), max(g.height, g.top+g.fh)
			g.interlaced = d[8]&0x40 != 0
			pos += 10
			g.palette = global
			if d[8]&0x80 != 0 {
				n := 3 << (d[8]&7 + 1)
				if pos+n > len(b) {
					return nil, fmt.Errorf("%w: truncated GIF colour table", ErrCorrupt)
				}
				g.palette = b[pos : pos+n]
				pos += n
			}
			if pos >= len(b) {
				return nil, fmt.Errorf("%w: truncated GIF image data", ErrCorrupt)
			}
			g.litWidth = int(b[pos])
			g.data = b[pos+1:]
			return g, nil
		case 0x3B: // trailer before any image
			return nil, fmt.Errorf("%w: GIF has no image", ErrCorrupt)
		default:
			// Pillow skips stray bytes between blocks.
			pos++
		}
	}
}

func gifConfig(b []byte) (w, h int, err error) {
	g, err := parseGIF(b)
	if err != nil {
		return 0, 0, err
	}
	return g.width, g.height, nil
}

// subBlocks reads the payload of a sequence of GIF data sub-blocks.
type subBlocks struct {
	b   []byte
	cur []byte
}

func (s *subBlocks) Read(p []byte) (int, error) {
	for len(s.cur) == 0 {
		if len(s.b) == 0 {
			return 0, io.ErrUnexpectedEOF
		}
		n := int(s.b[0])
		if n == 0 {
			return 0, io.EOF
		}
		if 1+n > len(s.b) {
			return 0, io.ErrUnexpectedEOF
		}
		s.cur, s.b = s.b[1:1+n], s.b[1+n:]
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// decodeGIF decodes the first frame as Pillow's GIF plugin and
// convert("RGB") do.
func decodeGIF(b []byte) (*Image, error) {
	g, err := parseGIF(b)
	if err != nil {
		return nil, err
	}
	if g.litWidth < 2 || g.litWidth > 8 {
		return nil, fmt.Errorf("%w: GIF LZW code size %d", ErrUnsupported, g.litWidth)
	}
	idx := make([]byte, g.fw*g.fh)
	r := lzw.NewReader(&subBlocks{b: g.data}, lzw.LSB, g.litWidth)
	_, err = io.ReadFull(r, idx)
	r.Close()
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: truncated GIF image data", ErrCorrupt)
		}
		return nil, fmt.Errorf("%w: GIF image data: %v", ErrCorrupt, err)
	}
	fill := byte(0)
	if g.transparent >= 0 {
		fill = byte(g.transparent)
	}
	canvas := make([]byte, g.width*g.height)
	if fill != 0 {
		for i := range canvas {
			canvas[i] = fill
		}
	}
	for i := 0; i < g.fh; i++ {
		y := i
		if g.interlaced {
			y = gifInterlacedRow(i, g.fh)
		}
		copy(canvas[(g.top+y)*g.width+g.left:], idx[i*g.fw:(i+1)*g.fw])
	}
	var pal [256][3]uint8
	for i := range pal {
		pal[i] = [3]uint8{uint8(i), uint8(i), uint8(i)}
	}
	for i := 0; i+2 < len(g.palette) && i/3 < 256; i += 3 {
		pal[i/3] = [3]uint8{g.palette[i], g.palette[i+1], g.palette[i+2]}
	}
	out := NewImage(g.width, g.height)
	for i, v := range canvas {
		c := pal[v]
		out.Pix[3*i], out.Pix[3*i+1], out.Pix[3*i+2] = c[0], c[1], c[2]
	}
	return out, nil
}

// gifInterlacedRow maps the i-th stored row of an interlaced frame of height
// h to its row on screen (passes start at 0, 4, 2, 1 with steps 8, 8, 4, 2).
func gifInterlacedRow(i, h int) int {
	for _, p := range [4][2]int{{0, 8}, {4, 8}, {2, 4}, {1, 2}} {
		n := (h - p[0] + p[1] - 1) / p[1]
		if n < 0 {
			n = 0
		}
		if i < n {
			return p[0] + i*p[1]
		}
		i -= n
	}
	return 0
}
