// Package tiffifd reads single tag values from the first image file
// directory (IFD0) of a TIFF structure: a TIFF file itself, or the EXIF
// block that JPEG (APP1), PNG (eXIf) and WebP (EXIF) files embed. Both the
// image decoder and the JPEG decoder need the EXIF Orientation tag, and
// TIFF decoding needs a few more, so the walk lives here once.
package tiffifd

import "encoding/binary"

// tagOrientation is the EXIF/TIFF Orientation tag.
const tagOrientation = 0x0112

// Short returns the first value of the SHORT tag in IFD0 of the TIFF
// structure b. ok is false when the structure is malformed, truncated, not
// classic TIFF (magic 42), or lacks the tag as a SHORT with a value.
func Short(b []byte, tag uint16) (v int, ok bool) {
	if len(b) < 8 {
		return 0, false
	}
	var bo binary.ByteOrder
	switch string(b[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 0, false
	}
	if bo.Uint16(b[2:]) != 42 {
		return 0, false
	}
	off := int64(bo.Uint32(b[4:]))
	if off < 8 || off+2 > int64(len(b)) {
		return 0, false
	}
	n := int(bo.Uint16(b[off:]))
	for i, p := 0, off+2; i < n && p+12 <= int64(len(b)); i, p = i+1, p+12 {
		e := b[p : p+12]
		if bo.Uint16(e) != tag {
			continue
		}
		if bo.Uint16(e[2:]) != 3 || bo.Uint32(e[4:]) < 1 { // SHORT, at least one value
			return 0, false
		}
		return int(bo.Uint16(e[8:])), true
	}
	return 0, false
}

// Orientation returns the Orientation (1..8) in IFD0 of b, or 0 when it is
// absent, malformed or out of range: orientation is a hint, and a bad one is
// ignored rather than failing the image.
func Orientation(b []byte) int {
	v, ok := Short(b, tagOrientation)
	if !ok || v < 1 || v > 8 {
		return 0
	}
	return v
}
