// Package pngbomb builds decompression bombs for tests: valid PNGs of a
// few hundred kilobytes that declare a huge image at 16 bits per channel,
// so that decoding them costs width·height·8 bytes. They are written row
// by row through zlib, so making one costs no more memory than a row.
package pngbomb

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
)

// Make returns a w×h PNG, 16-bit RGBA, every pixel zero.
func Make(w, h int) []byte {
	var idat bytes.Buffer
	z, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := make([]byte, 1+8*w) // filter byte 0, then the row's zeros
	for range h {
		z.Write(row)
	}
	z.Close()
	var hdr [13]byte
	binary.BigEndian.PutUint32(hdr[0:], uint32(w))
	binary.BigEndian.PutUint32(hdr[4:], uint32(h))
	hdr[8], hdr[9] = 16, 6 // bit depth, colour type RGBA
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	writeChunk(&out, "IHDR", hdr[:])
	writeChunk(&out, "IDAT", idat.Bytes())
	writeChunk(&out, "IEND", nil)
	return out.Bytes()
}

// Tag returns a copy of png with a tEXt chunk holding s after its header
// chunk: the same image in different bytes, so that content caches and
// request deduplication cannot share the decoding of several copies.
func Tag(png []byte, s string) []byte {
	const ihdrEnd = 8 + 4 + 4 + 13 + 4 // signature, then IHDR's length, type, data, CRC
	if len(png) < ihdrEnd {
		return append([]byte(nil), png...)
	}
	var out bytes.Buffer
	out.Write(png[:ihdrEnd])
	writeChunk(&out, "tEXt", append([]byte("Comment\x00"), s...))
	out.Write(png[ihdrEnd:])
	return out.Bytes()
}

func writeChunk(out *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	out.Write(n[:])
	out.WriteString(typ)
	out.Write(data)
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	out.Write(n[:])
}
